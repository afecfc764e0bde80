package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/graph"
)

func names(res *Result) []string {
	var out []string
	for _, r := range res.Stages {
		out = append(out, r.Stage.Name+"="+r.Status.String())
	}
	return out
}

func TestForEachOverAListAndAMap(t *testing.T) {
	rec := newRecorder()
	g := mustParse(t, `
pipeline "p" {
  input "targets" { default = ["linux-x64", "darwin-arm64"] }
  locals { sizes = { small = 1, big = 2 } }
  stage "check" "build" {
    for_each = input.targets
    in       = "${each.key}:${each.value}"
  }
  stage "check" "pack" {
    for_each = local.sizes
    in       = each.value
  }
  stage "check" "sum" {
    in = [stage.build["linux-x64"].in, stage.pack.big.in, length(stage.build)]
  }
}`, testRegistry(rec))
	res, err := Run(context.Background(), g, Options{Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{`build["darwin-arm64"]=passed`, `build["linux-x64"]=passed`, `pack["big"]=passed`, `pack["small"]=passed`, "sum=passed"}
	if got := names(res); !slices.Equal(got, want) {
		t.Fatalf("results %q, want %q (instances in declaration then key order)", got, want)
	}
	sum := res.Stages[4].Outputs["in"]
	if got := sum.GoString(); !strings.Contains(got, `"linux-x64:linux-x64"`) || !strings.Contains(got, "2") {
		t.Fatalf("sum read %s", got)
	}
	if got := res.Stages[0].Stage.Label(); got != `stage.build["darwin-arm64"]` {
		t.Fatalf("span name %q", got)
	}
}

func TestForEachDuplicateKeyIsRefused(t *testing.T) {
	gs, _, diags := graph.Parse([]byte(`
pipeline "p" {
  stage "check" "a" { for_each = ["x", "y", "x"] }
}`), "dup.hcl", t.TempDir(), testRegistry(newRecorder()))
	if !diags.HasErrors() || !strings.Contains(diags.Error(), `"x" twice`) || !strings.Contains(diags.Error(), "dup.hcl:3") {
		t.Fatalf("a literal list with a duplicate: %v %v", gs, diags)
	}
	// Known only when the run starts: the stage fails with the rule.
	g := mustParse(t, `
pipeline "p" {
  input "keys" { type = list(string) }
  stage "check" "a" { for_each = input.keys }
}`, testRegistry(newRecorder()))
	res, err := Run(context.Background(), g, Options{Inputs: map[string]cty.Value{"keys": cty.ListVal([]cty.Value{cty.StringVal("k"), cty.StringVal("k")})}})
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Err(); e == nil || !strings.Contains(e.Error(), `"k" twice`) || !strings.Contains(e.Error(), "CONFIG_INVALID") {
		t.Fatalf("duplicate key from an input: %v", e)
	}
}

func TestForEachFirstFailingVerdictByDeclarationThenKey(t *testing.T) {
	// Two instances fail (b and d of "many"), and so does "later", declared
	// after it: whatever the timing, the run's failure is many["b"].
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		rec := newRecorder()
		src := fmt.Sprintf(`
pipeline "p" {
  stage "check" "first" { ms = %d }
  stage "check" "many" {
    for_each = { a = %d, b = %d, c = %d, d = %d, e = %d }
    ms       = each.value
    fail     = contains(["b", "d"], each.key)
  }
  stage "check" "later" {
    ms   = %d
    fail = true
  }
  stage "check" "cleanup" {
    always = true
    in     = stage.many
  }
}`, rng.IntN(3), rng.IntN(6), rng.IntN(6), rng.IntN(6), rng.IntN(6), rng.IntN(6), rng.IntN(4))
		g := mustParse(t, src, testRegistry(rec))
		par := 1 + rng.IntN(4)
		res, err := Run(context.Background(), g, Options{Parallelism: par})
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed == nil || res.Failed.Stage.Name != `many["b"]` {
			t.Fatalf("run %d (parallelism %d): first failing verdict %v, want many[\"b\"]; %q", i, par, res.Failed, names(res))
		}
		if want := `p: stage many["b"] failed: boom from many["b"]`; res.Err().Error() != want {
			t.Fatalf("run %d: %q, want %q", i, res.Err(), want)
		}
		for _, name := range rec.started {
			if !rec.finished[name] {
				t.Fatalf("run %d: %s started and did not finish", i, name)
			}
		}
		if !rec.finished["cleanup"] {
			t.Fatalf("run %d: the always stage did not run: %q", i, names(res))
		}
	}
}

func TestForEachOverAStageOutput(t *testing.T) {
	// The keys come from a stage's output: expanded when it has finished,
	// never refused as unknown before the run.
	rec := newRecorder()
	g := mustParse(t, `
pipeline "p" {
  stage "check" "targets" { in = ["b", "a"] }
  stage "check" "build" {
    for_each = stage.targets.in
    in       = "built-${each.key}"
  }
  stage "check" "after" { in = [for k, v in stage.build : v.in] }
}`, testRegistry(rec))
	res, err := Run(context.Background(), g, Options{Parallelism: 4})
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	want := []string{"targets=passed", `build["a"]=passed`, `build["b"]=passed`, "after=passed"}
	if got := names(res); !slices.Equal(got, want) {
		t.Fatalf("results %q, want %q", got, want)
	}
	if got := res.Stages[3].Outputs["in"].GoString(); !strings.Contains(got, "built-a") || !strings.Contains(got, "built-b") {
		t.Fatalf("after read %s", got)
	}
	// A for_each whose stage failed is not decided: the stage does not start.
	g = mustParse(t, `
pipeline "p" {
  stage "fail" "targets" {}
  stage "check" "build" { for_each = stage.targets.value }
}`, testRegistry(rec))
	res, _ = Run(context.Background(), g, Options{})
	if got := names(res); !slices.Equal(got, []string{"targets=failed", "build=not started"}) {
		t.Fatalf("after a failed for_each source: %q", got)
	}
}

func TestThousandInstancesOnOneSlot(t *testing.T) {
	rec := newRecorder()
	g := mustParse(t, `
pipeline "p" {
  stage "check" "many" {
    for_each = [for i in range(1000) : tostring(i)]
  }
  stage "check" "after" { in = length(stage.many) }
}`, testRegistry(rec))
	res, err := Run(context.Background(), g, Options{Parallelism: 1})
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	if len(res.Stages) != 1001 || rec.peak != 1 {
		t.Fatalf("%d results, peak %d running; want 1001 and 1", len(res.Stages), rec.peak)
	}
	if got := res.Stages[1000].Outputs["in"].GoString(); got != "cty.NumberIntVal(1000)" {
		t.Fatalf("after read %s", got)
	}
}

func writeModule(t *testing.T, dir, name, src string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestModuleInputsOutputsAndForEach(t *testing.T) {
	dir := t.TempDir()
	writeModule(t, dir, "target.hcl", `
input "name" { type = string }
input "base" { type = string }
stage "check" "compile" { in = "${input.base}/${input.name}" }
stage "check" "pack" { in = "${stage.compile.in}.tar" }
output "archive" { value = stage.pack.in }
`)
	src := `
pipeline "p" {
  stage "check" "inputs" { in = ["linux-x64", "darwin-arm64"] }
  module "one" {
    source = "./target.hcl"
    name   = "solo"
    base   = "out"
  }
  module "targets" {
    source   = "./target.hcl"
    for_each = stage.inputs.in
    name     = each.key
    base     = module.one.archive
  }
  stage "check" "publish" { in = [module.one.archive, module.targets["linux-x64"].archive] }
}`
	gs, _, diags := graph.Parse([]byte(src), filepath.Join(dir, "p.hcl"), dir, testRegistry(newRecorder()))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	rec := newRecorder()
	gs, _, _ = graph.Parse([]byte(src), filepath.Join(dir, "p.hcl"), dir, testRegistry(rec))
	res, err := Run(context.Background(), gs[0], Options{Parallelism: 3})
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	want := []string{"inputs=passed", "module.one.stage.compile=passed", "module.one.stage.pack=passed",
		`module.targets["darwin-arm64"].stage.compile=passed`, `module.targets["linux-x64"].stage.compile=passed`,
		`module.targets["darwin-arm64"].stage.pack=passed`, `module.targets["linux-x64"].stage.pack=passed`, "publish=passed"}
	if got := names(res); !slices.Equal(got, want) {
		t.Fatalf("results\n %q\nwant\n %q", got, want)
	}
	if got := res.Stages[7].Outputs["in"].GoString(); !strings.Contains(got, `"out/solo.tar"`) || !strings.Contains(got, `"out/solo.tar/linux-x64.tar"`) {
		t.Fatalf("publish read %s", got)
	}
	if got := res.Stages[1].Stage.Label(); got != "module.one.stage.compile" {
		t.Fatalf("span name %q", got)
	}
}
