pipeline "install" {
  description = "Install a release archive, release directory or payload directory and activate it"

  input "source" {
    type        = string
    description = "archive (<id>-<version>-<target>.tar.zst), release directory or payload directory"
  }
  input "sha256" {
    type        = string
    default     = ""
    description = "expected archive digest"
  }

  input "expect_key" {
    type        = string
    default     = ""
    description = "sha256:<hex> fingerprint of a key the release must trust for updates"
  }

  stage "install" "install" {
    source     = input.source
    sha256     = input.sha256
    expect_key = input.expect_key
  }
}
