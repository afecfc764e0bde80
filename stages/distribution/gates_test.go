package distribution

import (
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const npmjs = "https://registry.npmjs.org/"

func loadPackageLock(t *testing.T, d *Distribution) *PackageLock {
	t.Helper()
	pl, _, err := ReadPackageLock(filepath.Join(d.RuntimeDir(), "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func TestGatesPassExamples(t *testing.T) {
	for _, dir := range []string{helloDir, piDir, pi073Dir} {
		d := mustLoad(t, dir)
		pl := loadPackageLock(t, d)
		for _, reg := range []string{npmjs, "", "https://registry.npmjs.org"} {
			if err := Gates(d, pl, reg, "linux-x64"); err != nil {
				t.Errorf("%s with registry %q: %v", d.ID, reg, err)
			}
		}
	}
}

func TestPiLock(t *testing.T) {
	d := mustLoad(t, piDir)
	pl := loadPackageLock(t, d)
	scripts := 0
	for key, p := range pl.Packages {
		if key == "" {
			continue
		}
		if !strings.HasPrefix(p.Resolved, npmjs) {
			t.Errorf("%s is resolved from %q, not %s", key, p.Resolved, npmjs)
		}
		if p.HasInstallScript {
			scripts++
		}
	}
	if scripts != len(d.Runtime.AllowInstallScripts) {
		t.Errorf("%d packages have install scripts, %d are allowed", scripts, len(d.Runtime.AllowInstallScripts))
	}
	if p := pl.Packages["node_modules/@earendil-works/pi-coding-agent"]; p.Version != "1.6.0" {
		t.Errorf("pi-coding-agent is %s", p.Version)
	}
	// Dropping one of them from the allow list refuses it by name.
	d.Runtime.AllowInstallScripts = []string{"@google/genai"}
	err := Gates(d, pl, npmjs, "linux-x64")
	if err == nil || !strings.Contains(err.Error(), "node_modules/protobufjs: protobufjs@") || !strings.Contains(err.Error(), "install script") {
		t.Errorf("got %v", err)
	}
}

// violation runs the gates and returns the single violation they report.
func violation(t *testing.T, d *Distribution, pl *PackageLock, registry, host string) (Violation, error) {
	t.Helper()
	err := Gates(d, pl, registry, host)
	var ge *GateError
	if !errors.As(err, &ge) {
		t.Fatalf("Gates = %v, want a *GateError", err)
	}
	if len(ge.Violations) != 1 {
		t.Fatalf("want one violation, got: %v", err)
	}
	return ge.Violations[0], err
}

func TestGatesRefuse(t *testing.T) {
	good := strings.Repeat("A", 86) + "=="
	if b, _ := base64.StdEncoding.DecodeString(good); len(b) != sha512.Size {
		t.Fatal("bad fixture")
	}
	cases := []struct {
		name    string
		edit    func(d *Distribution, pl *PackageLock)
		host    string
		code    string
		rule    string
		pkg     string
		message []string
	}{
		{name: "missing integrity", edit: func(d *Distribution, pl *PackageLock) {
			setPkg(pl, "node_modules/hello-format", func(p *LockPackage) { p.Integrity = "" })
		}, rule: "integrity", pkg: "node_modules/hello-format", message: []string{"hello-format@1.2.0 has no integrity", "sha512"}},
		{name: "sha1 integrity", edit: func(d *Distribution, pl *PackageLock) {
			setPkg(pl, "node_modules/hello-banner", func(p *LockPackage) { p.Integrity = "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=" })
		}, rule: "integrity", pkg: "node_modules/hello-banner", message: []string{"hello-banner@2.0.1 has only a sha1 integrity"}},
		{name: "truncated sha512", edit: func(d *Distribution, pl *PackageLock) {
			setPkg(pl, "node_modules/hello-banner", func(p *LockPackage) { p.Integrity = "sha512-AAAA" })
		}, rule: "integrity", pkg: "node_modules/hello-banner", message: []string{"malformed sha512"}},
		{name: "resolved outside the sources", edit: func(d *Distribution, pl *PackageLock) {
			setPkg(pl, "node_modules/hello-greeting", func(p *LockPackage) { p.Resolved = "https://evil.example.com/hello-greeting-0.3.0.tgz" })
		}, rule: "source", pkg: "node_modules/hello-greeting", message: []string{"hello-greeting@0.3.0 is resolved from https://evil.example.com/", "npm = " + npmjs, FileName + ":26:15"}},
		{name: "a host that extends the registry's", edit: func(d *Distribution, pl *PackageLock) {
			setPkg(pl, "node_modules/hello-greeting", func(p *LockPackage) { p.Resolved = "https://registry.npmjs.org.evil.com/x.tgz" })
		}, rule: "source", pkg: "node_modules/hello-greeting"},
		{name: "a path that extends a source prefix", edit: func(d *Distribution, pl *PackageLock) {
			d.Release.Sources = []string{"https://npm.example.com/repo"}
			setPkg(pl, "node_modules/hello-greeting", func(p *LockPackage) { p.Resolved = "https://npm.example.com/repository/x.tgz" })
		}, rule: "source", pkg: "node_modules/hello-greeting", message: []string{"https://npm.example.com/repo"}},
		{name: "git dependency", edit: func(d *Distribution, pl *PackageLock) {
			setPkg(pl, "node_modules/hello-greeting", func(p *LockPackage) { p.Resolved = "git+ssh://git@github.com/x/y.git#abc" })
		}, rule: "source", pkg: "node_modules/hello-greeting"},
		{name: "registry package without npm among the sources", edit: func(d *Distribution, pl *PackageLock) {
			d.Release.Sources = []string{}
			setPkg(pl, "node_modules/hello-greeting", func(p *LockPackage) { p.Resolved = "" })
		}, rule: "source", pkg: "node_modules/hello-greeting", message: []string{"has no resolved URL", `does not allow "npm"`}},
		{name: "file: tarball outside the distribution", edit: func(d *Distribution, pl *PackageLock) {
			setPkg(pl, "node_modules/hello-cli", func(p *LockPackage) { p.Resolved = "file:../../elsewhere/hello-cli-1.0.0.tgz" })
		}, rule: "path", pkg: "node_modules/hello-cli", message: []string{"hello-cli@1.0.0 is resolved from file:../../elsewhere/", "outside the distribution directory"}},
		{name: "absolute file: tarball", edit: func(d *Distribution, pl *PackageLock) {
			setPkg(pl, "node_modules/hello-cli", func(p *LockPackage) { p.Resolved = "file:/tmp/hello-cli-1.0.0.tgz" })
		}, rule: "path", pkg: "node_modules/hello-cli"},
		{name: "link outside the distribution", edit: func(d *Distribution, pl *PackageLock) {
			pl.Packages["node_modules/linked"] = LockPackage{Resolved: "../../shared/linked", Link: true}
		}, rule: "path", pkg: "node_modules/linked", message: []string{"points at ../../shared/linked"}},
		{name: "workspace outside the distribution", edit: func(d *Distribution, pl *PackageLock) {
			pl.Packages["../../shared/ws"] = LockPackage{Name: "ws", Version: "1.0.0"}
		}, rule: "path", pkg: "../../shared/ws"},
		{name: "install script not allowed", edit: func(d *Distribution, pl *PackageLock) {
			setPkg(pl, "node_modules/hello-format", func(p *LockPackage) { p.HasInstallScript = true })
		}, rule: "install-script", pkg: "node_modules/hello-format", message: []string{"hello-format@1.2.0 declares an install script", "npm ci --ignore-scripts", "runtime.allow_install_scripts (" + filepath.Join(helloDir, FileName) + ":13:29)"}},
		{name: "install script of an alias", edit: func(d *Distribution, pl *PackageLock) {
			d.Runtime.AllowInstallScripts = []string{"fmt-alias"}
			setPkg(pl, "node_modules/hello-format", func(p *LockPackage) { p.HasInstallScript = true; p.Name = "real-format" })
		}, rule: "install-script", pkg: "node_modules/hello-format", message: []string{"real-format@1.2.0"}},
		{name: "cross target", host: "darwin-arm64", rule: "target", message: []string{"this host is darwin-arm64", `["linux-x64"]`, "build on linux-x64", FileName + ":25:15"}},
		{name: "entry package not locked", edit: func(d *Distribution, pl *PackageLock) {
			delete(pl.Packages, "node_modules/hello-cli")
		}, code: "CONFIG_INVALID", rule: "entry", message: []string{"node_modules/hello-cli", "does not install"}},
		{name: "entry in a dev dependency", edit: func(d *Distribution, pl *PackageLock) {
			setPkg(pl, "node_modules/hello-cli", func(p *LockPackage) { p.Dev = true })
		}, code: "CONFIG_INVALID", rule: "entry", message: []string{"a dev dependency", "--omit=dev"}},
		{name: "old lockfile", edit: func(d *Distribution, pl *PackageLock) { pl.LockfileVersion = 2 }, code: "CONFIG_INVALID", rule: "lockfile"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := mustLoad(t, helloDir)
			pl := loadPackageLock(t, d)
			if c.edit != nil {
				c.edit(d, pl)
			}
			host := c.host
			if host == "" {
				host = "linux-x64"
			}
			v, err := violation(t, d, pl, npmjs, host)
			code := c.code
			if code == "" {
				code = "POLICY_DENIED"
			}
			if v.Code != code || v.Rule != c.rule || v.Package != c.pkg {
				t.Errorf("violation %+v, want %s %s %s", v, code, c.rule, c.pkg)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, code+": ") {
				t.Errorf("message %q does not start with %s", msg, code)
			}
			if c.pkg != "" && !strings.Contains(msg, c.pkg+": ") {
				t.Errorf("message %q does not name %s", msg, c.pkg)
			}
			for _, want := range c.message {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
		})
	}
}

func setPkg(pl *PackageLock, key string, edit func(p *LockPackage)) {
	p, ok := pl.Packages[key]
	if !ok {
		panic("no " + key)
	}
	edit(&p)
	pl.Packages[key] = p
}

func TestGatesAllow(t *testing.T) {
	d := mustLoad(t, helloDir)
	base := loadPackageLock(t, d)
	fresh := func() *PackageLock {
		pl := *base
		pl.Packages = maps.Clone(base.Packages)
		return &pl
	}
	check := func(name string, d *Distribution, pl *PackageLock) {
		t.Helper()
		if err := Gates(d, pl, npmjs, "linux-x64"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	pl := fresh()
	setPkg(pl, "node_modules/hello-format", func(p *LockPackage) { p.HasInstallScript = true })
	d.Runtime.AllowInstallScripts = []string{"hello-format"}
	check("allowed install script", d, pl)
	d.Runtime.AllowInstallScripts = nil

	pl = fresh()
	pl.Packages["node_modules/devtool"] = LockPackage{Version: "1.0.0", Resolved: npmjs + "devtool/-/devtool-1.0.0.tgz",
		Integrity: "sha512-" + strings.Repeat("A", 86) + "==", Dev: true, HasInstallScript: true}
	check("dev-only install script", d, pl)

	pl = fresh()
	setPkg(pl, "node_modules/hello-greeting", func(p *LockPackage) {
		p.Resolved = ""
		p.Integrity = "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk= sha512-" + strings.Repeat("A", 86) + "=="
	})
	check("registry-resolved without a URL, sha1 beside sha512", d, pl)

	pl = fresh()
	pl.Packages["node_modules/hello-cli/node_modules/bundled"] = LockPackage{Version: "1.0.0", InBundle: true}
	check("bundled dependency", d, pl)

	pl = fresh()
	pl.Packages["node_modules/linked"] = LockPackage{Resolved: "packages/linked", Link: true}
	pl.Packages["packages/linked"] = LockPackage{Name: "linked", Version: "1.0.0"}
	check("link inside the runtime", d, pl)

	pl = fresh()
	setPkg(pl, "node_modules/hello-greeting", func(p *LockPackage) { p.Resolved = "https://npm.example.com/repo/x.tgz" })
	d.Release.Sources = []string{"npm", "https://npm.example.com/repo/"}
	check("an https source", d, pl)

	// A mirror: a lock written against registry.npmjs.org is refused with
	// the way out.
	d = mustLoad(t, piDir)
	err := Gates(d, loadPackageLock(t, d), "https://mirror.example/npm/", "linux-x64")
	if err == nil || !strings.Contains(err.Error(), "the lock was written against "+npmjs) || !strings.Contains(err.Error(), "npm = https://mirror.example/npm/") {
		t.Errorf("mirror: %v", err)
	}
}

func TestGatesSymlinkedVendor(t *testing.T) {
	dir := copyTree(t, helloDir)
	outside := t.TempDir()
	vendor := filepath.Join(dir, "runtime", "vendor")
	if err := os.Rename(vendor, filepath.Join(outside, "vendor")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "vendor"), vendor); err != nil {
		t.Fatal("cannot create a symlink:", err)
	}
	d := mustLoad(t, dir)
	err := Gates(d, loadPackageLock(t, d), npmjs, "linux-x64")
	var ge *GateError
	if !errors.As(err, &ge) || len(ge.Violations) != 4 || ge.Violations[0].Rule != "path" {
		t.Fatalf("got %v", err)
	}
}

func TestGatesReportsEverything(t *testing.T) {
	d := mustLoad(t, helloDir)
	pl := loadPackageLock(t, d)
	setPkg(pl, "node_modules/hello-format", func(p *LockPackage) { p.Integrity = ""; p.HasInstallScript = true })
	setPkg(pl, "node_modules/hello-banner", func(p *LockPackage) { p.Resolved = "https://evil.example.com/b.tgz" })
	d.Runtime.Entry = "node_modules/missing/index.js"
	err := Gates(d, pl, npmjs, "win32-x64")
	var ge *GateError
	if !errors.As(err, &ge) {
		t.Fatal(err)
	}
	msg := err.Error()
	if ge.Code() != "CONFIG_INVALID" || !strings.HasPrefix(msg, "CONFIG_INVALID: 5 release rules are broken") {
		t.Errorf("code %s: %s", ge.Code(), msg)
	}
	// Distribution-wide rules first, then packages in key order.
	order := []string{"entry", "target", "source", "install-script", "integrity"}
	for i, v := range ge.Violations {
		if v.Rule != order[i] {
			t.Fatalf("order: %+v", ge.Violations)
		}
	}
	for _, want := range []string{"node_modules/hello-banner: ", "node_modules/hello-format: hello-format@1.2.0 declares", "node_modules/hello-format: hello-format@1.2.0 has no integrity", "\nAllowed sources", "\npiship never runs install scripts"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if again := Gates(d, pl, npmjs, "win32-x64"); again.Error() != msg {
		t.Error("two runs word it differently")
	}
}
