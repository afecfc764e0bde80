package stages

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/payload"
)

// Checksums writes checksums.txt for a release directory.
type Checksums struct{}

func (Checksums) Name() string    { return "checksums" }
func (Checksums) Version() string { return "1" }
func (Checksums) Doc() string {
	return "Writes checksums.txt in release_dir: sorted `<sha256>  <path>` lines (sha256sum format) for every file outside payload/, plus payload/metadata/inventory.json (which covers the payload)."
}

func (Checksums) Attrs() []Attr {
	return []Attr{{Name: "release_dir", Type: cty.String, Required: true}}
}

func (Checksums) Outputs() []Output {
	return []Output{{Name: "sha256", Type: cty.String, Doc: "sha256 of checksums.txt"}, {Name: "files", Type: cty.Number}}
}

// ChecksumsName is the checksums file of a release.
const ChecksumsName = "checksums.txt"

// ChecksumPaths lists the release files checksums.txt covers: all but
// checksums.txt itself, the payload (its inventory stands for it) and the
// shipped piship binaries.
func ChecksumPaths(releaseDir string) ([]string, error) {
	files, err := payload.Walk(releaseDir)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range files {
		switch {
		case f.Path == ChecksumsName:
		case isShippedTool(f.Path): // beside install.sh, not in the archive; build-info.json has their digests
		case strings.HasPrefix(f.Path, "payload/") && f.Path != "payload/"+payload.InventoryName:
		default:
			paths = append(paths, f.Path)
		}
	}
	sort.Strings(paths)
	return paths, nil
}

// Run implements Kind.
func (Checksums) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	dir := stringOr(inv.Get("release_dir"), "")
	paths, err := ChecksumPaths(dir)
	if err != nil {
		return nil, err
	}
	sums, err := payload.HashFiles(ctx, dir, paths)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for i, p := range paths {
		fmt.Fprintf(&b, "%s  %s\n", sums[i], p)
	}
	data := []byte(b.String())
	if err := payload.WriteFile(filepath.Join(dir, ChecksumsName), data, 0o644); err != nil {
		return nil, err
	}
	return map[string]cty.Value{"sha256": cty.StringVal(sha256Hex(data)), "files": cty.NumberIntVal(int64(len(paths)))}, nil
}
