package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkStart times `piship version` (the real binary, as make build
// builds it) against a Go hello world built here the same way, run side by
// side so both see the same machine load. What piship pays beyond the
// hello world is its own start: package initialisation (GODEBUG=inittrace=1
// lists it) and mapping a larger binary; every install, update, doctor and
// launch through piship pays it. docs/performance.md ("CLI start") has the
// numbers and what is left.
//
// The end-user installer (piship-install, what a release ships as its
// piship) runs the same `version` in the same loop: installer-ns/op, and
// installer/piship its ratio to piship (issue 30: no slower than piship).
//
// ns/op is piship's median, hello-ns/op the hello world's and piship/hello
// their ratio: medians, because on a shared machine a few runs land behind
// someone else's compile.
//
//	go test -run '^$' -bench Start -benchtime 50x ./cmd/piship/
func BenchmarkStart(b *testing.B) {
	piship := realBinaries(b)
	installer := filepath.Join(filepath.Dir(piship), "piship-install")
	hello := buildHello(b)
	env := append(os.Environ(), "PISHIP_CACHE_HOME="+filepath.Join(b.TempDir(), "cache"))
	run := func(bin string, args ...string) time.Duration {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v\n%s", bin, args, err, out)
		}
		return time.Since(start)
	}
	// The first version hashes the executable and stamps the digest in the
	// cache home; every later one reads the stamp, as a user's do.
	run(piship, "version")
	run(installer, "version")
	run(hello)
	var ps, is, hs []time.Duration
	for b.Loop() {
		hs = append(hs, run(hello))
		ps = append(ps, run(piship, "version"))
		is = append(is, run(installer, "version"))
	}
	p, i, h := median(ps), median(is), median(hs)
	b.ReportMetric(float64(p.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(i.Nanoseconds()), "installer-ns/op")
	b.ReportMetric(float64(h.Nanoseconds()), "hello-ns/op")
	b.ReportMetric(float64(p)/float64(h), "piship/hello")
	b.ReportMetric(float64(i)/float64(p), "installer/piship")
	for _, bin := range []string{piship, installer, hello} {
		if fi, err := os.Stat(bin); err == nil {
			b.Logf("%s: %d bytes", filepath.Base(bin), fi.Size())
		}
	}
}

// buildHello builds a Go hello world (one line to stdout, like version)
// with make build's flags and returns its path.
func buildHello(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	files := map[string]string{
		"go.mod":  "module hello\n\ngo 1.26\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-trimpath")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build hello: %v\n%s", err, out)
	}
	return bin
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
