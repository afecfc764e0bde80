package stages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/payload"
)

// ReleasePublish moves a finished release into <out>/releases/.
type ReleasePublish struct{}

func (ReleasePublish) Name() string    { return "release_publish" }
func (ReleasePublish) Version() string { return "1" }
func (ReleasePublish) Doc() string {
	return "Renames the finished release directory and its archive and sidecar from the staging directory into releases/. " +
		"An existing release of the same name is set aside first and removed only after the new one stands."
}

func (ReleasePublish) Attrs() []Attr {
	return []Attr{
		{Name: "staging", Type: cty.String, Required: true},
		{Name: "name", Type: cty.String, Required: true},
		{Name: "releases", Type: cty.String, Required: true, Doc: "<out>/releases"},
	}
}

func (ReleasePublish) Outputs() []Output {
	return []Output{{Name: "path", Type: cty.String}, {Name: "archive", Type: cty.String}}
}

// Run implements Kind.
func (ReleasePublish) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	staging, name, releases := stringOr(inv.Get("staging"), ""), stringOr(inv.Get("name"), ""), stringOr(inv.Get("releases"), "")
	if _, ok := payload.Lookup(staging); !ok {
		return nil, fmt.Errorf("no open staging directory %s: release_publish runs in the same release as release_inputs", staging)
	}
	if err := os.MkdirAll(releases, 0o755); err != nil {
		return nil, err
	}
	final := filepath.Join(releases, name)
	old := ""
	if _, err := os.Lstat(final); err == nil {
		old = filepath.Join(releases, ".old-"+name+"-"+sha256Hex([]byte(staging))[:12])
		os.RemoveAll(old)
		if err := os.Rename(final, old); err != nil {
			return nil, fmt.Errorf("cannot set the previous release aside: %v", err)
		}
	}
	if err := os.Rename(filepath.Join(staging, name), final); err != nil {
		if old != "" {
			_ = os.Rename(old, final)
		}
		return nil, err
	}
	// Files replace their predecessors atomically; the sidecar last, so a
	// sidecar always describes the archive beside it.
	for _, f := range []string{name + ".tar.gz", name + ".tar.gz.sha256"} {
		if err := os.Rename(filepath.Join(staging, f), filepath.Join(releases, f)); err != nil {
			return nil, err
		}
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			fmt.Fprintf(inv.Log, "%s: could not remove the replaced release %s: %v\n", inv.Pipeline, old, err)
		}
	}
	return map[string]cty.Value{"path": cty.StringVal(final), "archive": cty.StringVal(filepath.Join(releases, name+".tar.gz"))}, nil
}
