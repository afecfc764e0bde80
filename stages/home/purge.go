package home

import (
	"context"

	"piship.dev/piship/stages/home/launch"
	"piship.dev/piship/stages/home/receipt"
)

// Purge removes everything piship keeps for id: the installation (as
// Uninstall: refused while a live runtime lease exists), its state
// directory (<state>/<id>, which holds the compile cache), its channel
// trust state and lock files, and the search tools its launches placed
// in Pi's agent bin directory: only files the search tools receipt
// records that still have the bytes of one of id's bundled tools (another
// distribution's start places them again; a file piship did not place,
// or one changed since, is left). uninstall --purge is the same call.
func Purge(ctx context.Context, o Options, id string) (*UninstallResult, error) {
	o.setDefaults()
	var tools []receipt.SearchTool
	if err := receipt.CheckID(id); err == nil {
		if rc, err := receipt.Read(o.Homes.Install, id); err == nil {
			for _, r := range append(append([]receipt.Release(nil), rc.Releases...), rc.Retained...) {
				tools = append(tools, r.SearchTools...)
			}
		}
	}
	res, err := Uninstall(ctx, o, id, true)
	if err != nil {
		return res, err
	}
	if bin, err := launch.AgentBinDir(o.Getenv); err == nil && len(tools) > 0 {
		res.Removed = append(res.Removed, launch.RemovePlacedTools(bin, tools)...)
	}
	return res, nil
}
