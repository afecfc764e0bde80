package distribution

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// helloWithPackage is hello vendoring the Pi package pi-x from
// packages/pi-x, whose lock holds pi-x with the fields given.
func helloWithPackage(t *testing.T, piX string) string {
	t.Helper()
	dir := copyTree(t, helloDir)
	src := readFile(t, filepath.Join(dir, FileName))
	end := strings.LastIndex(src, "}")
	writeFile(t, filepath.Join(dir, FileName), src[:end]+"  package \"pi-x\" {}\n"+src[end:])
	writeFile(t, filepath.Join(dir, "packages", "pi-x", "package.json"), `{"name": "p", "private": true, "dependencies": {"pi-x": "1.0.0"}}`)
	writeFile(t, filepath.Join(dir, "packages", "pi-x", "package-lock.json"), `{"name": "p", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "p"}`+piX+`}}`)
	return dir
}

// installed writes what npm would install for pi-x: a package root with
// package.json and the files given.
func installed(t *testing.T, pj string, files ...string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "node_modules", "pi-x")
	writeFile(t, filepath.Join(root, "package.json"), pj)
	for _, f := range files {
		writeFile(t, filepath.Join(root, f), "export default function () {}\n")
	}
	return root
}

// A package block's project is locked by digest with the package's
// version and integrity; its extension files are pinned from the
// installed package, kept across CheckLock while the project is
// unchanged, and a changed project or file says what to do.
func TestPiPackageLock(t *testing.T) {
	const entry = `, "node_modules/pi-x": {"version": "1.0.0", "resolved": "https://registry.npmjs.org/pi-x/-/pi-x-1.0.0.tgz", "integrity": "sha512-AAAA"}`
	dir := helloWithPackage(t, entry)
	d := mustLoad(t, dir)
	l, err := ComputeLock(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Packages) != 1 || l.Packages[0].Version != "1.0.0" || l.Packages[0].Integrity != "sha512-AAAA" || l.Packages[0].Root != "pi-packages/pi-x/node_modules/pi-x" {
		t.Fatalf("locked %+v", l.Packages)
	}
	root := installed(t, `{"name": "pi-x", "version": "1.0.0", "pi": {"extensions": ["./index.ts", "./more/b.js"]}}`, "index.ts", "more/b.js")
	if err := PinExtensions(l, map[string]string{"pi-x": root}); err != nil {
		t.Fatal(err)
	}
	if p := l.Packages[0]; p.Manifest.Path != "package.json" || len(p.Extensions) != 2 || p.Extensions[0].Path != "index.ts" || p.Extensions[1].Path != "more/b.js" {
		t.Fatalf("pinned %+v", p)
	}
	if err := WriteLock(d, l); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckLock(d); err != nil {
		t.Fatalf("an unchanged distribution: %v", err)
	}
	if err := CheckPackageFiles(l.Packages[0], root, dir); err != nil {
		t.Fatalf("the installed files: %v", err)
	}
	os.WriteFile(filepath.Join(root, "index.ts"), []byte("changed"), 0o644)
	if err := CheckPackageFiles(l.Packages[0], root, dir); err == nil || !strings.HasPrefix(err.Error(), "LOCK_INVALID: Pi package pi-x 1.0.0") {
		t.Fatalf("a changed extension: %v", err)
	}
	editFile(t, filepath.Join(dir, "packages", "pi-x", "package-lock.json"), "sha512-AAAA", "sha512-BBBB")
	if _, err := CheckLock(d); err == nil || !strings.Contains(err.Error(), "package pi-x (changed: packages/pi-x/package.json or package-lock.json)") {
		t.Fatalf("a changed package lock: %v", err)
	}

	// Entries piship cannot pin, a lock without the package, an install
	// script nobody acknowledged.
	for _, pj := range []string{`{"name": "pi-x", "pi": {"extensions": ["./ext/*.ts"]}}`, `{"name": "pi-x", "pi": {"extensions": ["./ext"]}}`, `{"name": "pi-x"}`} {
		if _, _, err := ExtensionEntries("pi-x", installed(t, pj, "ext/a.ts")); err == nil || !strings.HasPrefix(err.Error(), "CONFIG_INVALID: Pi package pi-x") {
			t.Errorf("%s: %v", pj, err)
		}
	}
	if _, err := ComputeLock(mustLoad(t, helloWithPackage(t, ""))); err == nil || !strings.Contains(err.Error(), "does not install node_modules/pi-x") {
		t.Errorf("a lock without the package: %v", err)
	}
	scripted := entry + `, "node_modules/esbuild": {"version": "0.25.0", "resolved": "https://registry.npmjs.org/esbuild/-/esbuild-0.25.0.tgz", "integrity": "sha512-CCCC", "hasInstallScript": true}`
	if _, err := ComputeLock(mustLoad(t, helloWithPackage(t, scripted))); err == nil || !strings.HasPrefix(err.Error(), "POLICY_DENIED: package \"pi-x\"") || !strings.Contains(err.Error(), "allow_install_scripts") {
		t.Errorf("an install script: %v", err)
	}
}
