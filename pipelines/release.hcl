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
  input "targets" {
    type        = list(string)
    default     = []
    description = "release only these entries of release.targets (--target: one runner's part of a split release); empty: every entry"
  }
  input "runner" {
    type        = string
    default     = ""
    description = "the CI runner that builds and smoke-tests the targets, recorded in each release.json (--runner); empty: none recorded"
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
    only         = input.targets
    runner       = input.runner
  }

  # One release per entry of release.targets (builtin:target: payload,
  # qualification, publication), side by side; each target's stages wait
  # only for its own.
  module "target" {
    source       = "builtin:target"
    for_each     = stage.inputs.targets
    inputs       = each.value
    pi_footprint = input.pi_footprint
    evict        = !input.no_cache
  }

  # SHA256SUMS over every archive of the version, beside them in releases/.
  stage "release_set" "set" {
    releases = stage.inputs.releases
    id       = stage.inputs.id
    version  = stage.inputs.version
    archives = { for t, m in module.target : m.published.archive => m.archive.sha256 }
  }

  verdicts = [module.target.module.qualify.stage.signatures, module.target.module.qualify.stage.tests, module.target.module.qualify.stage.audit, module.target.module.qualify.stage.package_audits]
}
