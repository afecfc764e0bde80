package stage_test

import (
	"encoding/json"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/stage"
)

// What `piship stages --json` prints for one attribute and one output: every
// field by its json tag, in declaration order, the type as HCL writes it.
func TestDeclarationsJSON(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{stage.Attr{Name: "command", Type: cty.List(cty.String), Required: true, Doc: "a <b> & c"},
			`{"name":"command","type":"list(string)","required":true,"doc":"a \u003cb\u003e \u0026 c"}`},
		{stage.Output{Name: "files", Type: cty.Map(cty.Object(map[string]cty.Type{"n": cty.Number})), Doc: "path -> size"},
			`{"name":"files","type":"map(object({n=number}))","doc":"path -\u003e size"}`},
	} {
		got, err := json.Marshal(c.v)
		if err != nil || string(got) != c.want {
			t.Errorf("json.Marshal(%#v) = %s, %v\nwant %s", c.v, got, err, c.want)
		}
	}
}
