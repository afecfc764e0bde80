# Release budgets, checked by piship budgets check: a counted figure more than
# 10% over fails (BUDGET_EXCEEDED), one more than 10% under is reported. The
# timings are reported against, never gated. piship budgets check --record
# rewrites this file from the release.

target "linux-x64" {
  payload_files   = 15
  installed_files = 22
  archive_bytes   = 10366

  timing {
    release_ms    = 1417
    runtime_cache = "miss"
    stage "npm_install module.qualify.stage.runtime_entry" {
      ms    = 618
      cache = "miss"
    }
    stage "release_publish module.publish.stage.publish" {
      ms    = 326
      cache = "none"
    }
    stage "smoke module.qualify.stage.tests" {
      ms    = 268
      cache = "none"
    }
  }
}
