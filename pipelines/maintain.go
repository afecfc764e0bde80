package pipelines

import (
	"context"
	"fmt"
	"io"

	"piship.dev/piship/stages/home"
)

// The consumer commands that run no pipeline (repair, uninstall, purge) go
// through here too, so every consumer command reaches the install home the
// same way: c's environment and streams, home.ForEnv's Options (as the
// consumer kinds build theirs), and with c.Progress set the lines about what
// the command is doing rendered as a run's progress (warnings with them, so
// they never cut the live view and become JSON events in json mode); without
// it only warnings print.

// homeOptions are the home.Options of the operation what; call done when it
// has finished.
func homeOptions(c Config, what string) (o home.Options, done func(), err error) {
	if o, err = home.ForEnv(c.Getenv, c.Stderr, io.Discard); err != nil || c.Progress == "" {
		return o, func() {}, err
	}
	o.Progress, done = LogProgress(c, what)
	o.Log = o.Progress
	return o, done, nil
}

// Repair restores the active release of id from its archive (home.Repair;
// from: an archive or directory, empty for the kept or published one). Its
// failure says "repair ID: ..."; one to find the homes says only that.
func Repair(ctx context.Context, c Config, id, from string) (*home.RepairResult, error) {
	o, done, err := homeOptions(c, "repair")
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := home.Repair(ctx, o, id, from)
	if err != nil {
		return nil, fmt.Errorf("repair %s: %w", id, err)
	}
	return res, nil
}

// Uninstall removes the installed distribution id (home.Uninstall), and
// with purge its state, trust state and placed search tools too
// (home.Purge). Its failure says "uninstall ID: ...", as Repair's.
func Uninstall(ctx context.Context, c Config, id string, purge bool) (*home.UninstallResult, error) {
	what := "uninstall"
	if purge {
		what = "purge"
	}
	o, done, err := homeOptions(c, what)
	if err != nil {
		return nil, err
	}
	defer done()
	var res *home.UninstallResult
	if purge {
		res, err = home.Purge(ctx, o, id)
	} else {
		res, err = home.Uninstall(ctx, o, id, false)
	}
	if err != nil {
		return nil, fmt.Errorf("uninstall %s: %w", id, err)
	}
	return res, nil
}
