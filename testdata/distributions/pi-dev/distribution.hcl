# A developer's Pi: the Pi 1.6 flagship (../pi) with five real Pi packages
# from npm vendored into the payload (package blocks). Each package has its
# own npm project under packages/<name>/ (package.json depending on it at
# one version; package-lock.json made with `npm install --package-lock-only
# --ignore-scripts --legacy-peer-deps --omit-lockfile-registry-resolved=false`:
# a package's peers, Pi and its pi-ai, pi-tui, pi-agent-core and typebox,
# are what Pi supplies to the extensions it loads, so they are not in its
# lock). piship lock installs each one and pins its package.json and the
# extension entry files its "pi.extensions" names; every launch checks them
# and hands the packages to Pi with -e. Needs Node >= 22.19 (see ../pi).
# pi-web-access's project overrides typebox to 1.1.38 (inside its ^1.1.38),
# the version pi-subagents pins: the two copies are then the same package,
# and the build shares them in pi-packages/.shared (the footprint report).
distribution "pi-dev" {
  name    = "Pi (developer)"
  version = "1.6.0"
  command = "pi-dev"

  runtime {
    dir   = "runtime"
    entry = "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js"
    # The lock marks these with hasInstallScript. piship never runs install
    # scripts (npm ci --ignore-scripts); listing a package acknowledges that
    # it ships without its script having run:
    #   @google/genai  preinstall: echo 'preinstall: no-op'
    #   protobufjs     postinstall: a version check of its CLI companion
    allow_install_scripts = ["@google/genai", "protobufjs"]
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
    expect = "^1\\.6\\.0$"
  }

  smoke "help" {
    args   = ["--help"]
    expect = "Usage"
  }

  package "pi-aliases" {}
  package "pi-prompt-template-model" {}
  package "pi-web-access" {}
  package "pi-subagents" {}
  package "pi-mcp-adapter" {}
}
