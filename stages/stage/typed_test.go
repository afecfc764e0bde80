package stage_test

import (
	"context"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/stage"
)

type greetConfig struct {
	Who    string            `cty:"who" required:"true" doc:"whom to greet"`
	Times  int               `cty:"times" doc:"how often"`
	Tags   []string          `cty:"tags"`
	Env    map[string]string `cty:"env"`
	Loud   *bool             `cty:"loud"`
	Extra  cty.Value         `cty:"extra"`
	hidden int
}

type greetTool struct {
	Name string   `cty:"name"`
	Args []string `cty:"args"`
}

type greetOutputs struct {
	Text  string      `cty:"text" doc:"the greeting"`
	Count int         `cty:"count"`
	Lines []string    `cty:"lines"`
	Tools []greetTool `cty:"tools"`
}

type greet struct{}

func (greet) Name() string    { return "greet" }
func (greet) Version() string { return "1" }
func (greet) Doc() string     { return "greets" }
func (greet) Run(_ context.Context, _ *stage.Invocation, c greetConfig) (greetOutputs, error) {
	text := strings.Repeat("hello "+c.Who+" ", max(c.Times, 1))
	if c.Loud != nil && *c.Loud {
		text = strings.ToUpper(text)
	}
	return greetOutputs{Text: text, Count: len(c.Tags), Tools: []greetTool{{Name: "fd"}}}, nil
}

type cachedGreet struct{ greet }

func (cachedGreet) CacheSpec(_ *stage.Invocation, c greetConfig) (stage.CacheSpec, bool, error) {
	return stage.CacheSpec{Inputs: c.Tags}, c.Times > 0, nil
}

// The declaration is the schema: names, types, required flags and docs all
// come from the struct tags.
func TestDefineDerivesSchemaFromStructs(t *testing.T) {
	k := stage.Define(greet{})
	attrs := map[string]stage.Attr{}
	for _, a := range k.Attrs() {
		attrs[a.Name] = a
	}
	if len(attrs) != 6 {
		t.Fatalf("attrs = %v, want 6 (the untagged unexported field is not one)", k.Attrs())
	}
	want := map[string]cty.Type{"who": cty.String, "times": cty.Number, "tags": cty.List(cty.String),
		"env": cty.Map(cty.String), "loud": cty.Bool, "extra": cty.DynamicPseudoType}
	for n, ty := range want {
		if !attrs[n].Type.Equals(ty) {
			t.Errorf("attr %s type = %s, want %s", n, attrs[n].Type.FriendlyName(), ty.FriendlyName())
		}
	}
	if !attrs["who"].Required || attrs["times"].Required || attrs["who"].Doc != "whom to greet" {
		t.Errorf("who/times = %+v / %+v", attrs["who"], attrs["times"])
	}
	ot := stage.OutputType(k)
	if !ot.AttributeType("tools").Equals(cty.List(cty.Object(map[string]cty.Type{"name": cty.String, "args": cty.List(cty.String)}))) {
		t.Errorf("tools output type = %s", ot.AttributeType("tools").FriendlyName())
	}
	if _, ok := k.(stage.Cacheable); ok {
		t.Error("a kind without CacheSpec must not be Cacheable")
	}
	if _, ok := stage.Define(cachedGreet{}).(stage.Cacheable); !ok {
		t.Error("a kind with a typed CacheSpec must be Cacheable")
	}
}

func TestDefinedKindRunsOnDecodedConfig(t *testing.T) {
	k := stage.Define(greet{})
	cfg := cty.ObjectVal(map[string]cty.Value{
		"who": cty.StringVal("pi"), "times": cty.NumberIntVal(2), "tags": cty.ListVal([]cty.Value{cty.StringVal("a")}),
		"env": cty.NullVal(cty.Map(cty.String)), "loud": cty.True, "extra": cty.NullVal(cty.DynamicPseudoType),
	})
	out, err := k.Run(context.Background(), &stage.Invocation{Name: "g", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	out, err = stage.CheckOutputs(k, out)
	if err != nil {
		t.Fatal(err)
	}
	if got := out["text"].AsString(); got != "HELLO PI HELLO PI " {
		t.Errorf("text = %q", got)
	}
	// A nil slice is an empty list, never null: pipelines take its length.
	if l := out["lines"]; l.IsNull() || l.LengthInt() != 0 {
		t.Errorf("lines = %#v, want an empty list", l)
	}
	if a := out["tools"].Index(cty.NumberIntVal(0)).GetAttr("args"); a.IsNull() {
		t.Error("a nested nil slice is null, want an empty list")
	}
	back, err := stage.DecodeOutputs[greetOutputs](out)
	if err != nil {
		t.Fatal(err)
	}
	if back.Count != 1 || back.Tools[0].Name != "fd" {
		t.Errorf("decoded outputs = %+v", back)
	}
	spec, ok, err := stage.Define(cachedGreet{}).(stage.Cacheable).CacheSpec(&stage.Invocation{Config: cfg})
	if err != nil || !ok || len(spec.Inputs) != 1 {
		t.Errorf("CacheSpec = %+v %v %v", spec, ok, err)
	}
}

func TestDecodeConfigNamesStageAndAttribute(t *testing.T) {
	cfg := cty.ObjectVal(map[string]cty.Value{"who": cty.StringVal("pi"), "times": cty.NumberFloatVal(1.5)})
	var c greetConfig
	err := stage.DecodeConfig(&stage.Invocation{Name: "hello", Config: cfg}, &c)
	if err == nil || !strings.Contains(err.Error(), "stage hello") || !strings.Contains(err.Error(), `"times"`) {
		t.Fatalf("err = %v, want one naming the stage and the attribute", err)
	}
}

type untagged struct {
	Who string
}

type badKind struct{ greet }

func (badKind) Run(context.Context, *stage.Invocation, untagged) (greetOutputs, error) {
	return greetOutputs{}, nil
}

func TestDefinePanicsOnUntaggedField(t *testing.T) {
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "Who has no cty tag") {
			t.Fatalf("recover() = %v", r)
		}
	}()
	stage.Define(badKind{})
}
