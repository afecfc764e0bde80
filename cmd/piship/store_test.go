package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"piship.dev/piship/tracing"
)

// Two install homes sharing one cache: the second install of the same
// release links the node_modules files the first kept in the store, doctor
// reports the store, PISHIP_STORE=off writes everything, and a mode that is
// not offered is refused before anything is written.
func TestInstallsShareTheStore(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	mustRelease(t, env, dir)
	arc := filepath.Join(dir, "dist", "releases", helloRelease+".tar.zst")
	root := t.TempDir()
	homeEnv := func(n string, kv ...string) map[string]string {
		e := map[string]string{"PISHIP_CACHE_HOME": env["PISHIP_CACHE_HOME"], "PISHIP_PROGRESS": "0",
			"PISHIP_INSTALL_HOME": filepath.Join(root, n, "i"), "PISHIP_BIN_HOME": filepath.Join(root, n, "b"),
			"PISHIP_STATE_HOME": filepath.Join(root, n, "s"), "PISHIP_STORE": "hardlink"}
		for i := 0; i < len(kv); i += 2 {
			e[kv[i]] = kv[i+1]
		}
		return e
	}
	var rec *tracetest.SpanRecorder
	install := func(e map[string]string) string {
		t.Helper()
		rec = tracetest.NewSpanRecorder()
		code, stdout, stderr := cliTraced(t, []sdktrace.SpanProcessor{rec}, e, "install", arc)
		if code != exitOK {
			t.Fatalf("install: exit %d\n%s", code, stderr)
		}
		return stdout + stderr // the result on stdout, warnings on stderr
	}
	install(homeEnv("one"))
	// The store's lookups are one "cache lookup" span of the install stage:
	// a miss naming how many files it lacked, then a hit.
	storeLookup(t, rec, false, "5 of 5 eligible files were not in the store (written, then kept)")
	if out := install(homeEnv("two")); !strings.Contains(out, "(15 files, 5 linked from the store,") {
		t.Errorf("the second install did not link the 5 node_modules files:\n%s", out)
	}
	storeLookup(t, rec, true, "")
	file := func(n, rel string) os.FileInfo {
		fi, err := os.Stat(filepath.Join(root, n, "i", "apps", "hello", "1.0.0", "payload", rel))
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	if !os.SameFile(file("one", "node_modules/hello-greeting/greeting.txt"), file("two", "node_modules/hello-greeting/greeting.txt")) {
		t.Error("the two installations do not share greeting.txt")
	}
	if os.SameFile(file("one", "bin/hello"), file("two", "bin/hello")) {
		t.Error("bin/hello is shared: only node_modules files are stored")
	}

	code, stdout, stderr := piship(t, homeEnv("two"), "doctor", "hello")
	if code != exitOK || !strings.Contains(stdout, "store: "+filepath.Join(env["PISHIP_CACHE_HOME"], "store")+": 5 objects, 0 no longer linked removed") {
		t.Errorf("doctor: exit %d\n%s%s", code, stdout, stderr)
	}

	// Objects are kept for a day after nothing links them.
	code, stdout, stderr = piship(t, homeEnv("two"), "cache", "prune")
	if code != exitOK || !strings.Contains(stdout, "store: 5 objects, removed 0 no longer linked") {
		t.Errorf("cache prune: exit %d\n%s%s", code, stdout, stderr)
	}
	if out := install(homeEnv("three", "PISHIP_STORE", "off")); strings.Contains(out, "linked") {
		t.Errorf("PISHIP_STORE=off linked files:\n%s", out)
	}
	code, _, stderr = piship(t, homeEnv("four", "PISHIP_STORE", "copy"), "install", arc)
	if code == exitOK || !strings.Contains(stderr, "CONFIG_INVALID: PISHIP_STORE=copy is not offered") {
		t.Errorf("PISHIP_STORE=copy: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "four", "i", "apps", "hello")); !os.IsNotExist(err) {
		t.Errorf("a refused install left apps/hello (%v)", err)
	}
}

// storeLookup checks the one store "cache lookup" span of an install run:
// a child of the install stage's span, hit or not, and its miss reason.
func storeLookup(t *testing.T, rec *tracetest.SpanRecorder, hit bool, reason string) {
	t.Helper()
	parents := map[string]string{}
	for _, s := range rec.Ended() {
		parents[s.SpanContext().SpanID().String()] = s.Name()
	}
	var found int
	for _, s := range rec.Ended() {
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if s.Name() != "cache lookup" || attrs[tracing.AttrCacheName] != "store" {
			continue
		}
		found++
		if p := parents[s.Parent().SpanID().String()]; !strings.HasPrefix(p, "install ") {
			t.Errorf("the store lookup span's parent is %q, want the install stage's span", p)
		}
		if attrs[tracing.AttrCacheHit] != map[bool]string{true: "true", false: "false"}[hit] || attrs[tracing.AttrCacheMissReason] != reason {
			t.Errorf("store lookup span: hit %s, miss reason %q; want hit %v, reason %q", attrs[tracing.AttrCacheHit], attrs[tracing.AttrCacheMissReason], hit, reason)
		}
	}
	if found != 1 {
		t.Errorf("%d store lookup spans, want 1", found)
	}
}
