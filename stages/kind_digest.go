package stages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/stage"
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

// DigestConfig is the configuration of a digest stage.
type DigestConfig struct {
	Files []string `cty:"files" required:"true" doc:"files, directories or globs, relative to dir"`
	Dir   string   `cty:"dir" doc:"base directory, relative to the pipeline file (default: its directory)"`
}

// DigestOutputs are the outputs of a digest stage.
type DigestOutputs struct {
	SHA256 string            "cty:\"sha256\" doc:\"sha256 of the sorted `<sha256>  <path>` lines\""
	Files  map[string]string `cty:"files" doc:"path -> sha256"`
}

// Run implements stage.Typed.
func (Digest) Run(ctx context.Context, inv *stage.Invocation, c DigestConfig) (DigestOutputs, error) {
	if c.Dir == "" {
		c.Dir = "."
	}
	dir := stage.Resolve(inv.Dir, c.Dir)
	paths, err := ExpandFiles(dir, c.Files)
	if err != nil {
		return DigestOutputs{}, err
	}
	sums := make(map[string]string, len(paths))
	h := sha256.New()
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return DigestOutputs{}, err
		}
		sum, err := cache.HashFile(stage.Resolve(dir, p))
		if err != nil {
			return DigestOutputs{}, err
		}
		sums[p] = sum
		fmt.Fprintf(h, "%s  %s\n", sum, p)
	}
	return DigestOutputs{SHA256: hex.EncodeToString(h.Sum(nil)), Files: sums}, nil
}
