package graph

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/stages"
)

// parseDir parses a pipeline file written into a temporary directory
// beside the given module files.
func parseDir(t *testing.T, pipeline string, modules map[string]string) ([]*Graph, string, error) {
	t.Helper()
	dir := t.TempDir()
	for name, src := range modules {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "p.hcl")
	gs, _, diags := ParseWith([]byte(pipeline), file, dir, Options{Kinds: stages.Default(), SourceDir: dir})
	if diags.HasErrors() {
		var all []string
		for _, d := range diags {
			all = append(all, fmt.Sprintf("%s:%d,%d: %s; %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, d.Summary, d.Detail))
		}
		return nil, dir, errors.New(strings.Join(all, "\n"))
	}
	return gs, dir, nil
}

func TestModuleCycleNamesBothFiles(t *testing.T) {
	_, dir, err := parseDir(t, `pipeline "p" {
  stage "exec" "a" { command = ["echo", module.m.out] }
  module "m" {
    source = "./m.hcl"
    x      = stage.a.stdout
  }
}
`, map[string]string{"m.hcl": `input "x" { type = string }
stage "exec" "b" { command = ["echo", input.x] }
output "out" { value = stage.b.stdout }
`})
	if err == nil {
		t.Fatal("a cycle through a module was accepted")
	}
	msg := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
	for _, want := range []string{"Dependency cycle", "p.hcl:2,", "m.hcl:2:", "p.hcl:5:", "m.hcl:3:", `stage "a"`, `stage "module.m.stage.b"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("cycle report lacks %q:\n%s", want, msg)
		}
	}
}

func TestModuleDiagnosticsPointIntoTheModuleFile(t *testing.T) {
	_, dir, err := parseDir(t, `pipeline "p" {
  module "m" {
    source = "./mods"
    x      = "a"
    y      = 1
  }
}
`, map[string]string{"mods/m.hcl": `input "x" { type = string }
stage "exec" "b" {
  command = ["echo", input.x]
  comand  = "typo"
}
output "out" { value = stage.b.nope }
`})
	if err == nil {
		t.Fatal("accepted")
	}
	msg := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
	for _, want := range []string{"mods/m.hcl:4,", `Did you mean "command"`, "mods/m.hcl:6,", `no output "nope"`, "p.hcl:5,", `has no input "y"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, msg)
		}
	}
}

func TestModuleAddressesAndBuiltinSource(t *testing.T) {
	builtin := func(name string) ([]ModuleFile, bool) {
		if name != "greet" {
			return nil, false
		}
		return []ModuleFile{{Name: "builtin:greet", Src: []byte(`input "who" { default = "world" }
stage "exec" "hello" { command = ["echo", input.who] }
output "said" { value = stage.hello.stdout }
`)}}, true
	}
	gs, _, diags := ParseWith([]byte(`pipeline "p" {
  module "greet" { source = "builtin:greet" }
  stage "exec" "after" { command = ["echo", module.greet.said] }
}`), "p.hcl", t.TempDir(), Options{Kinds: stages.Default(), Builtin: builtin})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	g := gs[0]
	var got []string
	for _, s := range g.Stages {
		got = append(got, s.Name+" "+s.Label())
	}
	want := []string{"module.greet.stage.hello module.greet.stage.hello", "after exec after"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("names and span names %q, want %q", got, want)
	}
	if after, _ := g.Stage("after"); len(after.DepStages) != 1 || after.DepStages[0].Name != "module.greet.stage.hello" {
		t.Fatalf("after depends on %v", after.DepStages)
	}
	_, _, diags = ParseWith([]byte(`pipeline "p" {
  module "x" { source = "builtin:nope" }
}`), "p.hcl", t.TempDir(), Options{Kinds: stages.Default(), Builtin: builtin})
	if !strings.Contains(diags.Error(), `no built-in module "nope"`) {
		t.Fatalf("unknown builtin: %v", diags)
	}
}

func TestModuleCallingItselfIsRefused(t *testing.T) {
	_, _, err := parseDir(t, `pipeline "p" {
  module "m" { source = "./m.hcl" }
}
`, map[string]string{"m.hcl": `module "again" { source = "./m.hcl" }
`})
	if err == nil || !strings.Contains(err.Error(), "Module calls itself") {
		t.Fatalf("self-calling module: %v", err)
	}
}

func TestTemplateNameAndDepNamesOf(t *testing.T) {
	for in, want := range map[string]string{
		"bundle":    "bundle",
		`sign["a"]`: "sign",
		`module.t["linux-x64"].stage.npm_install`: "module.t.stage.npm_install",
		`module.t["a\"]b"].stage.x["k"]`:          "module.t.stage.x",
	} {
		if got := TemplateName(in); got != want {
			t.Errorf("TemplateName(%s) = %q, want %q", in, got, want)
		}
	}
	gs, _, diags := Parse([]byte(`pipeline "p" {
  stage "exec" "a" {
    for_each = ["x", "y"]
    command  = ["true"]
  }
  stage "exec" "b" { command = ["echo", length(stage.a)] }
}`), "p.hcl", t.TempDir(), stages.Default())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	deps, unknown := gs[0].DepNamesOf([]string{`a["x"]`, `a["y"]`, "b", "c"})
	if got := strings.Join(deps["b"], ","); got != `a["x"],a["y"]` || len(deps[`a["x"]`]) != 0 || strings.Join(unknown, ",") != "c" {
		t.Fatalf("deps %v, unknown %v", deps, unknown)
	}
	if _, ok := deps["a"]; ok {
		t.Errorf("the expanded stage a is a key besides its instances: %v", deps)
	}

	// In a for_each module, an instance waited for its own module
	// instance's stages only; a stage after the module for all of them.
	gs, _, err := parseDir(t, `pipeline "p" {
  module "t" {
    source   = "./m.hcl"
    for_each = ["x", "y"]
  }
  stage "exec" "sum" { command = concat(["echo"], [for k, m in module.t : m.o]) }
}`, map[string]string{"m.hcl": `stage "exec" "a" { command = ["true"] }
stage "exec" "b" { command = ["echo", stage.a.stdout] }
output "o" { value = stage.b.stdout }
`})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{`module.t["x"].stage.a`, `module.t["y"].stage.a`, `module.t["x"].stage.b`, `module.t["y"].stage.b`, "sum"}
	deps, _ = gs[0].DepNamesOf(names)
	if got := strings.Join(deps[`module.t["y"].stage.b`], ","); got != `module.t["y"].stage.a` {
		t.Errorf(`module.t["y"].stage.b waited for %s, want its own instance's a`, got)
	}
	if got := strings.Join(deps["sum"], ","); got != `module.t["x"].stage.b,module.t["y"].stage.b` {
		t.Errorf("sum waited for %s, want both instances' b", got)
	}
}

// piship validate checks a module file on its own: its inputs unknown, its
// references and types checked like a pipeline's.
func TestModuleFileValidatesOnItsOwn(t *testing.T) {
	good := []byte("input \"x\" { type = string }\nstage \"exec\" \"a\" { command = [\"echo\", input.x] }\noutput \"o\" { value = stage.a.stdout }\n")
	if !IsModuleFile(good, "m.hcl") || IsModuleFile([]byte("pipeline \"p\" {}\n"), "p.hcl") {
		t.Fatal("IsModuleFile")
	}
	if _, _, diags := ParseModule(good, "m.hcl", t.TempDir(), Options{Kinds: stages.Default()}); diags.HasErrors() {
		t.Fatal(diags)
	}
	bad := []byte("input \"x\" { type = number }\nstage \"exec\" \"a\" { command = [\"echo\", input.y] }\n")
	if _, _, diags := ParseModule(bad, "m.hcl", t.TempDir(), Options{Kinds: stages.Default()}); !strings.Contains(diags.Error(), `m.hcl:2,39`) || !strings.Contains(diags.Error(), `no input named "y"`) {
		t.Fatalf("bad module: %v", diags)
	}
}

// piship graph draws a module as a cluster and a for_each with its
// expression, and with its instances when they are known before the run.
func TestGraphDrawsModulesAndInstances(t *testing.T) {
	gs, _, err := parseDir(t, `pipeline "p" {
  input "files" { default = ["b.zip", "a.tgz"] }
  module "signed" {
    source   = "./sign.hcl"
    for_each = input.files
    file     = each.key
  }
  stage "exec" "per" {
    for_each = module.signed
    command  = ["echo", each.value.sig]
  }
}
`, map[string]string{"sign.hcl": `input "file" { type = string }
stage "exec" "sign" { command = ["echo", input.file] }
output "sig" { value = stage.sign.stdout }
`})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := gs[0].WriteDOT(&out); err != nil {
		t.Fatal(err)
	}
	dot := out.String()
	for _, want := range []string{`subgraph "cluster_module.signed"`, "<B>module.signed</B><BR/>./sign.hcl", "for_each input.files</I></FONT><BR/><FONT POINT-SIZE=\"10\">instances: a.tgz, b.zip", `"module.signed.stage.sign" [label=<<B>sign</B>`, "for_each module.signed</I></FONT>>", `"module.signed.stage.sign" -> "per"`} {
		if !strings.Contains(dot, want) {
			t.Errorf("the DOT lacks %q:\n%s", want, dot)
		}
	}
}
