package stages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/stage"
)

// Publish renames the finished staging directory to <out>/<id> and writes
// the build stamp and the qualification marker beside it.
type Publish struct{}

func (Publish) Name() string    { return "publish" }
func (Publish) Version() string { return "1" }
func (Publish) Doc() string {
	return "Moves the finished staging directory to <out>/<id> (the previous payload is set aside and removed only after), then writes " +
		"<out>/<id>.piship-build.json {key, runtimeKey, inventory} and <out>/<id>.piship-qualification.json {qualification: unqualified-local}."
}

// PublishConfig is the configuration of a publish stage.
type PublishConfig struct {
	Staging         string `cty:"staging" required:"true" doc:"the finished staging directory (dist_inputs' staging)"`
	Key             string `cty:"key" required:"true" doc:"the build key, written to the stamp"`
	RuntimeKey      string `cty:"runtime_key" required:"true" doc:"the runtime key, written to the stamp"`
	InventorySHA256 string `cty:"inventory_sha256" required:"true" doc:"sha256 of metadata/inventory.json, written to the stamp"`
	Files           int64  `cty:"files" required:"true" doc:"payload files, written to the stamp"`
	Bytes           int64  `cty:"bytes" required:"true" doc:"payload bytes, written to the stamp"`
}

// PublishOutputs are the outputs of a publish stage.
type PublishOutputs struct {
	Path string `cty:"path" doc:"the published payload"`
}

// Qualification is the marker of a local build: nothing audited or signed.
type Qualification struct {
	Qualification string `json:"qualification"`
	Audit         string `json:"audit"`
	Signed        bool   `json:"signed"`
}

// QualificationPath is where a build's qualification marker stands.
func QualificationPath(out, id string) string {
	return filepath.Join(out, id+".piship-qualification.json")
}

// Run implements stage.Typed.
func (Publish) Run(ctx context.Context, inv *stage.Invocation, c PublishConfig) (PublishOutputs, error) {
	dir := c.Staging
	st, ok := payload.Lookup(dir)
	if !ok {
		return PublishOutputs{}, fmt.Errorf("no open staging directory %s: publish runs in the same build as dist_inputs", dir)
	}
	stamp := payload.Stamp{
		Key: c.Key, RuntimeKey: c.RuntimeKey,
		Inventory: c.InventorySHA256, Files: int(c.Files), Bytes: c.Bytes,
	}
	// The stamp goes first: a build killed between the two renames leaves
	// a stamp whose inventory does not match, which the next build ignores.
	os.Remove(payload.StampPath(st.Out, st.ID))
	if err := st.Publish(); err != nil {
		return PublishOutputs{}, fmt.Errorf("cannot publish %s: %v", st.Final, err)
	}
	data, _ := canon.JSON(stamp)
	if err := atomicfs.WriteFileAll(payload.StampPath(st.Out, st.ID), data, 0o644); err != nil {
		return PublishOutputs{}, err
	}
	q, _ := canon.JSON(Qualification{Qualification: "unqualified-local", Audit: "none"})
	if err := atomicfs.WriteFileAll(QualificationPath(st.Out, st.ID), q, 0o644); err != nil {
		return PublishOutputs{}, err
	}
	st.Forget(dir)
	return PublishOutputs{Path: st.Final}, nil
}
