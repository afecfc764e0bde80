# The hello distribution: a small, fully offline example. Its runtime holds
# only npm tarballs committed under runtime/vendor (see packages-src/README.md).
distribution "hello" {
  name    = "Hello"
  version = "1.0.0"
  command = "hello"

  runtime {
    dir   = "runtime"
    entry = "node_modules/hello-cli/bin/hello.js"
    # hello-cli's own version is kept equal to version above: hello --version
    # prints it.
    allow_install_scripts = []
  }

  resources = ["resources"]

  tools = {
    hello-info = { source = "tools/hello-info", sha256 = "29795ab72a86b8d4d72350499f26c696e02e6e899752e77c70ccf18dbcddc379" }
  }

  release {
    bundle  = true
    strip   = true
    targets = ["linux-x64"]
    sources = ["npm"]
  }

  # Offline qualification: an OSV snapshot committed beside the
  # distribution, and no registry packages whose signatures could be checked.
  audit {
    sources = ["osv:osv"]
    fail_on = "high"
  }

  signatures {
    allow_unavailable = false
  }

  smoke "version" {
    args   = ["--version"]
    expect = "^1\\.0\\.0$"
  }

  smoke "help" {
    args   = ["--help"]
    expect = "Usage: hello"
  }

  verify_at_launch = false
}
