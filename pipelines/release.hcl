pipeline "release" {
  description = "Qualify a distribution and ship it as a reproducible, verifiable release"

  input "distribution" {
    type        = string
    description = "distribution directory (holding distribution.hcl and piship.lock)"
  }
  input "out" {
    type        = string
    default     = ""
    description = "output directory (default: DIST/dist); releases go to <out>/releases/"
  }
  input "channel" {
    type    = string
    default = "stable"
  }
  input "pi_footprint" {
    type        = bool
    default     = true
    description = "bundle the bundle-safe closures of the vendored Pi packages and share their identical dependencies (false keeps every vendored file as installed: the footprint's baseline; the report still records each decision)"
  }
  input "version" {
    type        = string
    default     = ""
    description = "the release version (--version); empty: distribution.hcl's version, else the git tag at HEAD (v1.2.3 -> 1.2.3)"
  }
  input "snapshot" {
    type        = bool
    default     = false
    description = "a snapshot release (--snapshot): the version <next>-snapshot.g<sha> of the commit at HEAD; piship repo add refuses it"
  }
  input "no_cache" {
    type        = bool
    default     = false
    description = "run npm ci and the bundler again instead of using the runtime cache (PISHIP_RELEASE_NO_CACHE=1)"
  }

  stage "release_inputs" "inputs" {
    distribution = input.distribution
    out          = input.out
    channel      = input.channel
    no_cache     = input.no_cache
    version      = input.version
    snapshot     = input.snapshot
  }

  # Qualification (builtin:qualify): the runtime entry the audits read, the
  # audits, signatures, SBOM, notices and smoke tests, in parallel with the
  # payload's assembly where they can be.
  module "qualify" {
    source        = "builtin:qualify"
    inputs        = stage.inputs
    vendored      = module.payload.pi_trees
    payload_ready = module.payload.inventory
  }

  # The payload, assembled into release_dir/payload by the build's stages
  # (builtin:payload). The runtime is installed after the runtime entry;
  # when bundling, the bundle waits for the signature verdict: bytes are
  # rewritten only from a runtime whose provenance was checked.
  module "payload" {
    source        = "builtin:payload"
    inputs        = stage.inputs
    dest          = stage.inputs.payload
    cache_home    = stage.inputs.cache_home
    no_footprint  = !input.pi_footprint
    runtime_after = module.qualify.runtime_entry
    bundle_after  = module.qualify.signatures
  }

  # Publication (builtin:publish): release.json, checksums, the archive,
  # the release directory published, and the staging directory cleaned up
  # (always).
  module "publish" {
    source        = "builtin:publish"
    inputs        = stage.inputs
    qualification = module.qualify.report
    evict         = !input.no_cache
  }

  verdicts = [module.qualify.stage.signatures, module.qualify.stage.tests, module.qualify.stage.audit, module.qualify.stage.package_audits]
}
