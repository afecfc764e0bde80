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

  # fd and rg, bundled so that Pi never downloads them at its first prompt
  # (its interactive start would wait 24 to 30 s for GitHub): the upstream
  # release assets, pinned by the digests upstream publishes. The build
  # fetches each into <piship cache>/search-tools/<sha256>.tar.gz once; the
  # tests seed that cache with stand-ins instead (no GitHub here).
  search_tools {
    fd = {
      "linux-x64"    = { url = "https://github.com/sharkdp/fd/releases/download/v10.2.0/fd-v10.2.0-x86_64-unknown-linux-musl.tar.gz", sha256 = "d9bfa25ec28624545c222992e1b00673b7c9ca5eb15393c40369f10b28f9c932" }
      "linux-arm64"  = { url = "https://github.com/sharkdp/fd/releases/download/v10.2.0/fd-v10.2.0-aarch64-unknown-linux-musl.tar.gz", sha256 = "4e8e596646d047d904f2c5ca74b39dccc69978b6e1fb101094e534b0b59c1bb0" }
      "darwin-x64"   = { url = "https://github.com/sharkdp/fd/releases/download/v10.2.0/fd-v10.2.0-x86_64-apple-darwin.tar.gz", sha256 = "991a648a58870230af9547c1ae33e72cb5c5199a622fe5e540e162d6dba82d48" }
      "darwin-arm64" = { url = "https://github.com/sharkdp/fd/releases/download/v10.2.0/fd-v10.2.0-aarch64-apple-darwin.tar.gz", sha256 = "ae6327ba8c9a487cd63edd8bddd97da0207887a66d61e067dfe80c1430c5ae36" }
    }
    rg = {
      "linux-x64"    = { url = "https://github.com/BurntSushi/ripgrep/releases/download/14.1.1/ripgrep-14.1.1-x86_64-unknown-linux-musl.tar.gz", sha256 = "4cf9f2741e6c465ffdb7c26f38056a59e2a2544b51f7cc128ef28337eeae4d8e" }
      "linux-arm64"  = { url = "https://github.com/BurntSushi/ripgrep/releases/download/14.1.1/ripgrep-14.1.1-aarch64-unknown-linux-gnu.tar.gz", sha256 = "c827481c4ff4ea10c9dc7a4022c8de5db34a5737cb74484d62eb94a95841ab2f" }
      "darwin-x64"   = { url = "https://github.com/BurntSushi/ripgrep/releases/download/14.1.1/ripgrep-14.1.1-x86_64-apple-darwin.tar.gz", sha256 = "fc87e78f7cb3fea12d69072e7ef3b21509754717b746368fd40d88963630e2b3" }
      "darwin-arm64" = { url = "https://github.com/BurntSushi/ripgrep/releases/download/14.1.1/ripgrep-14.1.1-aarch64-apple-darwin.tar.gz", sha256 = "24ad76777745fbff131c8fbc466742b011f925bfa4fffa2ded6def23b5b937be" }
    }
  }
}
