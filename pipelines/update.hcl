pipeline "update" {
  description = "Update an installed distribution from its TUF repository"

  input "id" {
    type = string
  }
  input "from" {
    type        = string
    default     = ""
    description = "TUF repository: a directory or an http(s) URL (default: the lock's updates.source)"
  }
  input "channel" {
    type    = string
    default = ""
  }
  input "timeout" {
    type        = string
    default     = ""
    description = "the longest wait for a connection, the response headers or the next byte, e.g. 30s (default: connect 10s, headers and idle 30s)"
  }
  input "max_time" {
    type        = string
    default     = ""
    description = "the overall budget of each file fetched, e.g. 5m (default: 2m for a channel file, 10m for an archive)"
  }
  input "check" {
    type        = bool
    default     = false
    description = "report what an update would do and change nothing"
  }

  stage "update_check" "check" {
    id       = input.id
    from     = input.from
    channel  = input.channel
    check    = input.check
    timeout  = input.timeout
    max_time = input.max_time
  }

  stage "install" "install" {
    when    = stage.check.update && !input.check
    source  = stage.check.archive
    sha256  = stage.check.sha256
    id      = input.id
    version = stage.check.version
    channel = stage.check.channel
    update  = true

    lock_sha256 = stage.check.lock_sha256
    trust_stage = stage.check.trust_stage

    # A delta downloaded instead of the archive; the archive is fetched
    # from the repository when the delta cannot be used.
    delta      = stage.check.delta
    delta_from = stage.check.delta_from
    repository = stage.check.source
  }
}
