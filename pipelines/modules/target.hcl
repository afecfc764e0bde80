# One target's release: its payload assembled (builtin:payload), qualified
# (builtin:qualify) and published (builtin:publish). The release pipeline
# calls it once per entry of release.targets (for_each over release_inputs'
# targets), so each target's stages wait only for that target's.

input "inputs" {
  description = "one target's outputs of release_inputs (stage.inputs.targets[TARGET])"
}
input "pi_footprint" {
  type        = bool
  default     = true
  description = "bundle the bundle-safe closures of the vendored Pi packages (false keeps every vendored file as installed)"
}
input "evict" {
  type        = bool
  default     = true
  description = "evict old runtime cache entries once published (false for a release without cache)"
}

# Qualification: the runtime entry the audits read, the audits,
# signatures, SBOM, notices and smoke tests, in parallel with the
# payload's assembly where they can be.
module "qualify" {
  source        = "builtin:qualify"
  inputs        = input.inputs
  vendored      = module.payload.pi_trees
  payload_ready = module.payload.inventory
}

# The payload, assembled into release_dir/payload. The runtime is
# installed after the runtime entry; when bundling, the bundle waits for
# the signature verdict: bytes are rewritten only from a runtime whose
# provenance was checked.
module "payload" {
  source        = "builtin:payload"
  inputs        = input.inputs
  dest          = input.inputs.payload
  cache_home    = input.inputs.cache_home
  no_footprint  = !input.pi_footprint
  runtime_after = module.qualify.runtime_entry
  bundle_after  = module.qualify.signatures
}

# Publication: release.json, checksums, the archive, the release
# directory published, and the staging directory cleaned up (always).
module "publish" {
  source        = "builtin:publish"
  inputs        = input.inputs
  qualification = module.qualify.report
  evict         = input.evict
}

output "archive" {
  description = "the archive: path, sha256, bytes, files"
  value       = module.publish.archive
}
output "published" {
  description = "the published release: path, archive, tools"
  value       = module.publish.published
}
