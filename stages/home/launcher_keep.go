package home

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/stage/errcode"
)

// The launcher the command shims run: the piship-launch beside the running
// piship, kept in the install home so shims never depend on where piship
// runs from, and its states as doctor reports them.

// launcherBeside returns the piship-launch binary beside this piship, or "".
func launcherBeside() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	for _, name := range []string{"piship-launch", "piship-launch.exe"} {
		p := filepath.Join(filepath.Dir(exe), name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// keptLauncher is where the launcher is kept: shims must not depend on
// where piship runs from (a downloaded release directory, say).
func keptLauncher(src, installHome string) string {
	return filepath.Join(receipt.LauncherDir(installHome), filepath.Base(src))
}

// KeepLauncher copies o's launcher source (the piship-launch beside this
// piship) into the install home unless the same bytes stand there already. Install calls it before
// writing shims that name the kept launcher. Comparing the two 3 MB files
// took ~3 ms of every install, so a stamp beside the kept launcher records
// both files' identities (cache.FileIdentity: any change to either file
// changes its change time) when they were last found equal.
func KeepLauncher(o Options) error {
	if o.LauncherSource == "" {
		return nil
	}
	_, err := keepLauncherFrom(o.LauncherSource, o.Homes.Install)
	return err
}

// What keepLauncherFrom found at the kept launcher before writing it.
const (
	launcherCurrent  = ""         // the same bytes as src: nothing written
	launcherMissing  = "missing"  // nothing there
	launcherOutdated = "outdated" // what piship last kept, and src changed since (piship was updated)
	launcherModified = "modified" // not what piship last kept: something changed it
)

// keepLauncherFrom keeps src as the launcher of installHome and says what
// stood there: launcherCurrent when nothing was written. A kept launcher
// that differs from src is outdated when the stamp shows it is the file
// piship last wrote or found equal (its identity unchanged since), and
// modified otherwise (doctor reports that as damage).
func keepLauncherFrom(src, installHome string) (string, error) {
	dst := keptLauncher(src, installHome)
	stampPath := dst + ".stamp"
	stamp := func() (string, bool) { return launcherStamp(src, dst) }
	if keptAlready(src, dst) {
		return launcherCurrent, nil
	}
	old, _ := os.ReadFile(stampPath)
	data, err := os.ReadFile(src)
	if err != nil {
		return launcherCurrent, err
	}
	state := launcherCurrent
	if have, err := os.ReadFile(dst); err != nil {
		state = launcherMissing
	} else if !bytes.Equal(have, data) {
		state = launcherModified
		lines := strings.Split(string(old), "\n")
		if dstID, ok := cache.FileIdentity(dst); ok && len(lines) >= 2 && lines[1] == dstID {
			state = launcherOutdated
		}
	}
	if state != launcherCurrent {
		if err := atomicfs.WriteFileAll(dst, data, 0o755); err != nil {
			return state, errcode.Newf(errcode.ConfigUnavailable, "cannot keep the launcher in %s: %v", filepath.Dir(dst), err)
		}
	}
	if st, ok := stamp(); ok {
		// Failing to write the stamp only costs the next install a compare.
		_ = atomicfs.WriteFileAll(stampPath, []byte(st), 0o644)
	}
	return state, nil
}

// launcherStamp is the stamp of src kept as dst: both files' identities.
func launcherStamp(src, dst string) (string, bool) {
	srcID, ok1 := cache.FileIdentity(src)
	dstID, ok2 := cache.FileIdentity(dst)
	return srcID + "\n" + dstID + "\n", ok1 && ok2
}

// keptAlready reports whether dst's stamp says it holds src's bytes.
func keptAlready(src, dst string) bool {
	st, ok := launcherStamp(src, dst)
	if !ok {
		return false
	}
	b, err := os.ReadFile(dst + ".stamp")
	return err == nil && string(b) == st
}

// LauncherSpace is what KeepLauncher may write into the install home: the
// launcher's size, unless the stamp says the same bytes are kept already
// (install's free space check counts it).
func LauncherSpace(o Options) int64 {
	src := o.LauncherSource
	if src == "" || keptAlready(src, keptLauncher(src, o.Homes.Install)) {
		return 0
	}
	fi, err := os.Stat(src)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// CheckKeptLauncher refreshes the kept launcher of a report's active
// installation and records what it found: an outdated one (piship was
// updated since the install) is replaced as a routine refresh; a missing or
// modified one is damage, and replaced too.
func CheckKeptLauncher(rep *DoctorReport, o Options) {
	src, installHome := o.LauncherSource, o.Homes.Install
	if src == "" || rep.Active == "" {
		return
	}
	kept := keptLauncher(src, installHome)
	if _, err := os.Stat(filepath.Dir(kept)); err != nil {
		return
	}
	state, err := keepLauncherFrom(src, installHome)
	switch state {
	case launcherOutdated:
		rep.Repaired = append(rep.Repaired, DoctorItem{Code: DoctorLauncherOutdated, Path: kept, Detail: "replaced by the piship-launch beside this piship (piship was updated since it was kept)"})
	case launcherModified, launcherMissing:
		rep.Found = append(rep.Found, DoctorItem{Code: DoctorLauncherModified, Path: kept,
			Detail: map[string]string{launcherModified: "the kept launcher is not the one piship kept: something changed it", launcherMissing: "the kept launcher is missing: the command shims do not run"}[state]})
	}
	if err != nil {
		rep.Found = append(rep.Found, DoctorItem{Code: DoctorLauncherModified, Path: kept, Detail: fmt.Sprintf("could not be replaced: %v", err)})
	} else if state == launcherModified || state == launcherMissing {
		rep.Repaired = append(rep.Repaired, DoctorItem{Code: DoctorLauncherModified, Path: kept, Detail: "replaced by the piship-launch beside this piship"})
	}
}
