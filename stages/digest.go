package stages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache"
)

// Digest hashes files. Its sha256 output is the digest of the sorted
// `<sha256>  <path>` lines (sha256sum format), so it changes when any file's
// content or the file set changes.
type Digest struct{}

func (Digest) Name() string    { return "digest" }
func (Digest) Version() string { return "1" }
func (Digest) Doc() string {
	return "Hashes files, directories and globs (** allowed). sha256 is the digest of the sorted sha256sum-style listing; files maps each path to its sha256."
}

func (Digest) Attrs() []Attr {
	return []Attr{
		{Name: "files", Type: cty.List(cty.String), Required: true, Doc: "files, directories or globs, relative to dir"},
		{Name: "dir", Type: cty.String, Doc: "base directory, relative to the pipeline file (default: its directory)"},
	}
}

func (Digest) Outputs() []Output {
	return []Output{
		{Name: "sha256", Type: cty.String, Doc: "sha256 of the sorted `<sha256>  <path>` lines"},
		{Name: "files", Type: cty.Map(cty.String), Doc: "path -> sha256"},
	}
}

// Run implements Kind.
func (Digest) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	dir := Resolve(inv.Dir, stringOr(inv.Get("dir"), "."))
	paths, err := ExpandFiles(dir, stringList(inv.Get("files")))
	if err != nil {
		return nil, err
	}
	sums := make(map[string]string, len(paths))
	h := sha256.New()
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sum, err := cache.HashFile(Resolve(dir, p))
		if err != nil {
			return nil, err
		}
		sums[p] = sum
		fmt.Fprintf(h, "%s  %s\n", sum, p)
	}
	return map[string]cty.Value{
		"sha256": cty.StringVal(hex.EncodeToString(h.Sum(nil))),
		"files":  mapVal(sums),
	}, nil
}
