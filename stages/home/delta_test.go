package home

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"piship.dev/piship/stages/delta"
	"piship.dev/piship/stages/home/receipt"
)

// deltaUpdate is an update of hello 1.0.0, installed in e, to 1.0.1 from
// a delta in the downloads; fallback counts the archive fetches.
type deltaUpdate struct {
	e         *env
	arch1     string
	arch2     string
	sha2      string
	path      string // the delta, in apps/hello/.downloads
	fallbacks int
}

func newDeltaUpdate(t *testing.T) *deltaUpdate {
	e := newEnv(t)
	d := &deltaUpdate{e: e}
	d.arch1, _ = makeArchive(t, makeRelease(t, e.src, spec("1.0.0")))
	d.arch2, d.sha2 = makeArchive(t, makeRelease(t, e.src, spec("1.0.1")))
	e.mustInstall(d.arch1)
	d.path = filepath.Join(receipt.DownloadsDir(e.homes.Install, "hello"), "hello-1.0.1-x.from-1.0.0.delta")
	os.MkdirAll(filepath.Dir(d.path), 0o755)
	if _, err := delta.FromArchives(context.Background(), d.path, d.arch1, d.arch2, delta.Meta{FromVersion: "1.0.0", ToVersion: "1.0.1"}); err != nil {
		t.Fatal(err)
	}
	return d
}

func (d *deltaUpdate) opts(o *InstallOptions) {
	o.Source, o.ID, o.Version = "", "hello", "1.0.1"
	o.Update = func(string) error { return nil }
	o.Delta = &DeltaSource{Path: d.path, From: "1.0.0", ArchiveSHA256: d.sha2, Fallback: func(context.Context) (string, error) {
		d.fallbacks++
		return d.arch2, nil
	}}
}

// A delta builds the same version directory as the archive, records the
// archive's digest and the tree's, and is removed once used; a home with
// too little space for the new version refuses it before writing; an
// installed file changed since the install makes it fetch the archive,
// once, and install that.
func TestInstallFromADelta(t *testing.T) {
	d := newDeltaUpdate(t)
	res := d.e.mustInstall("", d.opts)
	if !res.FromDelta || res.DeltaFallback != "" || d.fallbacks != 0 || res.ArchiveSHA256 != d.sha2 {
		t.Fatalf("install from the delta: %+v (%d fallbacks)", res, d.fallbacks)
	}
	rec := d.e.receipt().Find("1.0.1")
	tree, err := delta.ScanTree(context.Background(), rec.Dir)
	if err != nil || rec.TreeSHA256 != tree.Digest() || rec.Source != receipt.SourceArchive || rec.ArchiveSHA256 != d.sha2 {
		t.Fatalf("the record of 1.0.1: %+v (tree %s, %v)", rec, tree.Digest(), err)
	}
	if _, err := os.Stat(d.path); !os.IsNotExist(err) {
		t.Fatalf("the delta is left in the downloads: %v", err)
	}
	ref := newEnv(t)
	ref.mustInstall(d.arch2)
	want, _ := delta.ScanTree(context.Background(), ref.receipt().Find("1.0.1").Dir)
	if tree.Digest() != want.Digest() {
		t.Fatal("the delta built another tree than the archive installs")
	}

	// Too little space for the new version: refused before anything is
	// written, sized on the delta's header.
	d = newDeltaUpdate(t)
	before := listing(t, d.e.root)
	_, err = d.e.install("", d.opts, func(o *InstallOptions) {
		o.FreeSpace = func(string) (int64, error) { return 1 << 10, nil }
	})
	wantCode(t, err, receipt.CodeUnavailable)
	if !strings.Contains(err.Error(), "the delta builds ") {
		t.Fatalf("the refusal does not say what it sized: %v", err)
	}
	after := listing(t, d.e.root)
	after = slices.DeleteFunc(after, func(p string) bool { return strings.Contains(p, ".downloads") })
	before = slices.DeleteFunc(before, func(p string) bool { return strings.Contains(p, ".downloads") })
	if !slices.Equal(before, after) {
		t.Errorf("a refused delta install changed the homes:\nbefore %q\nafter  %q", before, after)
	}

	// A file of the installed version changed: the archive, once.
	d = newDeltaUpdate(t)
	entry := filepath.Join(d.e.receipt().Find("1.0.0").Payload, "node_modules", "x", "cli.js")
	b, err := os.ReadFile(entry)
	if err != nil || len(b) == 0 {
		t.Fatalf("%s: %v", entry, err)
	}
	b[0] ^= 1
	os.WriteFile(entry, b, 0o644)
	res = d.e.mustInstall("", d.opts)
	if res.FromDelta || d.fallbacks != 1 || !strings.Contains(res.DeltaFallback, "(base)") || d.e.receipt().Active != "1.0.1" {
		t.Fatalf("install after a changed file: %+v (%d fallbacks)", res, d.fallbacks)
	}
}
