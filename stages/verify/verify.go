// Package verify checks a release the way a consumer would trust it: the
// archive digest against the expected one and the sidecar, a hardened
// extraction (which hashes every file once), the archive's name, the
// release rules of stages/release (release.Check, one check per rule, the
// rules install, update and doctor apply: the SBOM, the notices and the
// qualification verdicts among them), and the shipped piship binaries
// against build-info. Every failed check names itself and the file.
package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/stage/errcode"
)

// Check is one verification step.
type Check struct {
	Name   string `json:"name"`
	File   string `json:"file,omitempty"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Report is the outcome of verifying one release.
type Report struct {
	Source  string  `json:"source"`
	Release string  `json:"release,omitempty"` // <id>-<version>-<target>
	SHA256  string  `json:"sha256,omitempty"`  // of the archive, when the source is one
	OK      bool    `json:"ok"`
	Checks  []Check `json:"checks"`
}

// Err returns the first failed check as an error, or nil.
func (r *Report) Err() error {
	for _, c := range r.Checks {
		if !c.OK {
			where := ""
			if c.File != "" {
				where = " (" + c.File + ")"
			}
			return errcode.Newf(errcode.IntegrityFailed, "verify-release: check %s failed%s: %s", c.Name, where, c.Detail)
		}
	}
	return nil
}

// Options for Release.
type Options struct {
	// SHA256 is the archive digest the caller expects (from a channel, a
	// download page); empty: only the sidecar is compared, if present.
	SHA256 string
}

type verifier struct {
	r     *Report
	dir   string            // the release directory being checked
	name  release.Identity  // what the archive's name says (zero for a directory)
	files map[string]string // release-relative path -> sha256 of every file, hashed once
}

func (v *verifier) add(name, file string, err error) bool {
	c := Check{Name: name, File: file, OK: err == nil}
	if err != nil {
		c.Detail = err.Error()
	}
	v.r.Checks = append(v.r.Checks, c)
	return err == nil
}

// Release verifies an archive (<name>.tar.zst, or an earlier piship's
// <name>.tar.gz) or a release directory.
// Checks continue after a failure where they can, so one run reports every
// problem; a failure of the archive or extraction stops there.
func Release(ctx context.Context, source string, o Options) (*Report, error) {
	r := &Report{Source: source}
	v := &verifier{r: r}
	info, err := os.Stat(source)
	if err != nil {
		return nil, errcode.Newf(errcode.ConfigInvalid, "%v", err)
	}
	if !info.IsDir() && !info.Mode().IsRegular() {
		return nil, errcode.Newf(errcode.ConfigInvalid, "%v", &atomicfs.NotRegularError{Path: source, Mode: info.Mode()})
	}
	if info.IsDir() {
		v.dir = source
		if o.SHA256 != "" {
			v.add("archive-digest", source, fmt.Errorf("--sha256 names an archive digest, but %s is a directory", source))
		}
		v.checkTools()
	} else {
		tmp, err := os.MkdirTemp("", "piship-verify-*")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		if !v.extract(ctx, source, filepath.Join(tmp, "release"), o) {
			return finish(r), nil
		}
		v.dir = filepath.Join(tmp, "release")
	}
	v.checkDirectory(ctx)
	return finish(r), nil
}

// rules applies the release rules (release.Check, what install and doctor
// apply too), one check per rule.
func (v *verifier) rules() *release.Checked {
	c := release.Check(release.Input{Name: v.name, Files: v.files, Read: release.DirReader(v.dir)})
	for _, res := range c.Results {
		ch := Check{Name: string(res.Rule), File: res.File, OK: res.Err == nil}
		if res.Err != nil {
			ch.Detail = res.Err.Detail
		}
		v.r.Checks = append(v.r.Checks, ch)
	}
	return c
}

func finish(r *Report) *Report {
	r.OK = true
	for _, c := range r.Checks {
		r.OK = r.OK && c.OK
	}
	return r
}

// extract checks the archive digest while extracting it once.
func (v *verifier) extract(ctx context.Context, path, dest string, o Options) bool {
	name := filepath.Base(path)
	f, err := atomicfs.OpenRegular(path)
	if err != nil {
		return v.add("archive-read", name, err)
	}
	defer f.Close()
	x, err := archive.Extract(ctx, f, dest, archive.Limits{})
	if !v.add("archive-extract", name, err) {
		return false
	}
	v.r.SHA256, v.files = x.SHA256, x.Files
	ok := true
	n, why := release.ParseArchiveName(name)
	var nameErr error
	if why != "" {
		nameErr = fmt.Errorf("cannot tell the distribution, version and target from the archive name (%s): keep the release name <id>-<version>-<target>%s", why, archive.V2.Ext())
	}
	v.add("archive-name", name, nameErr) // the release's own checks still run
	v.name = n
	if o.SHA256 != "" {
		var e error
		if !strings.EqualFold(o.SHA256, x.SHA256) {
			e = fmt.Errorf("archive sha256 is %s, expected %s", x.SHA256, o.SHA256)
		}
		ok = v.add("archive-digest", name, e) && ok
	}
	if side, err := atomicfs.ReadRegular(path+".sha256", 0); err == nil {
		sum, e := release.ParseSidecar(side, name)
		if e == nil && sum != x.SHA256 {
			e = fmt.Errorf("archive sha256 is %s, the sidecar says %s", x.SHA256, sum)
		}
		ok = v.add("archive-sidecar", name+".sha256", e) && ok
	}
	return ok
}

func (v *verifier) checkDirectory(ctx context.Context) {
	dir := v.dir
	// A directory without release.json is most likely a build: say so. (An
	// archive without one fails required-files, as it does at install.)
	if _, err := os.Stat(filepath.Join(dir, releasejson.Name)); v.files == nil && os.IsNotExist(err) {
		reason := "no release.json: this is not a release"
		if q, err := atomicfs.ReadRegular(filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".piship-qualification.json"), 0); err == nil && bytes.Contains(q, []byte("unqualified-local")) {
			reason = "this is an unqualified local build (piship build): make a release with piship release"
		} else if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(payload.InventoryName))); err == nil {
			reason = "this is a payload of a local build, not a release: make one with piship release"
		}
		v.add("qualified", dir, fmt.Errorf("%s", reason))
		return
	}
	if v.files == nil {
		files, err := release.Scan(ctx, dir)
		if !v.add("release-read", dir, err) {
			return
		}
		v.files = files
	}
	if c := v.rules(); c.Release != nil {
		v.r.Release = c.Release.Distribution.ID + "-" + c.Release.Distribution.Version + "-" + c.Release.Target
	}
}

// checkTools checks the piship binaries a release directory ships beside
// install.sh (outside checksums.txt and the archive) against the digests
// in the build-info.json beside the directory. A binary no build-info
// describes fails: nothing executable in a release goes unchecked.
func (v *verifier) checkTools() {
	have, err := release.HashTools(v.dir)
	if err != nil || len(have) == 0 {
		if err != nil {
			v.add("tools", v.dir, err)
		}
		return
	}
	biPath := filepath.Clean(v.dir) + ".build-info.json"
	var bi struct {
		Tools []release.ToolDigest `json:"tools"`
	}
	data, err := atomicfs.ReadRegular(biPath, 0)
	if err == nil {
		err = json.Unmarshal(data, &bi)
	}
	if err != nil {
		v.add("tools", have[0].Name, fmt.Errorf("%s ships in the release directory, but %s does not describe it (%v): rebuild the release, or remove the binary", have[0].Name, filepath.Base(biPath), err))
		return
	}
	var problems []string
	for _, h := range have {
		i := slices.IndexFunc(bi.Tools, func(t release.ToolDigest) bool { return t.Name == h.Name })
		switch {
		case i < 0:
			problems = append(problems, "not in build-info.json: "+h.Name)
		case bi.Tools[i].SHA256 != h.SHA256:
			problems = append(problems, "changed: "+h.Name)
		}
	}
	v.add("tools", filepath.Base(biPath), joinProblems(problems, nil))
}

func joinProblems(problems []string, err error) error {
	if err != nil {
		problems = append([]string{err.Error()}, problems...)
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(problems, "; "))
}

// Set verifies a release set (<id>-<version>.SHA256SUMS, release.ReadSums):
// every archive it lists, beside it, each held to the set's digest. One
// report per archive, in the set's order; a set that cannot be read is an
// error.
func Set(ctx context.Context, sums string) (*release.Sums, []*Report, error) {
	set, err := release.ReadSums(sums)
	if err != nil {
		return nil, nil, errcode.Newf(errcode.ConfigInvalid, "%v", err)
	}
	var reps []*Report
	for _, e := range set.Entries {
		arc := set.Archive(e)
		if _, err := os.Stat(arc); err != nil {
			// Reported as a failed check of that archive, so the others
			// are still verified.
			reps = append(reps, finish(&Report{Source: arc, Release: trimExt(e.Archive),
				Checks: []Check{{Name: "archive-digest", File: e.Archive, Detail: fmt.Sprintf("listed in %s but not beside it: %v", filepath.Base(sums), err)}}}))
			continue
		}
		rep, err := Release(ctx, arc, Options{SHA256: e.SHA256})
		if err != nil {
			return nil, nil, err
		}
		reps = append(reps, rep)
	}
	return set, reps, nil
}

// trimExt is an archive's name without its extension (archive.TrimExt).
func trimExt(name string) string {
	base, _ := archive.TrimExt(name)
	return base
}
