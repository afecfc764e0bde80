pipeline "build" {
  description = "Assemble a distribution payload from its locked npm runtime, stripped and bundled, served by the runtime and bundle caches"

  input "distribution" {
    type        = string
    description = "distribution directory (holding distribution.hcl and piship.lock)"
  }
  input "out" {
    type        = string
    default     = ""
    description = "output directory (default: DIST/dist)"
  }
  input "rebuild" {
    type        = bool
    default     = false
    description = "ignore the build stamp"
  }
  input "version" {
    type        = string
    default     = ""
    description = "the version the build reports (--version); empty: distribution.hcl's version, else the git tag at HEAD"
  }
  input "snapshot" {
    type        = bool
    default     = false
    description = "report the snapshot version <next>-snapshot.g<sha> of the commit at HEAD (--snapshot)"
  }
  input "pi_footprint" {
    type        = bool
    default     = true
    description = "bundle the bundle-safe closures of the vendored Pi packages, share their identical dependencies and pretranspile (false keeps every vendored file as installed: the footprint's baseline)"
  }

  stage "dist_inputs" "inputs" {
    distribution = input.distribution
    out          = input.out
    rebuild      = input.rebuild
    no_footprint = !input.pi_footprint
    version      = input.version
    snapshot     = input.snapshot
  }

  # The payload, assembled in the staging directory (builtin:payload, as
  # the release assembles it): skipped in part or whole when the build
  # stamp says the previous payload (final) can be reused.
  module "payload" {
    source       = "builtin:payload"
    inputs       = stage.inputs
    dest         = stage.inputs.staging
    no_footprint = !input.pi_footprint
    reuse        = stage.inputs.reuse
    final        = stage.inputs.final
  }

  stage "publish" "publish" {
    when             = stage.inputs.reuse != "all"
    staging          = stage.inputs.staging
    key              = stage.inputs.key
    runtime_key      = stage.inputs.runtime_key
    inventory_sha256 = module.payload.inventory.sha256
    files            = module.payload.inventory.files
    bytes            = module.payload.inventory.bytes
  }

  stage "staging_cleanup" "cleanup" {
    always        = true
    staging       = stage.inputs.staging
    keep_runtimes = 2 + stage.inputs.runtime_entries
    depends_on    = [stage.publish]
  }

  verdicts = [
    stage.inputs, module.payload.stage.runtime, module.payload.stage.prune, module.payload.stage.strip, module.payload.stage.bundle,
    module.payload.stage.pi_packages, module.payload.stage.resources, module.payload.stage.inventory, stage.publish,
  ]
}
