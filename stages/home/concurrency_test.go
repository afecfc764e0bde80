package home

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/updatesource"
)

// asUpdate makes an install what the update pipeline's install stage
// makes it: the channel's rule, run under the lock on the fresh receipt.
func asUpdate(version string) func(*InstallOptions) {
	return func(o *InstallOptions) {
		o.ID, o.Version = "hello", version
		o.Update = func(active string) error {
			err := updatesource.CheckUpgrade(active, version)
			if errors.Is(err, updatesource.ErrUpToDate) {
				return ErrUpToDate
			}
			return err
		}
	}
}

// An update decides on the receipt it reads under the maintenance lock,
// not on the one its channel check read (issue 13, defect 1): the check saw
// 1.0.0 and chose 1.1.0, then 1.2.0 was installed by hand; the update must
// not make 1.1.0 active. The same version is up to date with nothing
// written; an explicit install of an older version still goes ahead.
func TestUpdateDecidesUnderTheLock(t *testing.T) {
	e := newEnv(t)
	arch := map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		arch[v], _ = makeArchive(t, makeRelease(t, e.src, spec(v)))
	}
	e.mustInstall(arch["1.0.0"])
	// (the update's channel check ran here and chose 1.1.0)
	e.mustInstall(arch["1.2.0"])
	before := e.receiptBytes()
	_, err := e.install(arch["1.1.0"], asUpdate("1.1.0"))
	wantCode(t, err, receipt.CodeUpdate)
	if !strings.Contains(err.Error(), "downgrade from 1.2.0 to 1.1.0 refused") {
		t.Fatalf("the refusal does not say what it refused: %v", err)
	}
	if e.receiptBytes() != before {
		t.Fatal("a refused update changed the receipt")
	}
	if _, err := os.Stat(receipt.VersionDir(e.homes.Install, "hello", "1.1.0")); err == nil {
		t.Fatal("a refused update wrote its version")
	}

	// Another update got there first: up to date, nothing written.
	res, err := e.install(arch["1.2.0"], asUpdate("1.2.0"))
	if err != nil || !res.UpToDate || res.Version != "1.2.0" || res.Reused {
		t.Fatalf("update to the active version: %+v, %v", res, err)
	}
	if e.receiptBytes() != before {
		t.Fatal("an up-to-date update changed the receipt")
	}

	// A deliberate downgrade by install is the user's to make.
	if res := e.mustInstall(arch["1.1.0"]); res.Version != "1.1.0" || e.receipt().Active != "1.1.0" || e.receipt().Previous != "1.2.0" {
		t.Fatalf("install of an older version: %+v", res)
	}
}

// An update whose distribution was uninstalled while it downloaded fails
// saying so and leaves nothing: its download and the apps/<id> it made for
// it are removed, so the uninstall stays complete.
func TestUpdateAfterAnUninstallLeavesNothing(t *testing.T) {
	e := newEnv(t)
	a1, _ := makeArchive(t, makeRelease(t, e.src, spec("1.0.0")))
	a2, _ := makeArchive(t, makeRelease(t, e.src, spec("1.1.0")))
	e.mustInstall(a1)
	if _, err := Uninstall(context.Background(), e.opts(), "hello", false); err != nil {
		t.Fatal(err)
	}
	// What the update's download stage wrote after the uninstall.
	dl := filepath.Join(receipt.DownloadsDir(e.homes.Install, "hello"), filepath.Base(a2))
	data, _ := os.ReadFile(a2)
	writeFile(t, dl, string(data), 0o644)
	_, err := e.install(dl, asUpdate("1.1.0"))
	wantCode(t, err, receipt.CodeUpdate)
	if !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("%v does not say hello is not installed", err)
	}
	if _, err := os.Lstat(receipt.AppDir(e.homes.Install, "hello")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("apps/hello after the refused update: %v", err)
	}
	if _, err := receipt.Read(e.homes.Install, "hello"); !errors.Is(err, receipt.ErrNotInstalled) {
		t.Fatalf("receipt after the refused update: %v", err)
	}
}

// What a killed uninstall renamed away (apps/.<id>.uninstalling-*) is
// removed by the next uninstall, or by doctor once the distribution is
// installed again.
func TestUninstallLeftoversAreRemoved(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rel := makeRelease(t, e.src, spec("1.0.0"))
	apps := filepath.Join(e.homes.Install, "apps")
	leftover := func() string {
		p := filepath.Join(apps, receipt.UninstallingPrefix("hello")+"abcd")
		writeFile(t, filepath.Join(p, "1.0.0", "payload", "piship.lock"), "x", 0o644)
		return p
	}
	e.mustInstall(rel)
	if _, err := Uninstall(ctx, e.opts(), "hello", false); err != nil {
		t.Fatal(err)
	}
	p := leftover() // killed after the rename: receipt and apps/hello gone
	if _, err := Uninstall(ctx, e.opts(), "hello", false); err != nil {
		t.Fatalf("uninstall again after a killed one: %v", err)
	}
	if _, err := os.Lstat(p); err == nil {
		t.Fatal("the second uninstall left the renamed directory")
	}
	p = leftover()
	e.mustInstall(rel)
	rep, err := Doctor(ctx, e.opts(), "hello", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p); err == nil || rep.Damaged() {
		t.Fatalf("doctor left %s (found %v)", p, rep.Found)
	}
}
