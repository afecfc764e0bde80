// Package scaffold writes a new distribution directory: what `piship init`
// makes, a working starting point that `piship lock` and `piship build`
// accept at once and whose smoke tests `piship release` passes, with no
// network.
//
// Write renders the templates embedded from template/ (text files, one per
// file written, with text/template fields for the id, version, command and
// host target) into a directory:
//
//	distribution.hcl              every block commented, two smoke tests
//	.gitignore                    dist/, where build and release write
//	pack.sh                       repacks app/ and refreshes the npm lock (npm, offline)
//	app/package.json, bin/cli.js  the program: a dependency-free Node ESM package
//	runtime/package.json          the npm project: one file: dependency on app
//	runtime/package-lock.json     lockfileVersion 3, the tarball's sha512 integrity
//	runtime/vendor/<id>-0.0.0.tgz  app/ packed as npm pack does (its own npm version, not the release's)
//
// The program is a package of its own because a distribution's
// runtime.entry is a file of an installed, locked package
// (node_modules/<package>/<file>); Write packs it itself (a gzip'd ustar of
// package/..., fixed mtimes and modes, so the same inputs give the same
// bytes) and writes the matching integrity into the lock, so neither npm nor
// a network is needed until the user changes app/ and runs pack.sh.
//
// The distribution id comes from the directory's name unless Options.ID
// says otherwise, and is checked with the rule of every id
// (receipt.CheckID). Write never overwrites: when any file it would write
// exists, it writes nothing and says which (CONFIG_INVALID).
package scaffold

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
	"time"

	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/semver"
)

//go:embed template
var templates embed.FS

// Version is the version a new distribution starts at.
const Version = "0.1.0"

// appVersion is the app package's own npm version, which is not the
// distribution's: the version is written once, in distribution.hcl, and
// the program prints the one the launcher gives it (PISHIP_APP_VERSION),
// so a new version is one edit and piship lock, never a repack.
const appVersion = "0.0.0"

// Options say what to scaffold. The zero value derives everything.
type Options struct {
	// ID is the distribution id (also its command and the app package's
	// name); empty: the directory's base name.
	ID string
	// Target is the release target, in Node's <platform>-<arch> naming;
	// empty: this host's (a release is built on its target).
	Target string
	// Version is the version the distribution starts at (a semantic
	// version); empty: Version.
	Version string
}

// fields are the templates' values.
type fields struct {
	ID, Name, Version, Command, Target, Tarball, Integrity string
	// AppVersion is the app package's npm version (appVersion).
	AppVersion string
	// EnvAppVersion is the variable the program reads its version from.
	EnvAppVersion string
}

// appDir holds the template files that also go into the app's tarball, as
// package/<path relative to app/>.
const appDir = "app"

// mtime is what npm pack stamps on every entry (1985-10-26T08:15:00Z), so
// a tarball written here looks like one npm wrote.
var mtime = time.Date(1985, 10, 26, 8, 15, 0, 0, time.UTC)

// Write scaffolds a distribution into dir (created if missing) and returns
// the files it wrote, relative to dir, in the order written. It writes
// nothing when the id is invalid or a file it would write exists.
func Write(dir string, o Options) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, receipt.Errorf(receipt.CodeConfigInvalid, "%s: %v", dir, err)
	}
	id, err := ID(abs, o)
	if err != nil {
		return nil, err
	}
	target := o.Target
	if target == "" {
		target = platform.HostTarget()
	}
	version := Version
	if o.Version != "" {
		if _, err := semver.Parse(o.Version); err != nil {
			return nil, receipt.Errorf(receipt.CodeConfigInvalid, "--version %q: %v", o.Version, err)
		}
		version = o.Version
	}
	f := fields{ID: id, Name: id, Version: version, AppVersion: appVersion, EnvAppVersion: receipt.EnvAppVersion, Command: id, Target: target,
		Tarball: id + "-" + appVersion + ".tgz"}

	files, err := render(f)
	if err != nil {
		return nil, err
	}
	// The tarball is app/ as npm would pack it; the lock pins its sha512.
	tgz, err := pack(files)
	if err != nil {
		return nil, err
	}
	sum := sha512.Sum512(tgz)
	f.Integrity = "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	if files, err = render(f); err != nil {
		return nil, err
	}
	files = append(files, file{path: "runtime/vendor/" + f.Tarball, data: tgz, mode: 0o644})

	// Refuse before writing anything, naming every file in the way.
	var exist []string
	for _, fl := range files {
		if _, err := os.Lstat(filepath.Join(abs, filepath.FromSlash(fl.path))); err == nil {
			exist = append(exist, fl.path)
		} else if !os.IsNotExist(err) {
			return nil, receipt.Errorf(receipt.CodeConfigInvalid, "cannot check %s: %v", filepath.Join(dir, fl.path), err)
		}
	}
	if len(exist) > 0 {
		return nil, receipt.Errorf(receipt.CodeConfigInvalid, "%s already has %s: piship init never overwrites a file; run it on an empty or new directory",
			dir, strings.Join(exist, ", "))
	}
	var written []string
	for _, fl := range files {
		p := filepath.Join(abs, filepath.FromSlash(fl.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return written, receipt.Errorf(receipt.CodeConfigInvalid, "cannot create %s: %v", filepath.Dir(p), err)
		}
		// O_EXCL: a file that appeared since the check is not overwritten.
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fl.mode)
		if err != nil {
			return written, receipt.Errorf(receipt.CodeConfigInvalid, "cannot write %s: %v", p, err)
		}
		_, err = w.Write(fl.data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return written, receipt.Errorf(receipt.CodeConfigInvalid, "cannot write %s: %v", p, err)
		}
		written = append(written, fl.path)
	}
	return written, nil
}

// ID is the id Write gives a distribution in dir: o.ID, else the
// directory's base name; an invalid one is a CONFIG_INVALID error saying
// what would do.
func ID(dir string, o Options) (string, error) {
	if o.ID != "" {
		return o.ID, receipt.CheckID(o.ID)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", receipt.Errorf(receipt.CodeConfigInvalid, "%s: %v", dir, err)
	}
	id := filepath.Base(abs)
	if !receipt.ValidName(id) {
		return "", receipt.Errorf(receipt.CodeConfigInvalid, "the directory name %q is not a distribution id (lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 bytes): name the directory like one (e.g. %q), or give the id with --id", id, suggestID(id))
	}
	return id, nil
}

// file is one rendered file.
type file struct {
	path string // slash-separated, relative to the distribution directory
	data []byte
	mode fs.FileMode
}

// render executes every template, sorted by output path.
func render(f fields) ([]file, error) {
	var out []file
	err := fs.WalkDir(templates, "template", func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		src, err := templates.ReadFile(p)
		if err != nil {
			return err
		}
		t, err := template.New(p).Option("missingkey=error").Parse(string(src))
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, f); err != nil {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, "template/"), ".tmpl")
		if rel == "gitignore" {
			rel = ".gitignore" // go:embed leaves out dot files
		}
		mode := fs.FileMode(0o644)
		if path.Ext(rel) == ".sh" || strings.HasPrefix(rel, appDir+"/bin/") {
			mode = 0o755
		}
		out = append(out, file{path: rel, data: buf.Bytes(), mode: mode})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scaffold templates: %w", err) // a bug of this package
	}
	slices.SortFunc(out, func(a, b file) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// pack returns the app/ files as an npm package tarball: package/<path>,
// regular files only, fixed mtime, no owner names.
func pack(files []file) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	for _, fl := range files {
		rel, ok := strings.CutPrefix(fl.path, appDir+"/")
		if !ok {
			continue
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: "package/" + rel, Size: int64(len(fl.data)), Mode: int64(fl.mode),
			ModTime: mtime, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(fl.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// suggestID turns a directory name into an id when it can: lowercase,
// runs of other characters to '-', trimmed; "my-app" when nothing is left.
func suggestID(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-._")
	if len(s) > 64 {
		s = strings.TrimRight(s[:64], "-._")
	}
	if !receipt.ValidName(s) {
		return "my-app"
	}
	return s
}
