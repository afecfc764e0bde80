package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"piship.dev/piship/stages/home/receipt"
)

// surfaceEntry is one thing of the homes that decides what runs for a
// distribution: whoever can write it can replace what runs as the user.
type surfaceEntry struct {
	path string
	what string
	// walk: everything below path too (a directory tree).
	walk bool
	// rel is the release a version directory holds (nil for the others):
	// its receipt record says which of its files are executable.
	rel *receipt.Release
}

// runSurface is THE list of what of the homes decides what runs for id
// (see the package documentation, "What decides what runs"): the one
// list doctor checks the modes of and repair restores them on. Every
// entry is piship's own: the install home and, below it, receipts/ and
// the receipt (which version runs), apps/ and apps/<id>/, the active and
// previous version directories (a rollback runs the previous), trust/,
// trust/<id>.json and trust/<id>/ (what an update accepts), the launcher
// directory with the kept launcher and its stamp, and the command shim(s)
// of the active release when they are piship's shims of id. The bin home
// itself and the state home are not: they are shared with the user's
// other programs, and piship did not necessarily make them. A record
// outside apps/<id>/ is not walked (doctor reports it as
// PAYLOAD_OUTSIDE, and nothing of it is read).
func (o *Options) runSurface(id string, rc *receipt.Receipt) []surfaceEntry {
	home := o.Homes.Install
	out := []surfaceEntry{
		{path: home, what: "the install home"},
		{path: filepath.Join(home, "receipts"), what: "the receipts directory"},
		{path: receipt.ReceiptPath(home, id), what: "the receipt of " + id + " (it says which version runs)"},
		{path: filepath.Join(home, "apps"), what: "the apps directory"},
		{path: receipt.AppDir(home, id), what: "the directory of " + id + "'s versions"},
		{path: filepath.Join(home, "trust"), what: "the trust directory"},
		{path: receipt.TrustPath(home, id), what: "the channel trust state of " + id},
		{path: receipt.TrustDir(home, id), what: "the trusted TUF metadata of " + id + " (what an update accepts)", walk: true},
		{path: receipt.LauncherDir(home), what: "the kept launcher (the command shims run it)", walk: true},
	}
	for _, role := range []struct{ name, version string }{{"active", rc.Active}, {"previous", rc.Previous}} {
		if r := rc.Find(role.version); r != nil && receipt.CheckInside(home, id, r) == nil {
			out = append(out, surfaceEntry{path: r.Dir, what: fmt.Sprintf("the %s release %s %s", role.name, id, r.Version), walk: true, rel: r})
		}
	}
	if a := rc.Find(rc.Active); a != nil && a.Command != "" {
		for _, p := range shimPaths(o.Homes.Bin, a.Command) {
			if isShimOf(p, id) {
				out = append(out, surfaceEntry{path: p, what: "the command shim of " + id})
			}
		}
	}
	return out
}

// modeFinding is a file or directory of the run surface whose mode is
// not what piship writes.
type modeFinding struct {
	path  string
	mode  fs.FileMode
	want  fs.FileMode // the permission bits repair restores
	why   string      // what is wrong, in words
	code  string      // DoctorModeUnsafe or DoctorModeModified
	entry *surfaceEntry
}

// maxModeFindings bounds the mode findings of one run.
const maxModeFindings = 50

// modeFindings walks the run surface and returns what is not as piship
// wrote it: an unsafe mode (UnsafeMode) anywhere, and in a version
// directory whose receipt recorded its executables, an executable bit
// added or removed. A path that does not exist is no finding (doctor
// reports missing files by their digests).
func modeFindings(entries []surfaceEntry) []modeFinding {
	var out []modeFinding
	for i := range entries {
		e := &entries[i]
		var execs map[string]bool
		if e.rel != nil && e.rel.Executables != nil && runtime.GOOS != "windows" {
			execs = map[string]bool{}
			for _, p := range *e.rel.Executables {
				execs[p] = true
			}
		}
		check := func(p string, m fs.FileMode) {
			if len(out) >= maxModeFindings || m&fs.ModeSymlink != 0 {
				return
			}
			var exec *bool
			if execs != nil && m.IsRegular() {
				rel, err := filepath.Rel(e.path, p)
				if err == nil {
					x := execs[filepath.ToSlash(rel)]
					exec = &x
				}
			}
			want := restoredMode(m, exec)
			why := UnsafeMode(m)
			code := DoctorModeUnsafe
			if why == "" {
				if exec == nil || (m.Perm()&0o111 != 0) == *exec {
					return
				}
				code, why = DoctorModeModified, "the executable bit was removed"
				if !*exec {
					why = "made executable"
				}
			}
			out = append(out, modeFinding{path: p, mode: m, want: want, why: why, code: code, entry: e})
		}
		fi, err := os.Lstat(e.path)
		if err != nil {
			continue
		}
		if !e.walk || !fi.IsDir() {
			check(e.path, fi.Mode())
			continue
		}
		filepath.WalkDir(e.path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if len(out) >= maxModeFindings {
				return fs.SkipAll
			}
			if info, err := d.Info(); err == nil {
				check(p, info.Mode())
			}
			return nil
		})
	}
	return out
}

// UnsafeMode says what is unsafe about the mode of an installed file or
// directory ("" when nothing): the one rule doctor checks modes by.
func UnsafeMode(m fs.FileMode) string {
	var why []string
	if m&fs.ModeSetuid != 0 {
		why = append(why, "setuid")
	}
	if m&fs.ModeSetgid != 0 {
		why = append(why, "setgid")
	}
	if m&fs.ModeSticky != 0 {
		why = append(why, "sticky")
	}
	// Windows has no group or other bits: Go reports every writable file
	// as 0666 there.
	if m&fs.ModeSymlink == 0 && m.Perm()&0o022 != 0 && runtime.GOOS != "windows" {
		why = append(why, "writable by group or others")
	}
	return strings.Join(why, ", ")
}

// restoredMode is the permission bits piship writes in place of m: no
// setuid, setgid or sticky bit, nobody but the owner may write, and, when
// the receipt says (exec not nil), executable where it was readable or
// not executable at all. What the user's umask took away stays away.
func restoredMode(m fs.FileMode, exec *bool) fs.FileMode {
	p := m.Perm() &^ 0o022
	if exec != nil {
		if *exec {
			p |= (p & 0o444) >> 2
		} else {
			p &^= 0o111
		}
	}
	return p
}

// restoreModes gives every finding the mode piship writes (chmod: one
// call per path, each atomic, so a killed repair leaves every mode the
// old or the restored one). It returns what it changed, as
// "path (old -> new)".
func restoreModes(found []modeFinding) ([]string, error) {
	var done []string
	for _, f := range found {
		if err := os.Chmod(f.path, f.want); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return done, receipt.Errorf(receipt.CodeUnavailable, "cannot restore the mode of %s: %v", f.path, err)
		}
		done = append(done, fmt.Sprintf("%s (%s -> %s)", f.path, f.mode, f.want))
	}
	slices.Sort(done)
	return done, nil
}

// modeAdvice is what doctor says to do about a mode finding.
func modeAdvice(id string, f modeFinding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: mode %s (%s)", f.entry.what, f.mode, f.why)
	if f.code == DoctorModeUnsafe {
		b.WriteString(": piship never writes it so, and whoever can change it can replace what runs as you")
	} else {
		b.WriteString(": install recorded another mode")
	}
	fmt.Fprintf(&b, "; run piship repair %s, which restores it to %s", id, f.want)
	if f.entry.rel != nil {
		fmt.Fprintf(&b, " (or reinstall %s %s)", id, f.entry.rel.Version)
	}
	return b.String()
}
