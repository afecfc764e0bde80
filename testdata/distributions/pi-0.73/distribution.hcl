# The real Pi coding agent of the 0.73 series (@mariozechner/pi-coding-agent,
# Node 20), pinned; the current Pi is ../pi.
# runtime/package-lock.json was generated
# with `npm install --package-lock-only --ignore-scripts
# --omit-lockfile-registry-resolved=false` (lockfile v3, every package
# resolved on https://registry.npmjs.org/).
distribution "pi" {
  name    = "Pi"
  version = "0.73.1"
  command = "pi"

  runtime {
    dir   = "runtime"
    entry = "node_modules/@mariozechner/pi-coding-agent/dist/cli.js"
    # The lock marks these with hasInstallScript. piship never runs install
    # scripts (npm ci --ignore-scripts); listing a package acknowledges that
    # it ships without its script having run:
    #   @google/genai  preinstall: echo 'preinstall: no-op'
    #   koffi          install: cnoke --prebuild (the package ships its
    #                  prebuilt addons)
    #   protobufjs     postinstall: a version check of its CLI companion
    allow_install_scripts = ["@google/genai", "koffi", "protobufjs"]
  }

  release {
    bundle  = true
    strip   = true
    targets = ["linux-x64"]
    sources = ["npm"]
  }

  # The registry this project's machines reach is a mirror without the bulk
  # advisory endpoint (405) and without signing keys (404): both verdicts
  # are "unavailable", recorded as such in release.json.
  audit {
    sources           = ["npm"]
    fail_on           = "high"
    allow_unavailable = true
  }

  signatures {
    allow_unavailable = true
  }

  smoke "version" {
    args   = ["--version"]
    expect = "^0\\.73\\.1$"
  }

  smoke "help" {
    args   = ["--help"]
    expect = "Usage"
  }
}
