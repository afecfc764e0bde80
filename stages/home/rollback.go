package home

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/home/receipt"
)

// Rollback makes the previous release of id active again, under the launch
// gate. It does not scan the previous payload (two stats: its lock and its
// entry still stand); doctor verifies it. Afterwards there is no previous
// release, so a second rollback is refused (ROLLBACK_FAILED): install or
// update to move forward. The version rolled back from stays installed
// until doctor reclaims it.
func Rollback(ctx context.Context, o Options, id string) (*receipt.Receipt, error) {
	unlock, err := o.maintain(ctx, id)
	if err != nil {
		return nil, err
	}
	home := o.Homes.Install
	defer unlock()
	release, err := receipt.TakeGate(ctx, home, id, o.GateWait)
	if err != nil {
		return nil, err
	}
	defer release()
	rc, err := receipt.Read(home, id)
	if errors.Is(err, receipt.ErrNotInstalled) {
		return nil, receipt.Errorf(receipt.CodeRollback, "%s is not installed in %s: nothing to roll back", id, home)
	}
	if err != nil {
		return nil, err
	}
	if rc.Previous == "" {
		if rc.RolledBackFrom != "" {
			return nil, receipt.Errorf(receipt.CodeRollback, "%s was already rolled back from %s to %s: a second rollback is refused; install or update to move forward", id, rc.RolledBackFrom, rc.Active)
		}
		return nil, receipt.Errorf(receipt.CodeRollback, "%s %s has no previous release to roll back to", id, rc.Active)
	}
	prev := rc.Find(rc.Previous)
	if err := receipt.CheckInside(home, id, prev); err != nil {
		return nil, receipt.Errorf(receipt.CodeRollback, "the previous release %s %s cannot be rolled back to: %w", id, prev.Version, err)
	}
	for _, p := range []string{filepath.Join(prev.Payload, "piship.lock"), filepath.Join(prev.Payload, filepath.FromSlash(prev.Entry))} {
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			return nil, receipt.Errorf(receipt.CodeRollback, "the previous release %s %s is no longer complete (%s is missing): reinstall it instead", id, prev.Version, p)
		}
	}
	var oldCommand string
	if a := rc.Find(rc.Active); a != nil {
		oldCommand = a.Command
	}
	if oldCommand != prev.Command || !isShimOf(shimPaths(o.Homes.Bin, prev.Command)[0], id) {
		if o.Launcher == "" {
			o.Launcher = launcherFromShim(shimPaths(o.Homes.Bin, oldCommand)[0])
		}
		if _, err := o.writeShims(id, prev.Command, prev.Target); err != nil {
			return nil, err
		}
	}
	rc.RolledBackFrom, rc.Active, rc.Previous = rc.Active, prev.Version, ""
	rc.UpdatedAt = o.Now().UTC()
	if err := receipt.WriteWith(home, rc, *o.Renamer); err != nil {
		return nil, receipt.Errorf(receipt.CodeRollback, "%w", err)
	}
	if oldCommand != "" && oldCommand != prev.Command {
		o.removeShims(id, oldCommand)
	}
	o.progressf("%s rolled back from %s to %s", id, rc.RolledBackFrom, rc.Active)
	return rc, nil
}

// launcherFromShim returns the piship binary a POSIX shim written by
// ShimScript executes, or "".
func launcherFromShim(path string) string {
	data, err := atomicfs.ReadRegular(path, 0)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n") {
		rest, ok := strings.CutPrefix(line, "exec '")
		if !ok {
			continue
		}
		var out []byte
		for i := 0; i < len(rest); i++ {
			if rest[i] != '\'' {
				out = append(out, rest[i])
				continue
			}
			if len(rest) >= i+4 && rest[i:i+4] == `'\''` {
				out = append(out, '\'')
				i += 3
				continue
			}
			return string(out)
		}
	}
	return ""
}
