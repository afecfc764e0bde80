package distribution

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/platform"
)

func TestLoadHello(t *testing.T) {
	d := mustLoad(t, helloDir)
	abs, _ := filepath.Abs(helloDir)
	want := &Distribution{
		ID: "hello", Name: "Hello", Version: "1.0.0", Command: "hello",
		Dir: abs, File: filepath.Join(helloDir, FileName),
		Runtime: Runtime{
			Dir:   "runtime",
			Entry: "node_modules/hello-cli/bin/hello.js",
		},
		Resources: []string{"resources"},
		Tools: map[string]Tool{"hello-info": {
			Name: "hello-info", Source: "tools/hello-info",
			SHA256: "29795ab72a86b8d4d72350499f26c696e02e6e899752e77c70ccf18dbcddc379",
		}},
		Release:        Release{Bundle: true, Strip: true, Targets: []string{"linux-x64"}, Sources: []string{"npm"}},
		VerifyAtLaunch: false,
		Audit:          d.Audit, // policy_test.go covers the policy blocks
		Signatures:     d.Signatures,
		Smoke:          d.Smoke,
	}
	got := *d
	got.SHA256, got.DeclRange, got.ranges, got.shownDir = "", hcl.Range{}, nil, ""
	if !reflect.DeepEqual(&got, want) {
		t.Errorf("hello decoded as\n%+v\nwant\n%+v", got, *want)
	}
	if d.SHA256 != canon.SHA256Hex([]byte(readFile(t, filepath.Join(helloDir, FileName)))) {
		t.Error("SHA256 is not the digest of distribution.hcl")
	}
	if p := d.Pos("tools.hello-info.sha256"); !strings.HasSuffix(p, FileName+":19:58") {
		t.Errorf("Pos(tools.hello-info.sha256) = %s", p)
	}
	// An unwritten key falls back to its block.
	if got, want := d.Range("runtime.allow_install_scripts[3]"), d.Range("runtime.allow_install_scripts"); got != want {
		t.Errorf("Range fallback = %v, want %v", got, want)
	}
}

func TestLoadPi(t *testing.T) {
	d := mustLoad(t, piDir)
	if d.ID != "pi" || d.Command != "pi" || d.Version != "1.6.0" {
		t.Errorf("pi decoded as %s %s %s", d.ID, d.Command, d.Version)
	}
	if d.Runtime.Entry != "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js" {
		t.Errorf("entry = %s", d.Runtime.Entry)
	}
	if want := []string{"@google/genai", "protobufjs"}; !reflect.DeepEqual(d.Runtime.AllowInstallScripts, want) {
		t.Errorf("allow_install_scripts = %v, want %v", d.Runtime.AllowInstallScripts, want)
	}
	if len(d.Resources) != 0 || len(d.Tools) != 0 || d.VerifyAtLaunch {
		t.Errorf("defaults: resources %v tools %v verify %v", d.Resources, d.Tools, d.VerifyAtLaunch)
	}
	if !reflect.DeepEqual(d.Release, Release{Bundle: true, Strip: true, Targets: []string{"linux-x64"}, Sources: []string{"npm"}}) {
		t.Errorf("release = %+v", d.Release)
	}
	// The pinned runtime depends on exactly that version.
	pj := readFile(t, filepath.Join(piDir, "runtime", "package.json"))
	if !strings.Contains(pj, `"@earendil-works/pi-coding-agent": "1.6.0"`) {
		t.Error("pi runtime/package.json does not pin @earendil-works/pi-coding-agent 1.6.0")
	}
	// The 0.73 example, for Node 20, stays.
	if d := mustLoad(t, pi073Dir); d.ID != "pi" || d.Version != "0.73.1" || d.Runtime.Entry != "node_modules/@mariozechner/pi-coding-agent/dist/cli.js" {
		t.Errorf("pi-0.73 decoded as %s %s %s", d.ID, d.Version, d.Runtime.Entry)
	}
}

const baseSrc = `distribution "demo" {
  name    = "Demo"
  version = "1.0.0"
  command = "demo"
  runtime {
    entry = "node_modules/demo-cli/bin/demo.js"
  }
  release {
    targets = ["linux-x64"]
  }
}
`

func TestParseDefaults(t *testing.T) {
	d, diags := Parse([]byte(baseSrc), "distribution.hcl", t.TempDir())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if d.Runtime.Dir != "runtime" || !reflect.DeepEqual(d.Release.Sources, []string{"npm"}) || d.Release.Bundle || d.Release.Strip || d.VerifyAtLaunch {
		t.Errorf("defaults: %+v %+v", d.Runtime, d.Release)
	}
	if d.Runtime.AllowInstallScripts != nil || d.Resources != nil || len(d.Tools) != 0 {
		t.Errorf("empty defaults: %v %v %v", d.Runtime.AllowInstallScripts, d.Resources, d.Tools)
	}
}

func TestParseDiagnostics(t *testing.T) {
	cases := []struct {
		name     string
		old, new string // replace old by new in baseSrc
		marker   string // the subject starts at the first occurrence
		summary  string
		detail   []string
	}{
		{name: "unknown attribute with did-you-mean",
			old: `version = "1.0.0"`, new: `verison = "1.0.0"`, marker: `verison`,
			summary: "Unsupported argument", detail: []string{`"verison"`, `Did you mean "version"?`}},
		{name: "unknown attribute without a close name",
			old: `command = "demo"`, new: "command = \"demo\"\n  maintainer = \"me\"", marker: `maintainer`,
			summary: "Unsupported argument", detail: []string{`takes: name, version, command, resources, tools, verify_at_launch, runtime { }, release { }, audit { }, signatures { }, smoke { }, updates { }, package { }, search_tools { }, node { }, installers { }.`}},
		{name: "unknown attribute in runtime",
			old: `entry = "node_modules`, new: `entyr = "node_modules`, marker: `entyr`,
			summary: "Unsupported argument", detail: []string{`Did you mean "entry"?`}},
		{name: "unknown block",
			old: `release {`, new: `relase {`, marker: `relase`,
			summary: "Unsupported block type", detail: []string{`Did you mean "release"?`}},
		{name: "string given a number",
			old: `name    = "Demo"`, new: `name    = 1`, marker: `1`,
			summary: "Incorrect attribute value type", detail: []string{"name must be a string", "this is a number"}},
		{name: "bool given a string",
			old: `targets = ["linux-x64"]`, new: "targets = [\"linux-x64\"]\n    bundle = \"yes\"", marker: `"yes"`,
			summary: "Incorrect attribute value type", detail: []string{"release.bundle must be true or false", "this is a string"}},
		{name: "list given a string",
			old: `targets = ["linux-x64"]`, new: `targets = "linux-x64"`, marker: `"linux-x64"`,
			summary: "Incorrect attribute value type", detail: []string{"release.targets must be a list of strings", `e.g. ["linux-x64"]`}},
		{name: "list element of the wrong type",
			old: `targets = ["linux-x64"]`, new: `targets = ["linux-x64", 3]`, marker: `3]`,
			summary: "Incorrect attribute value type", detail: []string{"release.targets[1] must be a string"}},
		{name: "null",
			old: `command = "demo"`, new: `command = null`, marker: `null`,
			summary: "Incorrect attribute value type", detail: []string{"command must be a string", "this is null"}},
		{name: "missing required attribute",
			old: "  command = \"demo\"\n", new: "", marker: "{\n  name",
			summary: "Missing required argument", detail: []string{`requires command: the shim's name`}},
		{name: "missing required attribute in a block",
			old: `entry = "node_modules/demo-cli/bin/demo.js"`, new: ``, marker: "{\n    \n",
			summary: "Missing required argument", detail: []string{"the runtime block requires entry"}},
		{name: "missing runtime block",
			old: "  runtime {\n    entry = \"node_modules/demo-cli/bin/demo.js\"\n  }\n", new: "", marker: "{\n  name",
			summary: "Missing runtime block", detail: []string{`entry = "node_modules/<package>/<file>.js"`}},
		{name: "duplicate block",
			old: "}\n}\n", new: "}\n  release {\n    strip = true\n  }\n}\n", marker: "release {\n    strip",
			summary: "Duplicate release block", detail: []string{"the first is at distribution.hcl:8:3"}},
		{name: "short version",
			old: `"1.0.0"`, new: `"1.0"`, marker: `"1.0"`,
			summary: "Invalid version", detail: []string{"not a semantic version", `Did you mean "1.0.0"?`}},
		{name: "v-prefixed version",
			old: `"1.0.0"`, new: `"v1.2.3-rc.1"`, marker: `"v1.2.3`,
			summary: "Invalid version", detail: []string{`Did you mean "1.2.3-rc.1"?`}},
		{name: "leading zero",
			old: `"1.0.0"`, new: `"1.02.0"`, marker: `"1.02.0"`,
			summary: "Invalid version", detail: []string{"MAJOR.MINOR.PATCH"}},
		{name: "uppercase command",
			old: `command = "demo"`, new: `command = "DEMO"`, marker: `"DEMO"`,
			summary: "Invalid command", detail: []string{"lowercase letters", `Did you mean "demo"?`}},
		{name: "command with a space",
			old: `command = "demo"`, new: `command = "my demo"`, marker: `"my demo"`,
			summary: "Invalid command", detail: []string{"<bin-home>/my demo"}},
		{name: "reserved command",
			old: `command = "demo"`, new: `command = "con"`, marker: `"con"`,
			summary: "Invalid command", detail: []string{"reserved device name on Windows"}},
		{name: "bad id",
			old: `distribution "demo"`, new: `distribution "Demo App"`, marker: `"Demo App"`,
			summary: "Invalid distribution id", detail: []string{"apps/<id>/"}},
		{name: "go-style target",
			old: `["linux-x64"]`, new: `["linux-amd64"]`, marker: `"linux-amd64"`,
			summary: "Invalid release target", detail: []string{`arch "amd64" is not one of Node's`, `Did you mean "linux-x64"?`}},
		{name: "unknown platform",
			old: `["linux-x64"]`, new: `["linux-x64", "plan9-x64"]`, marker: `"plan9-x64"`,
			summary: "Invalid release target", detail: []string{`platform "plan9" is not one of Node's`}},
		{name: "target without arch",
			old: `["linux-x64"]`, new: `["linux"]`, marker: `"linux"]`,
			summary: "Invalid release target", detail: []string{"<platform>-<arch>"}},
		{name: "duplicate target",
			old: `["linux-x64"]`, new: `["linux-x64", "linux-x64"]`, marker: `"linux-x64"]`,
			summary: "Duplicate release target", detail: []string{"already listed at distribution.hcl:9:16"}},
		{name: "no target",
			old: `["linux-x64"]`, new: `[]`, marker: `[]`,
			summary: "No release target", detail: []string{"at least one"}},
		{name: "http source",
			old: `targets = ["linux-x64"]`, new: "targets = [\"linux-x64\"]\n    sources = [\"http://npm.example.com/\"]", marker: `"http://`,
			summary: "Invalid package source", detail: []string{"https only", "https://npm.example.com/"}},
		{name: "source with credentials",
			old: `targets = ["linux-x64"]`, new: "targets = [\"linux-x64\"]\n    sources = [\"https://u:p@npm.example.com/\"]", marker: `"https://u:p`,
			summary: "Invalid package source", detail: []string{".npmrc"}},
		{name: "entry outside node_modules",
			old: `"node_modules/demo-cli/bin/demo.js"`, new: `"bin/demo.js"`, marker: `"bin/demo.js"`,
			summary: "Invalid runtime entry", detail: []string{"node_modules/<package>/<file>"}},
		{name: "entry is a package directory",
			old: `"node_modules/demo-cli/bin/demo.js"`, new: `"node_modules/@scope/demo"`, marker: `"node_modules/@scope/demo"`,
			summary: "Invalid runtime entry", detail: []string{"inside an installed package"}},
		{name: "entry escapes",
			old: `"node_modules/demo-cli/bin/demo.js"`, new: `"../x.js"`, marker: `"../x.js"`,
			summary: "Invalid runtime entry", detail: []string{"leaves the distribution directory"}},
		{name: "runtime dir absolute",
			old: `runtime {`, new: "runtime {\n    dir = \"/opt/runtime\"", marker: `"/opt/runtime"`,
			summary: "Invalid runtime directory", detail: []string{"relative to the distribution directory"}},
		{name: "resource escapes",
			old: `command = "demo"`, new: "command = \"demo\"\n  resources = [\"ok\", \"../secrets\"]", marker: `"../secrets"`,
			summary: "Invalid resource path", detail: []string{"leaves the distribution directory"}},
		{name: "resource with backslashes",
			old: `command = "demo"`, new: `command = "demo"` + "\n  resources = [\"a\\\\b\"]", marker: `"a\\b"`,
			summary: "Invalid resource path", detail: []string{"forward slashes", "a/b"}},
		{name: "resource is the directory",
			old: `command = "demo"`, new: "command = \"demo\"\n  resources = [\"./\"]", marker: `"./"`,
			summary: "Invalid resource path", detail: []string{"not the directory itself"}},
		{name: "resource overlaps the runtime",
			old: `command = "demo"`, new: "command = \"demo\"\n  resources = [\"runtime/node_modules/x\"]", marker: `"runtime/node_modules/x"`,
			summary: "Resource overlaps the runtime", detail: []string{"assembles itself from the lock"}},
		{name: "resource inside another",
			old: `command = "demo"`, new: "command = \"demo\"\n  resources = [\"res\", \"res/a.txt\"]", marker: `"res/a.txt"`,
			summary: "Overlapping resources", detail: []string{`"res/a.txt" is inside "res"`}},
		{name: "duplicate resource",
			old: `command = "demo"`, new: "command = \"demo\"\n  resources = [\"res\", \"./res\"]", marker: `"./res"`,
			summary: "Duplicate resource", detail: []string{"already listed"}},
		{name: "bad install-script package name",
			old: `entry = "node_modules`, new: "allow_install_scripts = [\"koffi@2\"]\n    entry = \"node_modules", marker: `"koffi@2"`,
			summary: "Invalid package name", detail: []string{"no version"}},
		{name: "tool with a misspelt attribute",
			old: `command = "demo"`, new: `command = "demo"` + "\n  tools = { rg = { source = \"tools/rg\", sha265 = \"" + strings.Repeat("a", 64) + "\" } }", marker: `sha265`,
			summary: "Unsupported argument", detail: []string{`tool "rg" has no attribute "sha265"`, `Did you mean "sha256"?`}},
		{name: "tool without sha256",
			old: `command = "demo"`, new: `command = "demo"` + "\n  tools = { rg = { source = \"tools/rg\" } }", marker: `{ source`,
			summary: "Missing required argument", detail: []string{`tool "rg" requires sha256`}},
		{name: "tool with an uppercase digest",
			old: `command = "demo"`, new: `command = "demo"` + "\n  tools = { rg = { source = \"tools/rg\", sha256 = \"" + strings.Repeat("A", 64) + "\" } }", marker: `"AAAA`,
			summary: "Invalid tool digest", detail: []string{"64 lowercase hex digits", `Did you mean "aaaa`}},
		{name: "tool over http",
			old: `command = "demo"`, new: `command = "demo"` + "\n  tools = { rg = { source = \"http://x.example/rg\", sha256 = \"" + strings.Repeat("a", 64) + "\" } }", marker: `"http://x`,
			summary: "Invalid tool source", detail: []string{"https only"}},
		{name: "tools not a map",
			old: `command = "demo"`, new: `command = "demo"` + "\n  tools = [\"rg\"]", marker: `["rg"]`,
			summary: "Incorrect attribute value type", detail: []string{"tools must be a map"}},
		{name: "bad tool name",
			old: `command = "demo"`, new: `command = "demo"` + "\n  tools = { \"Rip Grep\" = { source = \"tools/rg\", sha256 = \"" + strings.Repeat("a", 64) + "\" } }", marker: `"Rip Grep"`,
			summary: "Invalid tool name", detail: []string{"tools/Rip Grep"}},
		{name: "variable reference",
			old: `name    = "Demo"`, new: `name    = var.name`, marker: `var.name`,
			summary: "Variables not allowed", detail: nil},
		{name: "two distributions",
			old: "", new: "distribution \"other\" {\n}\n", marker: `distribution "demo"`,
			summary: "More than one distribution", detail: []string{"own directory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := baseSrc
			if c.old == "" {
				src = baseSrc + c.new
			} else {
				if !strings.Contains(src, c.old) {
					t.Fatalf("base has no %q", c.old)
				}
				src = strings.Replace(src, c.old, c.new, 1)
			}
			marker := c.marker
			if c.name == "two distributions" {
				marker = `distribution "other"`
			}
			diag := wantDiagAt(t, src, marker, c.summary, c.detail)
			if diag.Subject.Filename != "distribution.hcl" || diag.Subject.Start.Line < 1 {
				t.Errorf("subject %v", diag.Subject)
			}
		})
	}
}

func fmtDiags(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		pos := "-"
		if d.Subject != nil {
			pos = fmt.Sprintf("%s (byte %d)", fmtPos(*d.Subject), d.Subject.Start.Byte)
		}
		fmt.Fprintf(&b, "  %s: %s: %s\n", pos, d.Summary, d.Detail)
	}
	return b.String()
}

func TestParseDiagnosticsSorted(t *testing.T) {
	src := strings.NewReplacer(`"1.0.0"`, `"1"`, `"demo"`+"\n", `"Demo"`+"\n", `["linux-x64"]`, `["linux-amd64"]`).Replace(baseSrc)
	src = strings.Replace(src, `name    = "Demo"`, `nmae = "Demo"`, 1)
	_, diags := Parse([]byte(src), "distribution.hcl", t.TempDir())
	if len(diags) < 4 {
		t.Fatalf("want at least 4 diagnostics, got:\n%s", fmtDiags(diags))
	}
	for i := 1; i < len(diags); i++ {
		if diags[i-1].Subject.Start.Byte > diags[i].Subject.Start.Byte {
			t.Fatalf("not sorted by offset:\n%s", fmtDiags(diags))
		}
	}
	// The same input gives the same report.
	_, again := Parse([]byte(src), "distribution.hcl", t.TempDir())
	if fmtDiags(diags) != fmtDiags(again) {
		t.Error("diagnostics differ between two parses")
	}
}

func TestParseSyntaxError(t *testing.T) {
	_, diags := Parse([]byte("distribution \"x\" {\n  name = \n}\n"), "distribution.hcl", ".")
	if !diags.HasErrors() || diags[0].Subject == nil || diags[0].Subject.Start.Line != 2 {
		t.Fatalf("syntax error not positioned: %v", diags)
	}
	_, diags = Parse([]byte("# nothing\n"), "distribution.hcl", ".")
	if !diags.HasErrors() || diags[0].Summary != "No distribution in file" {
		t.Fatalf("empty file: %v", diags)
	}
}

func TestLoadChecksFiles(t *testing.T) {
	dir := copyTree(t, helloDir)
	hcl := filepath.Join(dir, FileName)
	editFile(t, hcl, `resources = ["resources"]`, `resources = ["resorces"]`)
	if err := os.Remove(filepath.Join(dir, "runtime", "package-lock.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "tools", "hello-info")); err != nil {
		t.Fatal(err)
	}
	d, diags := Load(dir)
	if d != nil {
		t.Fatal("Load succeeded with missing files")
	}
	src := readFile(t, hcl)
	for _, c := range []struct{ marker, summary, detail string }{
		{`"resorces"`, "Missing resource", `Did you mean "resources"?`},
		{`"runtime"`, "Missing package-lock.json", "npm install --package-lock-only --ignore-scripts"},
		{`"tools/hello-info"`, "Missing tool", "does not exist"},
	} {
		diag := diagAt(diags, src, c.marker)
		if diag == nil || diag.Summary != c.summary || !strings.Contains(diag.Detail, c.detail) {
			t.Errorf("at %s want %s (%s); got:\n%s", c.marker, c.summary, c.detail, fmtDiags(diags))
		}
	}

	// A symlinked resource is refused.
	dir = copyTree(t, helloDir)
	link := filepath.Join(dir, "resources", "link.txt")
	if err := os.Symlink("motd.txt", link); err != nil {
		t.Fatal("cannot create a symlink:", err)
	}
	editFile(t, filepath.Join(dir, FileName), `resources = ["resources"]`, `resources = ["resources/link.txt"]`)
	if _, diags := Load(dir); !diags.HasErrors() || diags[0].Summary != "Resource is a symlink" {
		t.Errorf("symlinked resource: %v", diags)
	}

	_, diags = Load(t.TempDir())
	if !diags.HasErrors() || !strings.Contains(diags[0].Detail, "has no distribution.hcl") {
		t.Errorf("empty dir: %v", diags)
	}
}

func TestDocCoversSchema(t *testing.T) {
	doc := Doc()
	fields, blocks := Schema()
	for _, f := range fields {
		if !strings.Contains(doc, "  "+lastName(f.Name)+" ") {
			t.Errorf("Doc does not document %s", f.Name)
		}
		if f.Required && f.Default != "" {
			t.Errorf("%s is required and has a default", f.Name)
		}
		if f.Example == "" {
			t.Errorf("%s has no example", f.Name)
		}
	}
	for _, b := range blocks {
		if !strings.Contains(doc, b.Header()+" { } block") {
			t.Errorf("Doc does not document block %s", b.Name)
		}
	}
	// hello with policyBlocks sets every attribute, so each documented one
	// is decoded; in a labelled block the key holds the label.
	// A package block too (decoded only: its project is not there).
	dir := helloWithPolicy(t)
	src := readFile(t, filepath.Join(dir, FileName))
	end := strings.LastIndex(src, "}")
	writeFile(t, filepath.Join(dir, FileName), src[:end]+"  package \"pi-x\" {\n    dir = \"packages/pi-x\"\n    allow_install_scripts = [\"esbuild\"]\n    pretranspile = true\n  }\n"+searchToolsBlock+nodeBlock+installersBlock+src[end:])
	d := mustLoad(t, dir)
	labels := map[string]string{"audit.allow": "GHSA-aaaa-bbbb-cccc", "smoke": "version", "package": "pi-x"}
	for _, f := range fields {
		key := f.Name
		for blk, label := range labels {
			if rest, ok := strings.CutPrefix(f.Name, blk+"."); ok && !strings.Contains(rest, ".") {
				key = blk + "." + label + "." + rest
			}
		}
		if _, ok := d.ranges[key]; !ok {
			t.Errorf("%s (%s) was not recorded: the decoder misses a documented attribute", f.Name, key)
		}
	}
	// The example in Doc is a valid distribution.
	example := doc[strings.Index(doc, "distribution \"<id>\""):]
	example = example[:strings.Index(example, "\n}\n")+3]
	example = strings.Replace(example, `"<id>"`, `"hello"`, 1)
	if _, diags := Parse([]byte(example), FileName, t.TempDir()); diags.HasErrors() {
		t.Errorf("Doc's example:\n%s\n%s", example, fmtDiags(diags))
	}
}

func TestTargets(t *testing.T) {
	for _, ok := range []string{"linux-x64", "linux-arm64", "darwin-arm64", "darwin-x64", "win32-x64", "win32-arm64", "linux-riscv64"} {
		if _, err := ParseTarget(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for in, fix := range map[string]string{"windows-amd64": "win32-x64", "macos-aarch64": "darwin-arm64", "linux-x86_64": "linux-x64", "lnux-x64": "linux-x64"} {
		_, err := ParseTarget(in)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("Did you mean %q", fix)) {
			t.Errorf("%s: %v, want a suggestion of %s", in, err, fix)
		}
	}
	if _, err := ParseTarget(platform.HostTarget()); err != nil {
		t.Errorf("HostTarget %s: %v", platform.HostTarget(), err)
	}
	// A linux target is glibc unless it says musl; npm ci gets --libc.
	for in, libc := range map[string]string{"linux-x64": "glibc", "linux-arm64-musl": "musl", "darwin-arm64": "", "win32-x64": ""} {
		tg, err := ParseTarget(in)
		if err != nil || tg.Libc() != libc || tg.String() != in {
			t.Errorf("%s: %+v %v, libc %q, want %q", in, tg, err, tg.Libc(), libc)
		}
	}
	for _, bad := range []string{"darwin-arm64-musl", "linux-x64-gnu", "linux-x64-musl-static"} {
		if _, err := ParseTarget(bad); err == nil || !strings.Contains(err.Error(), "-musl") {
			t.Errorf("%s: %v, want a refusal naming -musl", bad, err)
		}
	}
}
