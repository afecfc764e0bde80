# Qualification of a release: the installed runtime audited, its
# signatures and the vendored packages' audits checked, the SBOM and the
# third-party notices written, and the payload's smoke tests run. Used by
# the release pipeline.

input "inputs" {
  description = "the outputs of the release_inputs stage"
}
input "vendored" {
  default     = null
  description = "the vendored Pi packages' installed trees (module.payload.pi_trees)"
}
input "payload_ready" {
  default     = null
  description = "what the smoke tests wait for: the assembled payload (module.payload.inventory)"
}

# The installed runtime that the audits, the SBOM and the notices read: a
# runtime cache entry, read-only, with every package.json and license file.
stage "npm_install" "runtime_entry" {
  runtime_dir = input.inputs.runtime_dir
  key         = input.inputs.install_key
  target      = input.inputs.target
  cache_home  = input.inputs.cache_home
}

# Qualification, in parallel.
stage "audit" "audit" {
  distribution = input.inputs.dir
  release_dir  = input.inputs.release_dir
}

stage "package_audits" "package_audits" {
  distribution = input.inputs.dir
}

stage "signatures" "signatures" {
  distribution = input.inputs.dir
}

# The SBOM and the notices cover the vendored Pi packages too, at their
# paths in the payload (pi_packages' installed trees). The SBOM names
# where the assembled payload holds each package: its directory, the
# bundle file that carries it, or no file.
stage "sbom" "sbom" {
  distribution = input.inputs.dir
  tree         = stage.runtime_entry.tree
  vendored     = input.vendored
  payload      = input.inputs.payload
  release_dir  = input.inputs.release_dir
  created      = input.inputs.created
  version      = input.inputs.version
}

stage "notices" "notices" {
  distribution = input.inputs.dir
  tree         = stage.runtime_entry.tree
  vendored     = input.vendored
  release_dir  = input.inputs.release_dir
  version      = input.inputs.version
}

stage "smoke" "tests" {
  payload      = input.inputs.payload
  distribution = input.inputs.dir
  version      = input.inputs.version
  target       = input.inputs.target
  depends_on   = [input.payload_ready]
}

output "runtime_entry" {
  description = "the installed runtime the payload is made from (npm_install's outputs)"
  value       = stage.runtime_entry
}
output "signatures" {
  description = "the signature verdict's report: the bundler waits for it"
  value       = stage.signatures.report
}
output "report" {
  description = "what release.json records of the qualification"
  value = {
    tests          = stage.tests.results
    signatures     = stage.signatures.report
    package_audits = stage.package_audits.report
    sbom_sha256    = stage.sbom.sha256
    sbom_packages  = stage.sbom.packages
    audit          = stage.audit.verdict
    notices        = stage.notices.packages
  }
}
