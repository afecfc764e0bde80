# The footprint example: the Pi 1.6 flagship (../pi, the same runtime lock,
# so a test run installs Pi once for both) with three small Pi packages
# built from packages-src/ (committed npm tarballs under vendor/, made by
# packages-src/pack.sh: no registry needed for them). Each shows one
# footprint decision (stages/footprint):
#   pi-fp-bundled  a bundle-safe closure: bundled into .bundle behind a
#                  forwarding module, its entry kept byte for byte
#   pi-fp-files    reads a file beside its extension (import.meta.url):
#                  locates-own-files, its files kept
#   pi-fp-typed    a TypeScript extension: typescript-closure, kept; with
#                  pretranspile, the modules it imports (lib/*.ts) are
#                  written as JavaScript beside them
# and the fp-words copies of the two kept packages are shared in
# pi-packages/.shared. Needs Node >= 22.19 (see ../pi).
distribution "pi-footprint" {
  name    = "Pi (footprint example)"
  version = "1.6.0"
  command = "pi-footprint"

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

  package "pi-fp-bundled" {}
  package "pi-fp-files" {}
  package "pi-fp-typed" {
    pretranspile = true
  }
}
