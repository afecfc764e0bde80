package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"piship.dev/piship/graph"
	"piship.dev/piship/stages"
	"piship.dev/piship/tracing/otlp"
)

// A collector that refuses the spans while the run goes on (a batch is
// exported after 10 ms, refused with 400, which the exporter does not
// retry) gives its one warning through the progress output: with
// --progress json every line on stderr stays a JSON object, the warning a
// log event, instead of a raw line in the middle of the stream (or, on a
// terminal, inside the live view).
func TestExportWarningGoesThroughTheProgressView(t *testing.T) {
	refused := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case refused <- struct{}{}:
		default:
		}
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer srv.Close()
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10") // read by the SDK from the process environment
	src := "pipeline \"p\" {\n" +
		"  stage \"exec\" \"a\" { command = [\"true\"] }\n" +
		"  stage \"exec\" \"b\" {\n    command = [\"sleep\", \"0.5\"]\n    depends_on = [stage.a]\n  }\n}\n"
	gs, _, diags := graph.Parse([]byte(src), "p.hcl", t.TempDir(), stages.Default())
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "PISHIP_CACHE_HOME": t.TempDir()}
	var stderr bytes.Buffer
	o := Execute(context.Background(), gs[0], nil, Config{Stderr: &stderr, Getenv: func(k string) string { return env[k] },
		Parallelism: 1, Progress: "json", Exporter: otlp.Exporter})
	if o.Code != ExitOK {
		t.Fatalf("exit %d:\n%s", o.Code, stderr.String())
	}
	select {
	case <-refused:
	default:
		t.Fatal("the collector saw no export")
	}
	warnings := 0
	for line := range strings.Lines(stderr.String()) {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("a line on stderr is not a progress event: %q\n%s", line, stderr.String())
		}
		if msg, _ := ev["message"].(string); strings.Contains(msg, "spans not exported to") {
			warnings++
			if ev["event"] != "log" {
				t.Errorf("the warning is a %v event, want log", ev["event"])
			}
		}
	}
	if warnings != 1 {
		t.Errorf("%d export warnings in the progress stream, want 1:\n%s", warnings, stderr.String())
	}
}
