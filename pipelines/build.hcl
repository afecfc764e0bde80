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
  }

  # The runtime part: skipped entirely when the stamp says the payload (or
  # its runtime part) can be reused, or when a verified bundle entry exists.
  stage "npm_install" "runtime" {
    when        = stage.inputs.reuse == "none" && !stage.inputs.bundle_cached
    runtime_dir = stage.inputs.runtime_dir
    key         = stage.inputs.install_key
    dest        = stage.inputs.staging
  }

  stage "prune" "prune" {
    when       = stage.inputs.reuse == "none" && !stage.inputs.bundle_cached
    dir        = stage.inputs.staging
    lock       = "${stage.inputs.runtime_dir}/package-lock.json"
    platform   = stage.inputs.platform
    arch       = stage.inputs.arch
    depends_on = [stage.runtime]
  }

  stage "strip" "strip" {
    when       = stage.inputs.reuse == "none" && !stage.inputs.bundle_cached && stage.inputs.strip
    dir        = stage.inputs.staging
    depends_on = [stage.prune]
  }

  stage "bundle" "bundle" {
    when       = stage.inputs.reuse == "none" && stage.inputs.bundle
    dir        = stage.inputs.staging
    entry      = stage.inputs.entry
    key        = stage.inputs.bundle_key
    cached     = stage.inputs.bundle_cached
    platform   = stage.inputs.platform
    arch       = stage.inputs.arch
    depends_on = [stage.strip]
  }

  # Vendored Pi packages (package blocks), each from its own lock, beside
  # the runtime: the bundler never reads them.
  # The Pi-only stages apply to a distribution that has what they place.
  stage "pi_packages" "pi_packages" {
    when         = stage.inputs.reuse == "none" && stage.inputs.pi_packages > 0
    distribution = stage.inputs.dir
    dest         = stage.inputs.staging
    strip        = stage.inputs.strip
    no_footprint = !input.pi_footprint
    depends_on   = [stage.bundle]
  }

  stage "resources" "resources" {
    when         = stage.inputs.reuse != "all"
    distribution = stage.inputs.dir
    dest         = stage.inputs.staging
    previous     = stage.inputs.reuse == "resources" ? stage.inputs.final : ""
    depends_on   = [stage.bundle, stage.pi_packages]
  }

  # After resources: a reused payload is linked in without tools/.
  stage "search_tools" "search_tools" {
    when         = stage.inputs.reuse != "all" && stage.inputs.search_tools > 0
    distribution = stage.inputs.dir
    dest         = stage.inputs.staging
    platform     = stage.inputs.platform
    arch         = stage.inputs.arch
    depends_on   = [stage.resources]
  }

  stage "inventory" "inventory" {
    when            = stage.inputs.reuse != "all"
    dir             = stage.inputs.staging
    distribution    = stage.inputs.dir
    platform        = stage.inputs.platform
    arch            = stage.inputs.arch
    known_entry     = stage.inputs.bundle ? stage.bundle.entry : stage.runtime.entry
    known_inventory = stage.inputs.reuse == "resources" ? "${stage.inputs.final}/metadata/inventory.json" : ""
    depends_on      = [stage.search_tools]
  }

  stage "publish" "publish" {
    when             = stage.inputs.reuse != "all"
    staging          = stage.inputs.staging
    key              = stage.inputs.key
    runtime_key      = stage.inputs.runtime_key
    inventory_sha256 = stage.inventory.sha256
    files            = stage.inventory.files
    bytes            = stage.inventory.bytes
  }

  stage "staging_cleanup" "cleanup" {
    always        = true
    staging       = stage.inputs.staging
    keep_runtimes = 2 + stage.inputs.runtime_entries
    depends_on    = [stage.publish]
  }

  verdicts = [stage.inputs, stage.runtime, stage.prune, stage.strip, stage.bundle, stage.pi_packages, stage.resources, stage.inventory, stage.publish]
}
