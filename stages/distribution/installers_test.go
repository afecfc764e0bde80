package distribution

import (
	"strings"
	"testing"
)

const (
	hexA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hexB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// The installers block pins a target's two binaries; the lock records it
// and a distribution without it keeps its lock's bytes.
// installersBlock pins win32-x64's binaries from a URL.
const installersBlock = `  installers {
    source = "https://example.com/piship/0.9.0"
    sha256 = { "win32-x64" = { installer = "` + hexA + `", launcher = "` + hexB + `" } }
  }
`

func TestInstallersAreDecodedAndLocked(t *testing.T) {
	d := mustLoad(t, withSearchTools(t, `  installers {
    source = "installers/"
    sha256 = { "win32-x64" = { installer = "`+hexA+`", launcher = "`+hexB+`" } }
  }
`))
	if d.Installers == nil || d.Installers.Source != "installers" || d.Installers.IsURL() {
		t.Fatalf("installers = %+v", d.Installers)
	}
	if p, ok := d.Installers.For("win32-x64"); !ok || p.Installer != hexA || p.Launcher != hexB {
		t.Fatalf("win32-x64 pins = %+v %v", p, ok)
	}
	if _, ok := d.Installers.For("linux-x64"); ok {
		t.Fatal("linux-x64 is not pinned")
	}
	if i, l := InstallerSourceFiles("win32-x64"); i != "piship-install.exe" || l != "piship-launch.exe" {
		t.Fatalf("win32 source files = %s %s", i, l)
	}
	l, err := ComputeLock(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(l.Marshal()), `"installers"`) || l.Installers.SHA256["win32-x64"].Launcher != hexB {
		t.Fatalf("lock installers = %+v", l.Installers)
	}
	l2, err := ComputeLock(mustLoad(t, helloDir))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(l2.Marshal()), "installers") {
		t.Fatal("a distribution without an installers block locks an installers key")
	}
}

func TestInstallersDiagnostics(t *testing.T) {
	for _, c := range []struct{ name, block, want string }{
		{"outside", `  installers {
    source = "../bin/installers"
    sha256 = { "linux-x64" = { installer = "` + hexA + `", launcher = "` + hexB + `" } }
  }
`, "leaves the distribution directory"},
		{"http", `  installers {
    source = "http://example.com/installers"
    sha256 = { "linux-x64" = { installer = "` + hexA + `", launcher = "` + hexB + `" } }
  }
`, "https://"},
		{"bad digest", `  installers {
    source = "installers"
    sha256 = { "linux-x64" = { installer = "sha256:` + hexA + `", launcher = "` + hexB + `" } }
  }
`, "is not a SHA-256 digest"},
		{"no launcher", `  installers {
    source = "installers"
    sha256 = { "linux-x64" = { installer = "` + hexA + `" } }
  }
`, "requires launcher"},
		{"bad target", `  installers {
    source = "installers"
    sha256 = { "linux-sparc" = { installer = "` + hexA + `", launcher = "` + hexB + `" } }
  }
`, "linux-sparc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, diags := Load(withSearchTools(t, c.block))
			var all strings.Builder
			for _, d := range diags {
				all.WriteString(d.Summary + ": " + d.Detail + "\n")
			}
			if !diags.HasErrors() || !strings.Contains(all.String(), c.want) || strings.Count(all.String(), "\n") != 1 {
				t.Fatalf("diagnostics:\n%s want exactly one, containing %q", all.String(), c.want)
			}
		})
	}
}
