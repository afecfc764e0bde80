package scaffold

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclwrite"

	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/home/receipt"
)

var wantFiles = []string{".gitignore", "app/bin/cli.js", "app/package.json", "distribution.hcl", "pack.sh",
	"runtime/package-lock.json", "runtime/package.json", "runtime/vendor/demo-0.0.0.tgz"}

// A scaffold is a distribution that loads without a diagnostic, whose
// distribution.hcl is as `piship fmt` writes it, and whose npm lock pins
// the vendored tarball of app/ by its real sha512.
func TestWriteMakesALoadableDistribution(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	files, err := Write(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(files, wantFiles) {
		t.Fatalf("wrote %q, want %q", files, wantFiles)
	}
	d, diags := distribution.Load(dir)
	if diags.HasErrors() {
		t.Fatalf("the scaffold does not load: %v", diags)
	}
	if d.ID != "demo" || d.Command != "demo" || d.Version != Version || d.Runtime.Entry != "node_modules/demo/bin/cli.js" || len(d.Smoke) != 2 {
		t.Fatalf("loaded %s %s command %s entry %s, %d smoke tests", d.ID, d.Version, d.Command, d.Runtime.Entry, len(d.Smoke))
	}
	src := read(t, dir, "distribution.hcl")
	if got := string(hclwrite.Format(src)); got != string(src) {
		t.Errorf("distribution.hcl is not formatted as piship fmt writes it:\n%s", got)
	}
	for _, exe := range []string{"pack.sh", "app/bin/cli.js"} {
		if fi, err := os.Stat(filepath.Join(dir, exe)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable: %v %v", exe, fi.Mode(), err)
		}
	}

	tgz := read(t, dir, "runtime/vendor/demo-0.0.0.tgz")
	var lock struct {
		Packages map[string]struct{ Resolved, Integrity string } `json:"packages"`
	}
	if err := json.Unmarshal(read(t, dir, "runtime/package-lock.json"), &lock); err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(tgz)
	p := lock.Packages["node_modules/demo"]
	if want := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); p.Integrity != want || p.Resolved != "file:vendor/demo-0.0.0.tgz" {
		t.Fatalf("lock pins %s %s, the tarball is %s", p.Resolved, p.Integrity, want)
	}
	// The tarball holds app/ as npm pack lays it out: package/<file>.
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var packed []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		rel := strings.TrimPrefix(h.Name, "package/")
		if !bytes.Equal(data, read(t, dir, "app/"+rel)) {
			t.Errorf("%s in the tarball differs from app/%s", h.Name, rel)
		}
		packed = append(packed, rel)
	}
	if !slices.Equal(packed, []string{"bin/cli.js", "package.json"}) {
		t.Errorf("tarball holds %q", packed)
	}

	// The same inputs give the same bytes (the lock's integrity is stable).
	again := filepath.Join(t.TempDir(), "demo")
	if _, err := Write(again, Options{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, again, "runtime/vendor/demo-0.0.0.tgz"), tgz) {
		t.Error("a second scaffold packed different bytes")
	}
}

// Write never overwrites: one existing file stops it before it writes
// anything, and the error names that file.
func TestWriteRefusesAnExistingFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := []byte("# mine\n")
	if err := os.WriteFile(filepath.Join(dir, "distribution.hcl"), mine, 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := Write(dir, Options{})
	if receipt.CodeOf(err) != receipt.CodeConfigInvalid || !strings.Contains(err.Error(), "already has distribution.hcl") ||
		!strings.Contains(err.Error(), "empty or new directory") {
		t.Fatalf("got %v", err)
	}
	if len(files) != 0 {
		t.Errorf("reported %q written", files)
	}
	if got := read(t, dir, "distribution.hcl"); !bytes.Equal(got, mine) {
		t.Errorf("distribution.hcl was overwritten: %s", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("wrote files beside the refusal: %v", entries)
	}
	// An unrelated file is no obstacle.
	other := filepath.Join(t.TempDir(), "demo")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "README.md"), mine, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(other, Options{}); err != nil {
		t.Fatalf("a directory with a README: %v", err)
	}
}

// The id is the directory's name or Options.ID, checked with the rule of
// every distribution id; a bad one is refused with a suggestion and
// nothing written.
func TestWriteRefusesABadID(t *testing.T) {
	for _, c := range []struct {
		dir, id string
		want    []string
	}{
		{"My App", "", []string{`the directory name "My App" is not a distribution id`, `"my-app"`, "--id"}},
		{"demo", "Demo", []string{`"Demo" is not a distribution id`}},
		{"demo", "-x", []string{`"-x" is not a distribution id`}},
	} {
		dir := filepath.Join(t.TempDir(), c.dir)
		_, err := Write(dir, Options{ID: c.id})
		if receipt.CodeOf(err) != receipt.CodeConfigInvalid {
			t.Errorf("%q --id %q: got %v, want CONFIG_INVALID", c.dir, c.id, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q --id %q: %v lacks %s", c.dir, c.id, err, w)
			}
		}
		if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
			t.Errorf("%q --id %q: the directory was created", c.dir, c.id)
		}
	}
	// Options.ID names a directory whose own name is no id.
	files, err := Write(filepath.Join(t.TempDir(), "My App"), Options{ID: "my-app"})
	if err != nil || !slices.Contains(files, "runtime/vendor/my-app-0.0.0.tgz") {
		t.Fatalf("--id my-app: %q %v", files, err)
	}
}

func read(t *testing.T, dir, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The version is written once, in distribution.hcl: the program prints
// the one piship gives it (PISHIP_APP_VERSION) and the "version" smoke test
// expects ${version}, so no other file, the packed app included, holds it.
func TestTheVersionIsWrittenOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	files, err := Write(dir, Options{Version: "4.5.6"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data := read(t, dir, f)
		if strings.HasSuffix(f, ".tgz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if data, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if n := bytes.Count(data, []byte("4.5.6")); (f == "distribution.hcl") != (n == 1) {
			t.Errorf("%s holds the version %d times", f, n)
		}
	}
	if !bytes.Contains(read(t, dir, "app/bin/cli.js"), []byte("process.env.PISHIP_APP_VERSION")) {
		t.Error("the program does not read PISHIP_APP_VERSION")
	}
	d, diags := distribution.Load(dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if d.Version != "4.5.6" || d.Smoke[0].Expect != "^${version}$" {
		t.Fatalf("version %q, expect %q", d.Version, d.Smoke[0].Expect)
	}
	re, err := d.Smoke[0].Regexp("4.5.6")
	if err != nil || !re.MatchString("4.5.6") || re.MatchString("4x5x6") || re.MatchString("4.5.60") {
		t.Fatalf("expect for 4.5.6: %v %v", re, err)
	}
}
