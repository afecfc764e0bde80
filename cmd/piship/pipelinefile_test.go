package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"piship.dev/piship/tracing"
)

// firstLine is the first line of s.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// withMarker is a built-in pipeline with one more stage, custom_marker,
// before its verdicts: a distribution's own copy that is told apart by
// its progress.
func withMarker(t *testing.T, name, after string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "pipelines", name+".hcl"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	i := strings.LastIndex(src, "\n  verdicts = [")
	if i < 0 {
		t.Fatalf("%s.hcl has no verdicts line", name)
	}
	marker := "\n  stage \"exec\" \"custom_marker\" {\n    command    = [\"true\"]\n    depends_on = [" + after + "]\n  }\n"
	return src[:i] + marker + src[i:]
}

// pipelineFileOf is the piship.pipeline.file of the root span rec recorded.
func pipelineFileOf(t *testing.T, rec *tracetest.SpanRecorder, pipeline string) string {
	t.Helper()
	for _, sp := range rec.Ended() {
		if sp.Name() != tracing.PipelineSpanName(pipeline) {
			continue
		}
		for _, kv := range sp.Attributes() {
			if string(kv.Key) == tracing.AttrPipelineFile {
				return kv.Value.AsString()
			}
		}
	}
	t.Fatalf("no root span %s with %s", tracing.PipelineSpanName(pipeline), tracing.AttrPipelineFile)
	return ""
}

// A distribution's own pipelines/build.hcl and pipelines/release.hcl run
// instead of the built-in ones; --builtin runs the built-in ones. Each
// run names its file in its first line and on its root span, and the
// release made by the distribution's copy (one stage more) is the same
// release, byte for byte.
func TestDistributionPipelinesWinOverTheBuiltIn(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	own := map[string]string{}
	for name, after := range map[string]string{"build": "stage.publish", "release": "stage.set"} {
		own[name] = writeFile(t, filepath.Join(dir, "pipelines"), name+".hcl", withMarker(t, name, after))
	}
	archive := filepath.Join(dir, "dist", "releases", helloRelease+".tar.zst.sha256")
	var sums []string
	for _, tc := range []struct {
		cmd     string
		builtin bool
	}{{"build", false}, {"build", true}, {"release", false}, {"release", true}} {
		args := []string{tc.cmd, dir}
		file := own[tc.cmd]
		if tc.builtin {
			args = append(args, "--builtin")
			file = "embedded:pipelines/" + tc.cmd + ".hcl"
		}
		rec := tracetest.NewSpanRecorder()
		code, _, stderr := cliTraced(t, []sdktrace.SpanProcessor{rec}, env, args...)
		if code != exitOK {
			t.Fatalf("piship %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
		if got, want := firstLine(stderr), tc.cmd+": "+file; got != want {
			t.Errorf("piship %s: first line %q, want %q", strings.Join(args, " "), got, want)
		}
		if ran := strings.Contains(stderr, "exec custom_marker: DONE"); ran == tc.builtin {
			t.Errorf("piship %s: the distribution's stage custom_marker ran: %v\n%s", strings.Join(args, " "), ran, stderr)
		}
		if got := pipelineFileOf(t, rec, tc.cmd); got != file {
			t.Errorf("piship %s: the root span's %s is %q, want %q", strings.Join(args, " "), tracing.AttrPipelineFile, got, file)
		}
		if tc.cmd == "release" {
			b, err := os.ReadFile(archive)
			if err != nil {
				t.Fatal(err)
			}
			sums = append(sums, string(b))
		}
	}
	if len(sums) != 2 || sums[0] != sums[1] {
		t.Errorf("the distribution's release.hcl and the built-in one made different archives: %q", sums)
	}
}

// build and release do not look in the working directory's ./pipelines:
// only the distribution's own pipelines/ replaces the built-in ones.
func TestBuildIgnoresTheWorkingDirectorysPipelines(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	cwd := t.TempDir()
	writeFile(t, filepath.Join(cwd, "pipelines"), "build.hcl", "this is not a pipeline\n")
	t.Chdir(cwd)
	code, _, stderr := piship(t, env, "build", dir)
	if code != exitOK || firstLine(stderr) != "build: embedded:pipelines/build.hcl" {
		t.Fatalf("build from a directory with pipelines/build.hcl: exit %d\n%s", code, stderr)
	}
}

// piship run names the file it runs in its first line: the path given,
// ./pipelines/NAME.hcl, or the built-in one with --builtin (which
// excludes --pipelines and takes only a name).
func TestRunNamesItsFile(t *testing.T) {
	cwd := t.TempDir()
	p := writeFile(t, cwd, "p.hcl", "pipeline \"p\" {\n  stage \"exec\" \"a\" { command = [\"true\"] }\n}\n")
	own := writeFile(t, filepath.Join(cwd, "pipelines"), "demo.hcl", "pipeline \"demo\" {\n  stage \"exec\" \"mine\" { command = [\"true\"] }\n}\n")
	empty := t.TempDir()
	t.Chdir(cwd)
	env := map[string]string{"PISHIP_PROGRESS": "0"}
	for _, tc := range []struct {
		args  []string
		code  int
		first string
	}{
		{[]string{"run", p}, exitOK, "p: " + p},
		{[]string{"run", "p.hcl"}, exitOK, "p: " + p},
		{[]string{"run", "demo"}, exitOK, "demo: " + own},
		// The built-in demo vets a Go tree; in one without Go files its
		// stages fail (CONFIG_INVALID), after the first line.
		{[]string{"run", "demo", "--builtin", "--input", "source=" + empty}, exitUsage, "demo: embedded:pipelines/demo.hcl"},
	} {
		code, _, stderr := piship(t, env, tc.args...)
		if code != tc.code || firstLine(stderr) != tc.first {
			t.Errorf("piship %s: exit %d, first line %q; want %d, %q\n%s", strings.Join(tc.args, " "), code, firstLine(stderr), tc.code, tc.first, stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "demo", "--builtin", "--pipelines", cwd}, "USAGE_INVALID: --builtin and --pipelines exclude each other"},
		{[]string{"run", p, "--builtin"}, "USAGE_INVALID: --builtin runs a pipeline built into piship, by its name; " + p + " is a file"},
		{[]string{"run", "nope", "--builtin"}, `CONFIG_INVALID: no built-in pipeline "nope"; the built-in pipelines are build, `},
	} {
		code, _, stderr := piship(t, env, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("piship %s: exit %d, want 2 and one line with %q\n%s", strings.Join(tc.args, " "), code, tc.want, stderr)
		}
	}
}

// signedRelease is the release pipeline of a distribution that signs its
// release set (the SHA256SUMS over every target's archive, as GoReleaser
// signs its checksums): the built-in modules and one exec stage, under 30
// lines.
const signedRelease = `pipeline "release" {
  input "distribution" { type = string }
  stage "release_inputs" "inputs" { distribution = input.distribution }
  module "target" {
    source   = "builtin:target"
    for_each = stage.inputs.targets
    inputs   = each.value
  }
  stage "release_set" "set" {
    releases = stage.inputs.releases
    id       = stage.inputs.id
    version  = stage.inputs.version
    archives = { for t, m in module.target : m.published.archive => m.archive.sha256 }
  }
  stage "exec" "sign" {
    command = ["sh", "-c", "sha256sum \"$1\" > \"$1.sig\"", "sign", stage.set.path]
  }
}
`

// A release engineer adds one stage to the release through the built-in
// modules, in a short file instead of a copy of release.hcl: the release
// it makes has the same release --json document as the built-in one's,
// and the stage ran.
func TestReleaseComposedFromBuiltinModules(t *testing.T) {
	if n := strings.Count(signedRelease, "\n"); n >= 30 {
		t.Fatalf("the composed release is %d lines, not under 30", n)
	}
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	writeFile(t, filepath.Join(dir, "pipelines"), "release.hcl", signedRelease)
	docs := map[bool]map[string]any{}
	for _, builtin := range []bool{false, true} {
		args := []string{"release", dir, "--json"}
		if builtin {
			args = append(args, "--builtin")
		}
		code, stdout, stderr := piship(t, env, args...)
		if code != exitOK {
			t.Fatalf("piship %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		// The run's duration and the cache it found (the first release
		// fills it) differ between any two runs.
		delete(doc, "seconds")
		for _, t := range doc["targets"].([]any) {
			delete(t.(map[string]any), "runtimeCache")
		}
		docs[builtin] = doc
		if !builtin {
			sig := filepath.Join(dir, "dist", "releases", "hello-1.0.0.SHA256SUMS.sig")
			if b, err := os.ReadFile(sig); err != nil || !strings.Contains(string(b), "hello-1.0.0.SHA256SUMS") {
				t.Fatalf("the sign stage did not sign the archive: %v %q\n%s", err, b, stderr)
			}
		}
	}
	a, _ := json.MarshalIndent(docs[false], "", "  ")
	b, _ := json.MarshalIndent(docs[true], "", "  ")
	if string(a) != string(b) {
		t.Errorf("release --json of the composed pipeline differs from the built-in one's:\n%s\nbuilt-in:\n%s", a, b)
	}
}
