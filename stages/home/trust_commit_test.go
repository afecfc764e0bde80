package home

import (
	"os"
	"path/filepath"
	"testing"

	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/tuf"
)

// An update's verified TUF store (InstallOptions.TrustStage) reaches
// trust/<id>/ only with the receipt: a refused archive or a failed commit
// leaves the trusted store as it was and removes the stage; an accepted
// one replaces it.
func TestTrustStageCommitsWithTheReceipt(t *testing.T) {
	needNode(t)
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	trust := receipt.TrustDir(e.homes.Install, "hello")
	writeFile(t, filepath.Join(trust, "root.json"), "old\n", 0o644)
	stage := func() string {
		t.Helper()
		p := tuf.StagePrefix(trust) + "1-test"
		writeFile(t, filepath.Join(p, "root.json"), "new\n", 0o644)
		return p
	}
	trusted := func() string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(trust, "root.json"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	gone := func(p string) {
		t.Helper()
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}

	// Refused: the signed lock digest is not the release's.
	arc, _ := makeArchive(t, makeRelease(t, e.src, spec("1.1.0")))
	p := stage()
	_, err := e.install(arc, func(o *InstallOptions) { o.TrustStage, o.LockSHA256 = p, sum([]byte("another lock")) })
	wantCode(t, err, receipt.CodeIntegrity)
	if got := trusted(); got != "old\n" {
		t.Errorf("after a refused archive the trusted root is %q", got)
	}
	gone(p)

	// The receipt's commit fails (a shim in the way): the old store is put back.
	s := spec("1.2.0")
	s.command = "hi"
	writeFile(t, filepath.Join(e.homes.Bin, "hi"), "#!/bin/sh\necho not piship\n", 0o755)
	arc, _ = makeArchive(t, makeRelease(t, e.src, s))
	p = stage()
	if _, err := e.install(arc, func(o *InstallOptions) { o.TrustStage = p }); err == nil {
		t.Fatal("the install with a shim in the way succeeded")
	}
	if got := trusted(); got != "old\n" {
		t.Errorf("after a failed commit the trusted root is %q", got)
	}
	gone(p)
	if m, _ := filepath.Glob(tuf.StagePrefix(trust) + "*"); len(m) > 0 {
		t.Errorf("stages left: %v", m)
	}

	// Accepted: the staged store is trusted now.
	arc, _ = makeArchive(t, makeRelease(t, e.src, spec("1.3.0")))
	p = stage()
	e.mustInstall(arc, func(o *InstallOptions) { o.TrustStage = p })
	if got := trusted(); got != "new\n" {
		t.Errorf("after an accepted archive the trusted root is %q", got)
	}
	gone(p)
	if m, _ := filepath.Glob(tuf.StagePrefix(trust) + "*"); len(m) > 0 {
		t.Errorf("stages left: %v", m)
	}
}
