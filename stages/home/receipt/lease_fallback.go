package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"piship.dev/piship/stages/proc"
)

// FaultHook, when set, is called with the path of each lease file a launch
// is about to create and of each lock file about to be opened for writing;
// an error it returns is taken as that create's or open's error (a lock
// file is then opened read-only, as on a read-only file system). Tests set it to
// simulate a full or read-only file system where file modes cannot (root
// ignores them). It is nil in production.
var FaultHook func(path string) error

func fault(path string) error {
	if FaultHook != nil {
		return FaultHook(path)
	}
	return nil
}

// EnvRuntimeDir is the variable naming the per-user runtime directory
// (XDG Base Directory specification), the first place of a fallback lease.
const EnvRuntimeDir = "XDG_RUNTIME_DIR"

// FallbackLeaseRoots returns the directories, in order of preference, where
// a launch whose install home refuses its lease (full, read-only) records
// it instead: <$XDG_RUNTIME_DIR>/piship/leases/<id>-<key>/ and
// <os.TempDir()>/piship-<uid>/leases/<id>-<key>/, key naming the install
// home (a hash of its absolute path and id), so two homes never share one.
// Both lie outside the install home and, usually, on another file system
// (a tmpfs): the fault that filled or froze the install home does not reach
// them. ListLeases reads every one of them.
func FallbackLeaseRoots(installHome, id string) []string {
	abs, err := filepath.Abs(installHome)
	if err != nil {
		abs = filepath.Clean(installHome)
	}
	sum := sha256.Sum256([]byte(abs + "\x00" + id))
	key := id + "-" + hex.EncodeToString(sum[:8])
	var out []string
	for _, b := range privateBases() {
		out = append(out, filepath.Join(b, "leases", key))
	}
	return out
}

// privateBases are the per-user directories fallback leases live under.
func privateBases() []string {
	var out []string
	if d := os.Getenv(EnvRuntimeDir); d != "" && filepath.IsAbs(d) {
		out = append(out, filepath.Join(d, "piship"))
	}
	if t := os.TempDir(); filepath.IsAbs(t) {
		out = append(out, filepath.Join(t, privateTempName()))
	}
	return out
}

// ensurePrivate creates base (mode 0700) if missing and reports whether it
// is a directory only this user can write: a directory another user made
// in a shared temporary directory is not used (they could delete the
// leases in it, or plant some).
func ensurePrivate(base string) error {
	if err := os.Mkdir(base, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return checkPrivate(base)
}

func checkPrivate(base string) error {
	fi, err := os.Lstat(base)
	if err != nil {
		return err
	}
	if !fi.IsDir() || !ownedPrivately(fi) {
		return fmt.Errorf("%s is not a directory only this user can write: not used", base)
	}
	return nil
}

// writeFallbackLease writes the lease to the first fallback root that
// takes it, and returns the errors of those that did not.
func writeFallbackLease(l *Lease, data []byte, installHome string) (path string, errs []string) {
	for _, root := range FallbackLeaseRoots(installHome, l.App) {
		base := filepath.Dir(filepath.Dir(root)) // <base>/leases/<key>
		if err := ensurePrivate(base); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		p := filepath.Join(root, l.Version, l.Instance+".json")
		if err := writeLeaseFile(p, data); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		return p, errs
	}
	return "", errs
}

// fallbackLeaseDirs lists the fallback roots of id that exist and are
// private to this user, for ListLeases.
func fallbackLeaseDirs(installHome, id string) []string {
	var out []string
	for _, root := range FallbackLeaseRoots(installHome, id) {
		if checkPrivate(filepath.Dir(filepath.Dir(root))) == nil {
			if fi, err := os.Stat(root); err == nil && fi.IsDir() {
				out = append(out, root)
			}
		}
	}
	return out
}

// unregisteredUses returns a live Lease-shaped record for each running
// process whose command line, executable or working directory names a
// directory of apps/<id> (Linux only: elsewhere nothing is found), so a
// run that could register nowhere still holds its version. Versions
// already held by a registered lease are left out.
func unregisteredUses(installHome, id string, held map[string]bool) []Lease {
	app := AppDir(installHome, id)
	dirs := []string{app}
	if real, err := filepath.EvalSymlinks(app); err == nil && real != app {
		dirs = append(dirs, real)
	}
	refs, ok := proc.Referencing(dirs)
	if !ok {
		return nil
	}
	var out []Lease
	seen := map[string]bool{}
	for _, r := range refs {
		var rest string
		for _, d := range dirs {
			if s, ok := strings.CutPrefix(r.Path, filepath.Clean(d)+string(filepath.Separator)); ok {
				rest = s
			}
		}
		name, _, _ := strings.Cut(rest, string(filepath.Separator))
		version := name
		if !ValidVersion(name) {
			version = RetainedVersion(name)
		}
		if version == "" || held[version] || seen[fmt.Sprint(version, r.PID)] {
			continue
		}
		seen[fmt.Sprint(version, r.PID)] = true
		verb := "is"
		if r.Via == "command line" {
			verb = "names"
		}
		start, _ := proc.StartTime(r.PID)
		out = append(out, Lease{App: id, Version: version, PID: r.PID, Host: Hostname(), Start: start.UTC(), Live: true,
			Reason: fmt.Sprintf("not registered: its %s %s %s, so the version is possibly in use", r.Via, verb, r.Path)})
	}
	return out
}
