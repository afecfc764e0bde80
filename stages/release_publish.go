package stages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/dist"
	"piship.dev/piship/stages/payload"
)

// ReleasePublish moves a finished release into <out>/releases/.
type ReleasePublish struct{}

func (ReleasePublish) Name() string    { return "release_publish" }
func (ReleasePublish) Version() string { return "1" }
func (ReleasePublish) Doc() string {
	return "Renames the finished release directory and its archive and sidecar from the staging directory into releases/. " +
		"An existing release of the same name is set aside first and removed only after the new one stands. " +
		"With ship_tools, a release for the platform piship runs on also gets this piship binary and its launcher in its directory " +
		"(beside install.sh, which uses them; not in the archive, not in checksums.txt; their digests go to build-info.json)."
}

func (ReleasePublish) Attrs() []Attr {
	return []Attr{
		{Name: "staging", Type: cty.String, Required: true},
		{Name: "name", Type: cty.String, Required: true},
		{Name: "releases", Type: cty.String, Required: true, Doc: "<out>/releases"},
		{Name: "ship_tools", Type: cty.Bool, Doc: "put piship and piship-launch into the release directory when target is the host's"},
		{Name: "target", Type: cty.String, Doc: "the release's target (<platform>-<arch>)"},
	}
}

func (ReleasePublish) Outputs() []Output {
	return []Output{{Name: "path", Type: cty.String}, {Name: "archive", Type: cty.String},
		{Name: "tools", Type: cty.List(toolType), Doc: "the shipped binaries: name, sha256, bytes"}}
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
	var tools []cty.Value
	if v := inv.Get("ship_tools"); !v.IsNull() && v.True() && stringOr(inv.Get("target"), "") == dist.HostTarget() {
		shipped, err := shipTools(filepath.Join(staging, name), inv.Getenv(SelfBinaryEnv))
		if err != nil {
			return nil, fmt.Errorf("cannot put the piship binaries into the release: %v", err)
		}
		for _, t := range shipped {
			tools = append(tools, cty.ObjectVal(map[string]cty.Value{
				"name": cty.StringVal(t.Name), "sha256": cty.StringVal(t.SHA256), "bytes": cty.NumberIntVal(t.Bytes),
			}))
		}
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
	toolList := cty.ListValEmpty(toolType)
	if len(tools) > 0 {
		toolList = cty.ListVal(tools)
	}
	return map[string]cty.Value{"path": cty.StringVal(final), "archive": cty.StringVal(filepath.Join(releases, name+".tar.gz")), "tools": toolList}, nil
}

var toolType = cty.Object(map[string]cty.Type{"name": cty.String, "sha256": cty.String, "bytes": cty.Number})

// ToolsOf reads release_publish's tools output.
func ToolsOf(v cty.Value) []ToolDigest {
	if v.IsNull() || !v.IsKnown() || !v.CanIterateElements() {
		return nil
	}
	var out []ToolDigest
	for it := v.ElementIterator(); it.Next(); {
		_, t := it.Element()
		n, _ := t.GetAttr("bytes").AsBigFloat().Int64()
		out = append(out, ToolDigest{Name: t.GetAttr("name").AsString(), SHA256: t.GetAttr("sha256").AsString(), Bytes: n})
	}
	return out
}

// ToolDigest describes a shipped binary in build-info.json.
type ToolDigest struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// HashTools describes the shipped binaries present in releaseDir.
func HashTools(releaseDir string) ([]ToolDigest, error) {
	var out []ToolDigest
	for _, name := range dist.ShippedTools() {
		p := filepath.Join(releaseDir, name)
		fi, err := os.Stat(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sum, err := cache.HashFile(p) // streamed: the binaries are tens of MB
		if err != nil {
			return nil, err
		}
		out = append(out, ToolDigest{Name: name, SHA256: sum, Bytes: fi.Size()})
	}
	return out, nil
}

// isShippedTool reports whether a release-relative slash path is one of
// the shipped binaries.
func isShippedTool(p string) bool {
	return slices.Contains(dist.ShippedTools(), p)
}

// SelfBinaryEnv names, in the run's environment (inv.Getenv), the path of
// the piship binary releases ship: the running piship command, as its
// main passes it to the run (not tests that run the CLI in-process, whose
// executable is a test binary). Empty ships nothing.
const SelfBinaryEnv = "PISHIP_SELF_BINARY"

// shipTools copies the piship binary exe, and piship-launch from beside it
// when present, into releaseDir (mode 0755), hashing each as it goes. It
// returns what it copied.
func shipTools(releaseDir, exe string) ([]ToolDigest, error) {
	if exe == "" {
		return nil, nil
	}
	names := dist.ShippedTools()
	srcs := []string{exe, filepath.Join(filepath.Dir(exe), names[1])}
	var shipped []ToolDigest
	for i, src := range srcs {
		data, err := os.ReadFile(src)
		if err != nil {
			if i > 0 && os.IsNotExist(err) {
				continue // a piship without its launcher: shims run piship launch
			}
			return nil, err
		}
		if err := payload.WriteFile(filepath.Join(releaseDir, names[i]), data, 0o755); err != nil {
			return nil, err
		}
		shipped = append(shipped, ToolDigest{Name: names[i], SHA256: sha256Hex(data), Bytes: int64(len(data))})
	}
	return shipped, nil
}
