# Publication of a release: release.json, the checksums, the reproducible
# archive, the release notes beside them (from the distribution's git
# history; outside the archive and checksums), the release directory
# published under <out>/releases, and the staging directory cleaned up.
# Used by the release pipeline.

input "inputs" {
  description = "the outputs of the release_inputs stage"
}
input "qualification" {
  description = "the qualification's report (module.qualify.report)"
}
input "after" {
  default     = null
  description = "stages release.json waits for besides the qualification (a signing stage, say)"
}
input "evict" {
  type        = bool
  default     = true
  description = "evict old runtime cache entries once published (false for a release without cache)"
}

stage "release_metadata" "metadata" {
  release_dir     = input.inputs.release_dir
  distribution    = input.inputs.dir
  target          = input.inputs.target
  channel         = input.inputs.channel
  created         = input.inputs.created
  lock_sha256     = input.inputs.lock_sha256
  version         = input.inputs.version
  runtime_package = input.inputs.runtime_package
  runtime_version = input.inputs.runtime_version
  tests           = input.qualification.tests
  signatures      = input.qualification.signatures
  package_audits  = input.qualification.package_audits
  sbom_sha256     = input.qualification.sbom_sha256
  sbom_packages   = input.qualification.sbom_packages
  runner          = input.inputs.runner
  depends_on      = [input.after]
}

stage "checksums" "checksums" {
  release_dir = input.inputs.release_dir
  depends_on  = [stage.metadata]
}

stage "archive" "archive" {
  release_dir = input.inputs.release_dir
  epoch       = input.inputs.epoch
  depends_on  = [stage.checksums]
}

# notes.md is written once the archive is, so it is never in it.
stage "release_notes" "notes" {
  release_dir  = input.inputs.release_dir
  distribution = input.inputs.dir
  id           = input.inputs.id
  version      = input.inputs.version
  depends_on   = [stage.archive]
}

stage "release_publish" "publish" {
  staging      = input.inputs.staging
  name         = input.inputs.name
  releases     = input.inputs.releases
  ship_tools   = true
  target       = input.inputs.target
  distribution = input.inputs.dir
  depends_on   = [stage.archive, stage.notes]
}

# The staging directory goes and the release's lock is let go, whatever
# happened before: always.
stage "staging_cleanup" "cleanup" {
  always        = true
  staging       = input.inputs.staging
  evict         = input.evict
  keep_runtimes = 2 + input.inputs.runtime_entries
  depends_on    = [stage.publish]
}

output "archive" {
  description = "the archive: path, sha256, bytes, files"
  value       = stage.archive
}
output "notes" {
  description = "the release notes: path (empty when none), previous, commits"
  value       = stage.notes
}
output "published" {
  description = "the published release: path, archive, tools"
  value       = stage.publish
}
