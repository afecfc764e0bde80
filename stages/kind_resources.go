package stages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/pinned"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
)

// Resources copies the distribution's resources and pinned tools into the
// payload, optionally on top of the previous payload's runtime part.
type Resources struct{}

func (Resources) Name() string    { return "resources" }
func (Resources) Version() string { return "1" }
func (Resources) Doc() string {
	return "Copies the distribution's resources into dest as they are and its tools into dest/tools (each checked against its pinned sha256; " +
		"https sources are downloaded once into <piship cache>/tools/<sha256>). With previous set, first links the previous payload into dest except resources, tools, bin, the lock and the inventory."
}

// ResourcesConfig is the configuration of a resources stage.
type ResourcesConfig struct {
	Distribution string `cty:"distribution" required:"true" doc:"the distribution directory"`
	Dest         string `cty:"dest" required:"true" doc:"the payload root"`
	Previous     string `cty:"previous" doc:"a previous payload whose runtime part is reused"`
}

// ResourcesOutputs are the outputs of a resources stage.
type ResourcesOutputs struct {
	Files int `cty:"files" doc:"resource and tool files copied"`
}

// Run implements stage.Typed.
func (Resources) Run(ctx context.Context, inv *stage.Invocation, c ResourcesConfig) (ResourcesOutputs, error) {
	d, err := buildstate.LoadManifest(stage.Resolve(inv.Dir, c.Distribution))
	if err != nil {
		return ResourcesOutputs{}, err
	}
	dest := c.Dest
	if prev := c.Previous; prev != "" {
		if err := payload.LinkTree(prev, dest, payload.DistributionOwned); err != nil {
			return ResourcesOutputs{}, fmt.Errorf("cannot reuse the previous payload %s: %v", prev, err)
		}
	}
	n := 0
	for _, r := range d.Resources {
		files, err := ExpandFiles(d.Dir, []string{r})
		if err != nil {
			return ResourcesOutputs{}, errcode.Newf(errcode.ConfigInvalid, "resource %s: %v", r, err)
		}
		for _, f := range files {
			if err := payload.CopyPath(filepath.Join(d.Dir, filepath.FromSlash(f)), filepath.Join(dest, filepath.FromSlash(f))); err != nil {
				return ResourcesOutputs{}, err
			}
			n++
		}
	}
	for _, name := range sortedToolNames(d) {
		t := d.Tools[name]
		if err := placeTool(ctx, inv, d.Dir, name, t.Source, t.SHA256, filepath.Join(dest, "tools", name)); err != nil {
			return ResourcesOutputs{}, err
		}
		n++
	}
	return ResourcesOutputs{Files: n}, nil
}

// placeTool reads a pinned executable from the distribution directory,
// or from <piship cache>/tools/<sha256>, downloaded there once
// (stages/pinned), and writes it to dst only when its sha256 is the pin.
func placeTool(ctx context.Context, inv *stage.Invocation, distDir, name, source, want, dst string) error {
	var data []byte
	if strings.HasPrefix(source, "https://") {
		home, err := cache.Home(inv.Getenv)
		if err != nil {
			return errcode.Newf(errcode.ConfigUnavailable, "tool %s: %v", name, err)
		}
		if data, _, err = pinned.Fetch(ctx, pinned.File{
			URL: source, SHA256: strings.ToLower(want), Path: filepath.Join(home, "tools", strings.ToLower(want)), Max: maxTool,
			PinnedBy: "the distribution", Fix: "check the source, then update the pin and run piship lock", Client: toolClient,
		}); err != nil {
			return fmt.Errorf("tool %s: %w", name, err)
		}
	} else {
		var err error
		if data, err = os.ReadFile(filepath.Join(distDir, filepath.FromSlash(source))); err != nil {
			return fmt.Errorf("tool %s: %v", name, err)
		}
		if got := canon.SHA256Hex(data); !strings.EqualFold(got, want) {
			return errcode.Newf(errcode.IntegrityFailed, "tool %s (%s) has sha256 %s, the distribution pins %s: check the source, then update the pin and run piship lock", name, source, got, want)
		}
	}
	return atomicfs.WriteFileAll(dst, data, 0o755)
}

// maxTool bounds a tool's download.
const maxTool = 1 << 30

// toolClient downloads tools; tests swap it.
var toolClient = pinned.DefaultClient

func sortedToolNames(d *distribution.Distribution) []string {
	names := make([]string, 0, len(d.Tools))
	for n := range d.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
