package stages

import (
	"reflect"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage"
)

// The tools output is a list of {name, sha256, bytes} objects, empty (not
// null) when nothing was shipped, and reads back into release.ToolDigest as
// build-info.json records it.
func TestReleasePublishToolsOutput(t *testing.T) {
	k := stage.Define(ReleasePublish{})
	want := cty.List(cty.Object(map[string]cty.Type{"name": cty.String, "sha256": cty.String, "bytes": cty.Number}))
	if ty := stage.OutputType(k).AttributeType("tools"); !ty.Equals(want) {
		t.Fatalf("tools type = %s", ty.FriendlyName())
	}
	for _, tools := range [][]release.ToolDigest{nil, {{Name: "piship", SHA256: "ab", Bytes: 3}, {Name: "piship-launch", SHA256: "cd", Bytes: 4}}} {
		enc, err := stage.EncodeOutputs(ReleasePublishOutputs{Path: "p", Archive: "a", Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		out, err := stage.CheckOutputs(k, enc)
		if err != nil {
			t.Fatal(err)
		}
		if l := out["tools"]; l.IsNull() || l.LengthInt() != len(tools) {
			t.Fatalf("tools = %#v, want %d elements", l, len(tools))
		}
		back, err := stage.DecodeOutputs[ReleasePublishOutputs](out)
		if err != nil {
			t.Fatal(err)
		}
		if len(tools) > 0 && !reflect.DeepEqual(back.Tools, tools) || len(back.Tools) != len(tools) {
			t.Errorf("decoded tools = %+v, want %+v", back.Tools, tools)
		}
	}
}
