pipeline "update" {
  description = "Update an installed distribution from its signed channel"

  input "id" {
    type = string
  }
  input "from" {
    type        = string
    default     = ""
    description = "channel source: a directory or an http(s) URL (default: the lock's updates.source)"
  }
  input "channel" {
    type    = string
    default = ""
  }
  input "check" {
    type        = bool
    default     = false
    description = "report what an update would do and change nothing"
  }

  stage "update_check" "check" {
    id      = input.id
    from    = input.from
    channel = input.channel
  }

  stage "download" "download" {
    when    = stage.check.update && !input.check
    id      = input.id
    source  = stage.check.source
    archive = stage.check.archive
    sha256  = stage.check.sha256
    bytes   = stage.check.bytes
  }

  stage "install" "install" {
    when     = stage.check.update && !input.check
    source   = stage.download.path
    sha256   = stage.check.sha256
    id       = input.id
    version  = stage.check.version
    channel  = stage.check.channel
    sequence = stage.check.sequence
    update   = true
  }
}
