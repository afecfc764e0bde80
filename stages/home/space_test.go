package home

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/home/receipt"
)

// expanded is what the release directory holds: file bytes, files, dirs.
func expanded(t *testing.T, dir string) (bytes int64, files, dirs int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		if d.IsDir() {
			dirs++
			return nil
		}
		fi, err := d.Info()
		bytes += fi.Size()
		files++
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return
}

// listing is every path under root with its type, mode and size (what a
// refused install must leave as it was).
func listing(t *testing.T, root string) []string {
	t.Helper()
	var l []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		size := fi.Size()
		if d.IsDir() {
			size = 0 // a directory's size is the file system's business
		}
		l = append(l, fmt.Sprintf("%s %v %d", filepath.ToSlash(rel), fi.Mode(), size))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// tarGz writes a release directory as an archive the way a piship before
// the declaration did (decl nil: sorted entries, no declaration), or with
// the declaration decl whatever the tree holds, plus extra files.
func tarGz(t *testing.T, path, dir string, decl *archive.Declared, extra map[string][]byte) {
	t.Helper()
	type item struct {
		name string
		data []byte
		dir  bool
	}
	var items []item
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			items = append(items, item{name: rel + "/", dir: true})
			return nil
		}
		data, err := os.ReadFile(p)
		items = append(items, item{name: rel, data: data})
		return err
	})
	for name, data := range extra {
		items = append(items, item{name: name, data: data})
	}
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.name, b.name) })
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	if decl != nil {
		c := fmt.Sprintf(`{"schema":%q,"files":%d,"dirs":%d,"bytes":%d}`, archive.DeclarationSchema, decl.Files, decl.Dirs, decl.Bytes)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": c}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, it := range items {
		h := &tar.Header{Name: it.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(it.data))}
		if it.dir {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if strings.HasPrefix(it.name, "payload/bin/") || it.name == "install.sh" {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write(it.data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// The free space check counts the expanded release (the archive's
// declaration, each file and directory a block more) and the launcher
// the install keeps, before anything is written: twice the archive,
// what it counted before, is far from enough for a tree of small files.
func TestInstallFreeSpaceRefused(t *testing.T) {
	e := newEnv(t)
	rel := makeRelease(t, e.src, spec("1.0.0"))
	arch, _ := makeArchive(t, rel)
	fi, _ := os.Stat(arch)
	bytes, files, dirs := expanded(t, rel)
	const launcher = 3 << 20
	need := bytes + int64(files+dirs)*4096 + launcher + 1<<20
	if need <= 2*fi.Size() {
		t.Fatalf("the release does not expand: need %d, archive %d", need, fi.Size())
	}
	if err := os.MkdirAll(e.homes.Install, 0o755); err != nil {
		t.Fatal(err)
	}
	before := listing(t, e.root)
	var asked string
	_, err := e.install(arch, func(o *InstallOptions) {
		o.LauncherBytes = launcher
		o.FreeSpace = func(dir string) (int64, error) { asked = dir; return need - 1, nil }
	})
	wantCode(t, err, receipt.CodeUnavailable)
	if after := listing(t, e.root); !slices.Equal(before, after) {
		t.Errorf("a refused first install changed the homes:\nbefore %q\nafter  %q", before, after)
	}
	for _, s := range []string{fmt.Sprintf("%d bytes free", need-1), fmt.Sprintf("%d needed", need),
		fmt.Sprintf("the archive expands to %d bytes in %d files and %d directories", bytes, files, dirs), fmt.Sprintf("plus %d for the launcher", launcher)} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%v does not say %q", err, s)
		}
	}
	if asked != e.homes.Install {
		t.Fatalf("free space asked of %s, not of the install home", asked)
	}
	// Without the launcher to keep, the same free space is enough.
	e.mustInstall(arch, func(o *InstallOptions) {
		o.FreeSpace = func(string) (int64, error) { return need - 1, nil }
	})
	// An install over an installed version is refused under the lock,
	// asked of apps/<id>, and leaves the home as it was too.
	arch2, _ := makeArchive(t, makeRelease(t, e.src, spec("1.0.1")))
	before = listing(t, e.root)
	_, err = e.install(arch2, func(o *InstallOptions) {
		o.FreeSpace = func(dir string) (int64, error) { asked = dir; return 1 << 20, nil }
	})
	wantCode(t, err, receipt.CodeUnavailable)
	if after := listing(t, e.root); !slices.Equal(before, after) {
		t.Errorf("a refused second install changed the homes:\nbefore %q\nafter  %q", before, after)
	}
	if asked != receipt.AppDir(e.homes.Install, "hello") {
		t.Fatalf("free space asked of %s, not of apps/hello", asked)
	}
	// A release directory is counted the same way (without the tools
	// it ships for install.sh, which are not installed).
	e2 := newEnv(t)
	_, err = e2.install(rel, func(o *InstallOptions) {
		o.LauncherBytes = launcher
		o.FreeSpace = func(string) (int64, error) { return need - 1, nil }
	})
	wantCode(t, err, receipt.CodeUnavailable)
	// The real statfs answers on this platform.
	if n, err := freeSpace(e.root); err != nil && !errors.Is(err, errors.ErrUnsupported) || err == nil && n <= 0 {
		t.Fatalf("freeSpace = %d, %v", n, err)
	}
}

// An archive written before the declaration (release.json after payload/,
// nothing first) still installs; its space check is twice its bytes plus
// the launcher, as it cannot say more.
func TestInstallUndeclaredArchive(t *testing.T) {
	e := newEnv(t)
	rel := makeRelease(t, e.src, spec("1.0.0"))
	arch := rel + ".tar.gz"
	tarGz(t, arch, rel, nil, nil)
	a, err := archive.Open(mustOpen(t, arch), archive.Limits{})
	if err != nil || a.Declared() != nil {
		t.Fatalf("the old-order archive: %v, or it declares itself", err)
	}
	a.Close()
	fi, _ := os.Stat(arch)
	_, err = e.install(arch, func(o *InstallOptions) {
		o.LauncherBytes = 1000
		o.FreeSpace = func(string) (int64, error) { return 2*fi.Size() + 999, nil }
	})
	wantCode(t, err, receipt.CodeUnavailable)
	if !strings.Contains(err.Error(), "does not declare its expanded size") {
		t.Errorf("message %v", err)
	}
	res := e.mustInstall(arch, func(o *InstallOptions) {
		o.LauncherBytes = 1000
		o.FreeSpace = func(string) (int64, error) { return 2*fi.Size() + 1000, nil }
	})
	if rc := e.receipt(); rc.Active != "1.0.0" || res.Files == 0 {
		t.Fatalf("active %q, %d files", rc.Active, res.Files)
	}
}

// The archive is opened once: the space check sizes on its declaration and
// the extraction goes on from that read, so an archive removed after the
// check still installs what was checked.
func TestInstallReadsTheArchiveOnce(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("an open file cannot be removed on Windows")
	}
	e := newEnv(t)
	arch, _ := makeArchive(t, makeRelease(t, e.src, spec("1.0.0")))
	res := e.mustInstall(arch, func(o *InstallOptions) {
		o.FreeSpace = func(string) (int64, error) {
			if err := os.Remove(arch); err != nil {
				t.Fatal(err)
			}
			return 1 << 40, nil
		}
	})
	if _, err := os.Stat(arch); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the archive was not removed: %v", err)
	}
	if rc := e.receipt(); rc.Active != "1.0.0" || res.Files == 0 {
		t.Fatalf("active %q, %d files", rc.Active, res.Files)
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A gzip bomb that declares a small total is refused at the first byte
// beyond it: INTEGRITY_FAILED naming the archive, what it declared and
// what came, at most the declared bytes written, nothing activated and
// the partial directory set aside.
func TestInstallDeclaredBomb(t *testing.T) {
	e := newEnv(t)
	rel := makeRelease(t, e.src, spec("1.0.0"))
	bytes, files, dirs := expanded(t, rel)
	arch := rel + ".tar.gz"
	decl := &archive.Declared{Files: files + 1, Dirs: dirs, Bytes: bytes + 1000}
	tarGz(t, arch, rel, decl, map[string][]byte{"payload/metadata/zeros.bin": make([]byte, 16<<20)})
	os.Remove(arch + ".sha256")
	_, err := e.install(arch)
	wantCode(t, err, receipt.CodeIntegrity)
	for _, s := range []string{filepath.Base(arch), `"payload/metadata/zeros.bin"`, fmt.Sprintf("content beyond the %d bytes the archive declares", decl.Bytes)} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%v does not say %q", err, s)
		}
	}
	if _, err := os.Stat(receipt.VersionDir(e.homes.Install, "hello", "1.0.0")); err == nil {
		t.Error("the partial version directory stands at the version's path")
	}
	// What the refused extraction wrote is removed with the directory it
	// was set aside into (a failed first install leaves no apps/hello);
	// what still stands is never more than the declaration (the bound as
	// written is stages/archive's TestDeclaredBomb).
	if _, err := os.Lstat(receipt.AppDir(e.homes.Install, "hello")); err == nil {
		if got, _, _ := expanded(t, receipt.AppDir(e.homes.Install, "hello")); got > decl.Bytes {
			t.Errorf("%d bytes written, %d declared", got, decl.Bytes)
		}
	}
	if _, err := receipt.Read(e.homes.Install, "hello"); !errors.Is(err, receipt.ErrNotInstalled) {
		t.Errorf("receipt: %v", err)
	}
}
