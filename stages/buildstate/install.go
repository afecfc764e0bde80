package buildstate

// Installing an npm project into the runtime cache under the key InstallKey
// gives it: the runtime (through the npm_install stage) and every vendored
// Pi package (InstallPiPackage: the pi_packages stage and piship lock), so
// what a build places and what lock pins are the same bytes.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/npm"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/proc"
	"piship.dev/piship/stages/runtimecache"
	"piship.dev/piship/stages/semver"
	"piship.dev/piship/stages/stage/errcode"
)

// InstallPiPackage returns the runtime cache entry of a vendored Pi
// package's project (distDir/p.Dir), running npm ci into a new entry on a
// miss; hit says the entry was there. Build, release and piship lock (which
// pins the extension files from it) all install through here, so they
// install the same bytes; t is the target whose native packages npm
// installs (InstallArgs).
func InstallPiPackage(ctx context.Context, rt *runtimecache.Cache, distDir string, p distribution.LockPiPackage, log io.Writer, label string, t distribution.Target) (*runtimecache.Entry, bool, error) {
	dir := filepath.Join(distDir, filepath.FromSlash(p.Dir))
	pj, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return nil, false, errcode.Newf(errcode.ConfigInvalid, "Pi package %s: %v", p.Name, err)
	}
	pl, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return nil, false, errcode.Newf(errcode.ConfigInvalid, "Pi package %s: %v", p.Name, err)
	}
	nodeV, npmV, err := npm.Versions(ctx)
	if err != nil {
		return nil, false, errcode.Newf(errcode.ConfigUnavailable, "node and npm are needed to install Pi package %s: %v", p.Name, err)
	}
	key, inputs := InstallKey(p.Dir, pj, pl, nodeV, npmV, t)
	targetArgs, err := InstallArgs(t, npmV)
	if err != nil {
		return nil, false, fmt.Errorf("Pi package %s: %w", p.Name, err)
	}
	e, err := rt.Get(key, false)
	if err != nil {
		fmt.Fprintf(log, "Pi package %s: runtime cache entry %s is damaged, rebuilding it: %v\n", p.Name, key, err)
	}
	if e != nil {
		return e, true, nil
	}
	// A Pi package's peers (Pi itself, pi-ai, pi-tui, typebox ...) are
	// what Pi supplies to the extensions it loads: its lock has none of
	// them (npm install --legacy-peer-deps), and npm ci is told so.
	e, err = rt.CreateInputs(key, inputs, func(into string) error {
		return InstallProject(ctx, dir, into, log, label, append([]string{"--legacy-peer-deps"}, targetArgs...)...)
	})
	if err != nil {
		return nil, false, fmt.Errorf("Pi package %s: %w", p.Name, err)
	}
	return e, false, nil
}

// InstallArgs are the npm ci arguments that install the native packages
// of target t from a lock (npm >= 10.2: --os, --cpu, and --libc on linux);
// none for the host's own target, which npm installs by default.
func InstallArgs(t distribution.Target, npmV string) ([]string, error) {
	if t == distribution.HostTarget() {
		return nil, nil
	}
	// npm.Versions gives major.minor.
	if v, err := semver.Parse(npmV + ".0"); err != nil || semver.Compare(v, semver.Version{Major: 10, Minor: 2}) < 0 {
		return nil, errcode.Newf(errcode.ConfigUnavailable, "npm %s cannot install the packages of another target (%s): npm ci --os/--cpu/--libc needs npm >= 10.2; upgrade npm (npm install -g npm@latest) or release on a %s host", npmV, t, t)
	}
	args := []string{"--os=" + t.Platform, "--cpu=" + t.Arch}
	if l := t.Libc(); l != "" {
		args = append(args, "--libc="+l)
	}
	return args, nil
}

// InstallProject copies an npm project's package.json, package-lock.json
// and the local `file:` packages its lock names from runtimeDir into dir,
// runs npm ci there (npm's output labelled by label on logTo, extra
// arguments appended), and removes the copied local packages again: a
// runtime cache entry holds what npm installed, not its inputs. The
// npm_install stage installs the runtime through it, InstallPiPackage
// each vendored Pi package.
func InstallProject(ctx context.Context, runtimeDir, dir string, logTo io.Writer, label string, extra ...string) error {
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(runtimeDir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return err
		}
	}
	pl, _, err := distribution.ReadPackageLock(filepath.Join(runtimeDir, "package-lock.json"))
	if err != nil {
		return err
	}
	var copied []string
	for _, p := range pl.Packages {
		local, ok := strings.CutPrefix(p.Resolved, "file:")
		if !ok || filepath.IsAbs(local) {
			continue
		}
		src := filepath.Join(runtimeDir, filepath.FromSlash(local))
		dst := filepath.Join(dir, filepath.FromSlash(local))
		if err := payload.CopyPath(src, dst); err != nil {
			return fmt.Errorf("local package %s: %v", local, err)
		}
		copied = append(copied, dst)
	}
	// npm's output, line by line and labelled, like an exec stage's echo.
	log := &proc.LinePrefixer{W: logTo, Prefix: label + " | ", SkipBlank: true}
	err = npm.Ci(ctx, dir, log, extra...)
	log.Flush()
	if err != nil {
		return err
	}
	for _, c := range copied {
		if err := os.RemoveAll(c); err != nil {
			return err
		}
	}
	// Directories that only held the local packages go too.
	for _, c := range copied {
		for d := filepath.Dir(c); d != dir && strings.HasPrefix(d, dir); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break
			}
		}
	}
	return nil
}
