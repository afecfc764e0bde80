package stages

import (
	"testing"

	"piship.dev/piship/graph"
)

// TestEveryAttributeAndOutputHasADescription is issue 29 point 7: `piship
// stages KIND` documents every attribute and output it lists, the kinds'
// own and those every stage takes.
func TestEveryAttributeAndOutputHasADescription(t *testing.T) {
	reg := Default()
	for _, n := range reg.Names() {
		k, _ := reg.Lookup(n)
		if k.Doc() == "" {
			t.Errorf("kind %s has no doc", n)
		}
		for _, a := range k.Attrs() {
			if a.Doc == "" {
				t.Errorf("kind %s: attribute %s has no doc tag", n, a.Name)
			}
		}
		for _, o := range k.Outputs() {
			if o.Doc == "" {
				t.Errorf("kind %s: output %s has no doc tag", n, o.Name)
			}
		}
	}
	for _, a := range graph.MetaAttrs {
		if a.Doc == "" {
			t.Errorf("the attribute %s every stage takes has no doc", a.Name)
		}
	}
}
