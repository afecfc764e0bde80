pipeline "demo" {
  description = "Hash a Go source tree, vet it (cached), and report, with a cleanup stage that always runs"

  input "source" {
    type        = string
    default     = "."
    description = "directory of a Go module to inspect"
  }

  locals {
    go_files = ["**/*.go", "go.mod", "go.sum"]
  }

  stage "digest" "sources" {
    dir   = input.source
    files = local.go_files
  }

  stage "exec" "toolchain" {
    command = ["go", "version"]
  }

  stage "exec" "vet" {
    command = ["go", "vet", "./..."]
    dir     = input.source
    inputs  = local.go_files
    cache   = true
    timeout = "10m"
  }

  stage "exec" "count" {
    command = ["sh", "-c", "find . -name '*.go' -not -path './testdata/*' | wc -l"]
    dir     = input.source
  }

  stage "exec" "report" {
    command    = ["sh", "-c", format("echo '%s Go files, %d files hashed (sources %s), %s, vet clean'", stage.count.stdout, length(stage.sources.files), substr(stage.sources.sha256, 0, 12), stage.toolchain.stdout)]
    echo       = true
    depends_on = [stage.vet]
  }

  stage "exec" "cleanup" {
    command    = ["sh", "-c", "echo demo finished"]
    always     = true
    depends_on = [stage.report]
  }

  verdicts = [stage.vet, stage.report]
}
