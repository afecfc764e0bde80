package engine

import (
	"os/exec"
	"strings"
	"testing"
)

// The engine and the graph know the stage contract only: they must build
// without linking a stage kind, a domain package, the bundler or the
// compressor, so the core stays small and any kind can be swapped out.
func TestEngineKnowsOnlyTheContract(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "piship.dev/piship/graph", "piship.dev/piship/engine").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const self = "piship.dev/piship/"
	// stages/stage/errcode, the error codes (standard library only), is
	// under the contract.
	allowed := []string{"stages/stage", "stages/stage/errcode", "graph", "engine", "cache", "tracing"}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, "esbuild") || strings.Contains(p, "klauspost") {
			t.Errorf("graph/engine link %s", p)
		}
		// The OTLP exporters (gRPC, protobuf) are the run's (tracing/otlp,
		// set up in pipelines): the engine records spans without them,
		// and its tests (under -race in make test) do not compile them.
		if p == self+"tracing/otlp" || strings.Contains(p, "go.opentelemetry.io/otel/exporters/") || strings.HasPrefix(p, "google.golang.org/grpc") {
			t.Errorf("graph/engine link %s: the exporters belong to the run (tracing/otlp, pipelines)", p)
		}
		rest, ok := strings.CutPrefix(p, self)
		if !ok {
			continue
		}
		ok = false
		for _, a := range allowed {
			if rest == a || strings.HasPrefix(rest, a+"/") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("graph/engine import %s: only the contract (stages/stage), graph, engine, cache and tracing are allowed (docs/architecture.md)", p)
		}
	}
}

// Domain packages (stages/<name>/) never import the kind layer: the kinds
// adapt the domain to the engine, not the other way round, so install,
// verify-release, doctor and launch share one copy of each rule.
func TestDomainPackagesDoNotImportKinds(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "piship.dev/piship/stages/...", "piship.dev/piship/cache/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	// The kind layer: the build and release kinds with the registry of
	// all, and the consumer kinds the end-user installer links alone.
	const kinds, consumerKinds = "piship.dev/piship/stages", "piship.dev/piship/stages/consumer"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		if pkg == kinds {
			continue
		}
		for _, d := range strings.Fields(deps) {
			if d == kinds || d == consumerKinds && pkg != kinds {
				t.Errorf("%s imports the kind layer %s (docs/architecture.md)", pkg, d)
			}
			if strings.HasPrefix(pkg, "piship.dev/piship/cache") && strings.HasPrefix(d, kinds+"/") {
				t.Errorf("%s imports %s: cache must not depend on stages/", pkg, d)
			}
		}
	}
}

// The kinds and domain packages write their spans through the
// OpenTelemetry API, tracing/phase and tracing/spankey: they never link
// package tracing, whose exporters (OTLP over HTTP and gRPC) only the run
// in pipelines sets up.
func TestKindsDoNotLinkTheExporters(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "piship.dev/piship/stages/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "piship.dev/piship/tracing" || p == "piship.dev/piship/tracing/otlp" || strings.Contains(p, "go.opentelemetry.io/otel/exporters/") {
			t.Errorf("stages/... link %s: write span keys from tracing/spankey and spans through tracing/phase (docs/architecture.md)", p)
		}
	}
}

// The end-user installer (cmd/piship-install) is the consumer side alone:
// it runs the install pipelines through this engine with the consumer
// kinds, and links none of the build side (the bundler, SBOMs, audits, the
// build kinds), no gRPC or protobuf and no OCI client library (it fetches registry blobs
// with plain GETs of the distribution API: stages/updatesource's OpenBlob);
// pipelines and the shared CLI, which it is made
// of, import no kind layer but the consumer one and no exporter package.
func TestInstallerLinksNoBuildSide(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "piship.dev/piship/cmd/piship-install").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, "esbuild") || strings.Contains(p, "sbom") || strings.Contains(p, "audit") || strings.Contains(p, "grpc") ||
			p == "piship.dev/piship/stages" || p == "piship.dev/piship/tracing/otlp" || strings.HasPrefix(p, "go.opentelemetry.io/otel/exporters/") ||
			strings.HasPrefix(p, "oras.land/") || p == "piship.dev/piship/stages/oci" {
			t.Errorf("cmd/piship-install links %s: the installer is the consumer side only (docs/architecture.md)", p)
		}
		if strings.HasPrefix(p, "google.golang.org/protobuf/") {
			t.Errorf("cmd/piship-install links %s: the installer speaks no protobuf; a generated package's init keeps the whole runtime linked (1.87 MB), see stages/tuf/protobufspecs/README.md", p)
		}
		if p == "html/template" {
			t.Errorf("cmd/piship-install links html/template: a binary that executes templates keeps every exported method it links (2.6 MB of the installer); write the markup by hand as tracing/timings_page.go does")
		}
	}
	out, err = exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "piship.dev/piship/pipelines", "piship.dev/piship/cmd/internal/cli").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, d := range strings.Fields(imports) {
			if d == "piship.dev/piship/stages" || d == "piship.dev/piship/tracing/otlp" || strings.HasPrefix(d, "piship.dev/piship/cmd/piship") {
				t.Errorf("%s imports %s: the kinds and the exporter come from the binary (pipelines.Config.Kinds, Exporter)", pkg, d)
			}
		}
	}
}
