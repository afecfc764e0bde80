package pipelines

import (
	"bytes"
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"piship.dev/piship/engine"
	"piship.dev/piship/graph"
	"piship.dev/piship/stages"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/tracing"
)

// A release's root span names what it produced, from the stages that
// succeeded; a stage that did not succeed adds nothing.
func TestRootAttrsNameWhatTheReleaseProduced(t *testing.T) {
	result := func(name string, st engine.Status, o any) *engine.StageResult {
		m, err := stage.EncodeOutputs(o)
		if err != nil {
			t.Fatal(err)
		}
		return &engine.StageResult{Stage: &graph.Stage{Name: name}, Status: st, Outputs: m}
	}
	in := stages.ReleaseInputsOutputs{ID: "pi", Version: "1.2.3", Targets: map[string]stages.ReleaseTarget{
		"linux-x64": {Name: "pi-1.2.3-linux-x64"}, "darwin-arm64": {Name: "pi-1.2.3-darwin-arm64"}}}
	arc := stages.ArchiveOutputs{SHA256: "ab12"}
	const archive = `module.target["linux-x64"].module.publish.stage.archive`
	got := attrMap(rootAttrs("release", &engine.Result{Stages: []*engine.StageResult{
		result("inputs", engine.Succeeded, in), result(archive, engine.Succeeded, arc),
		result(`module.target["darwin-arm64"].module.publish.stage.archive`, engine.Succeeded, stages.ArchiveOutputs{SHA256: "cd34"}),
	}}))
	want := map[string]string{tracing.AttrDistribution: "pi", tracing.AttrVersion: "1.2.3",
		tracing.AttrReleaseName: "pi-1.2.3-darwin-arm64 pi-1.2.3-linux-x64", tracing.AttrArchiveSHA256: "cd34 ab12"}
	if len(got) != len(want) {
		t.Errorf("attributes %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	failed := attrMap(rootAttrs("release", &engine.Result{Stages: []*engine.StageResult{
		result("inputs", engine.Succeeded, in), result(archive, engine.Failed, arc),
	}}))
	if _, ok := failed[tracing.AttrArchiveSHA256]; ok || failed[tracing.AttrReleaseName] == "" {
		t.Errorf("with the archive stage failed: %v, want the release name and no digest", failed)
	}
}

// The root span carries the pipeline and the exit code the run ends with.
func TestRootSpanCarriesTheExitCode(t *testing.T) {
	for src, code := range map[string]int64{
		"pipeline \"ok\" {\n  stage \"exec\" \"a\" { command = [\"true\"] }\n}\n":   ExitOK,
		"pipeline \"bad\" {\n  stage \"exec\" \"a\" { command = [\"false\"] }\n}\n": ExitFailed,
	} {
		gs, _, diags := graph.Parse([]byte(src), "p.hcl", t.TempDir(), stages.Default())
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		sr := tracetest.NewSpanRecorder()
		var stderr bytes.Buffer
		o := Execute(context.Background(), gs[0], nil, Config{Stderr: &stderr, Getenv: func(string) string { return "" },
			Parallelism: 1, SpanProcessors: []sdktrace.SpanProcessor{sr}})
		var root map[string]string
		var exit int64 = -1
		for _, s := range sr.Ended() {
			if s.Name() == tracing.PipelineSpanName(gs[0].Name) {
				root = map[string]string{}
				for _, kv := range s.Attributes() {
					root[string(kv.Key)] = kv.Value.Emit()
					if kv.Key == tracing.AttrExitCode {
						exit = kv.Value.AsInt64()
					}
				}
			}
		}
		if root == nil || root[tracing.AttrPipeline] != gs[0].Name || exit != code || int64(o.Code) != code {
			t.Errorf("%s: root attributes %v, exit code %d; want %s=%s and %s=%d (run ended %d)\n%s",
				gs[0].Name, root, exit, tracing.AttrPipeline, gs[0].Name, tracing.AttrExitCode, code, o.Code, stderr.String())
		}
	}
}

func attrMap(kv []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, a := range kv {
		m[string(a.Key)] = a.Value.Emit()
	}
	return m
}
