package stages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/payload"
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

func (Publish) Attrs() []Attr {
	return []Attr{
		{Name: "staging", Type: cty.String, Required: true},
		{Name: "key", Type: cty.String, Required: true}, {Name: "runtime_key", Type: cty.String, Required: true},
		{Name: "inventory_sha256", Type: cty.String, Required: true},
		{Name: "files", Type: cty.Number, Required: true}, {Name: "bytes", Type: cty.Number, Required: true},
	}
}

func (Publish) Outputs() []Output {
	return []Output{{Name: "path", Type: cty.String, Doc: "the published payload"}}
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

// Run implements Kind.
func (Publish) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	dir := stringOr(inv.Get("staging"), "")
	st, ok := payload.Lookup(dir)
	if !ok {
		return nil, fmt.Errorf("no open staging directory %s: publish runs in the same build as dist_inputs", dir)
	}
	files, _ := inv.Get("files").AsBigFloat().Int64()
	bytes, _ := inv.Get("bytes").AsBigFloat().Int64()
	stamp := Stamp{
		Key: stringOr(inv.Get("key"), ""), RuntimeKey: stringOr(inv.Get("runtime_key"), ""),
		Inventory: stringOr(inv.Get("inventory_sha256"), ""), Files: int(files), Bytes: bytes,
	}
	// The stamp goes first: a build killed between the two renames leaves
	// a stamp whose inventory does not match, which the next build ignores.
	os.Remove(StampPath(st.Out, st.ID))
	if err := st.Publish(); err != nil {
		return nil, fmt.Errorf("cannot publish %s: %v", st.Final, err)
	}
	data, _ := payload.CanonicalJSON(stamp)
	if err := payload.WriteFile(StampPath(st.Out, st.ID), data, 0o644); err != nil {
		return nil, err
	}
	q, _ := payload.CanonicalJSON(Qualification{Qualification: "unqualified-local", Audit: "none"})
	if err := payload.WriteFile(QualificationPath(st.Out, st.ID), q, 0o644); err != nil {
		return nil, err
	}
	st.Forget(dir)
	return map[string]cty.Value{"path": cty.StringVal(st.Final)}, nil
}
