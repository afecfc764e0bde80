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
  }

  # The installed runtime that the audits, the SBOM and the notices read: a
  # runtime cache entry, read-only, with every package.json and license file.
  stage "npm_install" "runtime_entry" {
    runtime_dir = stage.inputs.runtime_dir
    key         = stage.inputs.install_key
    cache_home  = stage.inputs.cache_home
  }

  # Qualification, in parallel.
  stage "audit" "audit" {
    distribution = stage.inputs.dir
    release_dir  = stage.inputs.release_dir
  }

  stage "package_audits" "package_audits" {
    distribution = stage.inputs.dir
  }

  stage "signatures" "signatures" {
    distribution = stage.inputs.dir
  }

  # The SBOM and the notices cover the vendored Pi packages too, at their
  # paths in the payload (pi_packages' installed trees). The SBOM names
  # where the assembled payload holds each package: its directory, the
  # bundle file that carries it, or no file.
  stage "sbom" "sbom" {
    distribution = stage.inputs.dir
    tree         = stage.runtime_entry.tree
    vendored     = stage.pi_packages.trees
    payload      = stage.inputs.payload
    release_dir  = stage.inputs.release_dir
    created      = stage.inputs.created
  }

  stage "notices" "notices" {
    distribution = stage.inputs.dir
    tree         = stage.runtime_entry.tree
    vendored     = stage.pi_packages.trees
    release_dir  = stage.inputs.release_dir
  }

  # The payload, assembled by the build stages into release_dir/payload.
  stage "npm_install" "runtime" {
    when        = !stage.inputs.bundle_cached
    runtime_dir = stage.inputs.runtime_dir
    key         = stage.inputs.install_key
    dest        = stage.inputs.payload
    cache_home  = stage.inputs.cache_home
    depends_on  = [stage.runtime_entry]
  }

  stage "prune" "prune" {
    when       = !stage.inputs.bundle_cached
    dir        = stage.inputs.payload
    lock       = "${stage.inputs.runtime_dir}/package-lock.json"
    platform   = stage.inputs.platform
    arch       = stage.inputs.arch
    depends_on = [stage.runtime]
  }

  stage "strip" "strip" {
    when       = !stage.inputs.bundle_cached && stage.inputs.strip
    dir        = stage.inputs.payload
    depends_on = [stage.prune]
  }

  # When bundling, the bundle waits for the signature verdict: bytes are
  # rewritten only from a runtime whose provenance was checked.
  stage "bundle" "bundle" {
    when       = stage.inputs.bundle
    dir        = stage.inputs.payload
    entry      = stage.inputs.entry
    key        = stage.inputs.bundle_key
    cached     = stage.inputs.bundle_cached
    platform   = stage.inputs.platform
    arch       = stage.inputs.arch
    cache_home = stage.inputs.cache_home
    depends_on = [stage.strip, stage.signatures]
  }

  # The Pi-only stages apply to a distribution that has what they place.
  stage "pi_packages" "pi_packages" {
    when         = stage.inputs.pi_packages > 0
    distribution = stage.inputs.dir
    dest         = stage.inputs.payload
    cache_home   = stage.inputs.cache_home
    no_footprint = !input.pi_footprint
    strip        = stage.inputs.strip
    depends_on   = [stage.bundle]
  }

  stage "resources" "resources" {
    distribution = stage.inputs.dir
    dest         = stage.inputs.payload
    depends_on   = [stage.bundle, stage.pi_packages]
  }

  stage "search_tools" "search_tools" {
    when         = stage.inputs.search_tools > 0
    distribution = stage.inputs.dir
    dest         = stage.inputs.payload
    platform     = stage.inputs.platform
    arch         = stage.inputs.arch
    depends_on   = [stage.resources]
  }

  stage "inventory" "inventory" {
    dir          = stage.inputs.payload
    distribution = stage.inputs.dir
    platform     = stage.inputs.platform
    arch         = stage.inputs.arch
    known_entry  = stage.inputs.bundle ? stage.bundle.entry : stage.runtime.entry
    cache_home   = stage.inputs.cache_home
    depends_on   = [stage.search_tools]
  }

  stage "smoke" "tests" {
    payload      = stage.inputs.payload
    distribution = stage.inputs.dir
    depends_on   = [stage.inventory]
  }

  stage "release_metadata" "metadata" {
    release_dir     = stage.inputs.release_dir
    distribution    = stage.inputs.dir
    target          = stage.inputs.target
    channel         = stage.inputs.channel
    created         = stage.inputs.created
    lock_sha256     = stage.inputs.lock_sha256
    runtime_package = stage.inputs.runtime_package
    runtime_version = stage.inputs.runtime_version
    tests           = stage.tests.results
    signatures      = stage.signatures.report
    package_audits  = stage.package_audits.report
    sbom_sha256     = stage.sbom.sha256
    sbom_packages   = stage.sbom.packages
    depends_on      = [stage.audit, stage.notices]
  }

  stage "checksums" "checksums" {
    release_dir = stage.inputs.release_dir
    depends_on  = [stage.metadata]
  }

  stage "archive" "archive" {
    release_dir = stage.inputs.release_dir
    epoch       = stage.inputs.epoch
    depends_on  = [stage.checksums]
  }

  stage "release_publish" "publish" {
    staging    = stage.inputs.staging
    name       = stage.inputs.name
    releases   = stage.inputs.releases
    ship_tools = true
    target     = stage.inputs.target
    depends_on = [stage.archive]
  }

  stage "staging_cleanup" "cleanup" {
    always        = true
    staging       = stage.inputs.staging
    evict         = !input.no_cache
    keep_runtimes = 2 + stage.inputs.runtime_entries
    depends_on    = [stage.publish]
  }

  verdicts = [stage.signatures, stage.tests, stage.audit, stage.package_audits]
}
