# The real Pi coding agent (@earendil-works/pi-coding-agent), pinned. It
# needs Node >= 22.19 (its package.json engines): build, release and launch
# it with such a node first on PATH (the tests use PISHIP_NODE22, from
# `make node22-bin`). Pi ships its own esbuild bundle (its bin is
# dist/bundle/cli.js, which loads sibling files at run time); piship's
# bundler keeps that bundle as upstream built it (see go doc
# ./stages/bundle, "Entries already bundled upstream"). The 0.73 series,
# which runs on Node 20, is ../pi-0.73.
# runtime/package-lock.json was generated
# with `npm install --package-lock-only --ignore-scripts
# --omit-lockfile-registry-resolved=false` (lockfile v3, every package
# resolved on https://registry.npmjs.org/).
distribution "pi" {
  name    = "Pi"
  version = "1.6.0"
  command = "pi"

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
}
