package stages

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
)

// What the consumer kinds (install, update_check, download, rollback,
// doctor) share: the homes they work in and the launcher the shims run.

// homeOptions resolves the three homes from the run's environment and the
// launcher the command shims run: the piship-launch kept in the install
// home (it starts in ~2 ms), else this binary's `launch` command. Only
// install puts the launcher there (keepLauncher); rollback, doctor and
// update's check just name it.
func homeOptions(inv *stage.Invocation) (home.Options, error) {
	homes, err := receipt.ResolveHomes(inv.Getenv)
	if err != nil {
		return home.Options{}, err
	}
	// home's lines about what it is doing (extracting, activated, rolled
	// back) are the stage's progress; its warnings the stage's log.
	o := home.Options{Homes: homes, Log: inv.Log, Progress: inv.Progress}
	if src := launcherBeside(); src != "" {
		o.Launcher = keptLauncher(src, homes.Install)
	} else if exe, err := os.Executable(); err == nil {
		o.Launcher = exe
	}
	return o, nil
}

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

// keepLauncher copies the launcher beside this piship into the install
// home unless the same bytes stand there already. Install calls it before
// writing shims that name the kept launcher. Comparing the two 3 MB files
// took ~3 ms of every install, so a stamp beside the kept launcher records
// both files' identities (cache.FileIdentity: any change to either file
// changes its change time) when they were last found equal.
func keepLauncher(installHome string) error {
	src := launcherBeside()
	if src == "" {
		return nil
	}
	_, err := keepLauncherFrom(src, installHome)
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

// launcherSpace is what keepLauncher may write into installHome: the
// launcher's size, unless the stamp says the same bytes are kept already
// (install's free space check counts it).
func launcherSpace(installHome string) int64 {
	src := launcherBeside()
	if src == "" || keptAlready(src, keptLauncher(src, installHome)) {
		return 0
	}
	fi, err := os.Stat(src)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// reclaimBudget reads PISHIP_RECLAIM_BUDGET_MS (default def).
func reclaimBudget(inv *stage.Invocation, def time.Duration) time.Duration {
	if v := inv.Getenv("PISHIP_RECLAIM_BUDGET_MS"); v != "" {
		if ms, err := strconv.Atoi(v); err == nil && ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return def
}
