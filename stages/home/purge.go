package home

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
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
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if bin, err := launch.AgentBinDir(getenv); err == nil && len(tools) > 0 {
		res.Removed = append(res.Removed, removePlacedTools(bin, tools)...)
	}
	return res, nil
}

// removePlacedTools removes the agent bin directory's copies of tools
// that the search tools receipt records with one of tools' digests, and
// their records (the receipt itself when none is left).
func removePlacedTools(bin string, tools []receipt.SearchTool) []string {
	rpath := filepath.Join(bin, launch.ToolsReceiptName)
	data, err := os.ReadFile(rpath)
	if err != nil {
		return nil
	}
	var rc struct {
		Schema string                     `json:"schema"`
		Tools  map[string]json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(data, &rc) != nil || rc.Schema != launch.ToolsReceiptSchema {
		return nil
	}
	ours := map[string]bool{}
	for _, t := range tools {
		ours[t.SHA256] = true
	}
	var removed []string
	for exe, raw := range rc.Tools {
		var rec struct{ SHA256 string }
		json.Unmarshal(raw, &rec)
		p := filepath.Join(bin, exe)
		if !ours[rec.SHA256] || exe != filepath.Base(exe) {
			continue
		}
		if sum, err := cache.HashFile(p); err == nil && sum == rec.SHA256 {
			if os.Remove(p) == nil {
				removed = append(removed, p)
			}
		}
		delete(rc.Tools, exe)
	}
	if len(rc.Tools) == 0 {
		if os.Remove(rpath) == nil {
			removed = append(removed, rpath)
		}
		return removed
	}
	out, _ := json.MarshalIndent(rc, "", "  ")
	atomicfs.WriteFile(rpath, append(out, '\n'), 0o644, atomicfs.Options{})
	return removed
}
