package launch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"go/build"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/platform"
)

const script = `const fs = require("fs");
const args = process.argv.slice(2);
if (process.env.MARK) fs.writeFileSync(process.env.MARK, "ran");
if (process.env.TP_OUT) fs.writeFileSync(process.env.TP_OUT, process.env.TRACEPARENT || "");
if (process.env.CC_OUT) fs.writeFileSync(process.env.CC_OUT, process.env.NODE_COMPILE_CACHE || "");
if (args[0] === "wait") {
  process.on("SIGTERM", () => process.exit(3));
  fs.writeFileSync(process.env.READY, "ready");
  setInterval(() => {}, 1000);
} else {
  console.log(JSON.stringify(args));
  process.exitCode = Number(process.env.EXIT_CODE || 0);
}
`

// lockIdentity is what a lock says of the command and the entry, which
// the receipt's record must repeat.
const lockIdentity = `"distribution":{"command":"hello"},"runtime":{"entry":"node_modules/x/cli.js"}`

type fixture struct {
	home, payload string
	rec           receipt.Release
}

func hexSum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// install writes a payload and a receipt naming it, by hand.
func install(t *testing.T, mod func(*receipt.Release)) *fixture {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, "apps", "hello", "1.0.0")
	pay := filepath.Join(dir, "payload")
	plat, arch, _ := strings.Cut(platform.HostTarget(), "-")
	files := map[string]string{
		"node_modules/x/cli.js": script,
		"metadata/target.json":  `{"arch":"` + arch + `","platform":"` + plat + `"}` + "\n",
		"piship.lock":           `{"schema":"piship-lock/v1",` + lockIdentity + `,"verifyAtLaunch":false}` + "\n",
	}
	inv := map[string]string{}
	for p, data := range files {
		full := filepath.Join(pay, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		inv[p] = hexSum([]byte(data))
	}
	invData, _ := json.Marshal(inv)
	os.WriteFile(filepath.Join(pay, "metadata", "inventory.json"), invData, 0o644)
	rec := receipt.Release{Version: "1.0.0", Dir: dir, Payload: pay, LockSHA256: hexSum([]byte(files["piship.lock"])),
		Target: platform.HostTarget(), Command: "hello", Entry: "node_modules/x/cli.js"}
	if mod != nil {
		mod(&rec)
	}
	rc := receipt.New("hello")
	rc.Put(rec)
	rc.Active = "1.0.0"
	if err := receipt.Write(home, rc); err != nil {
		t.Fatal(err)
	}
	return &fixture{home: home, payload: pay, rec: rec}
}

func needNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not on PATH: the tests need Node.js (see README)")
	}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := receipt.CodeOf(err); got != code {
		t.Fatalf("err = %v, want %s", err, code)
	}
}

func TestRunArgsAndExitCode(t *testing.T) {
	needNode(t)
	f := install(t, nil)
	var out bytes.Buffer
	code, tr, err := Run(context.Background(), f.home, "hello", []string{"one", "two words", "--x"},
		Options{Stdout: &out, Env: []string{"EXIT_CODE=42"}})
	phases := tr.Phases
	if err != nil {
		t.Fatal(err)
	}
	if code != 42 || strings.TrimSpace(out.String()) != `["one","two words","--x"]` {
		t.Fatalf("code %d out %q", code, out.String())
	}
	var names []string
	for i, p := range phases {
		names = append(names, p.Name)
		if i > 0 && (p.At < phases[i-1].At || p.Start != phases[i-1].At) || p.At < p.Start {
			t.Fatalf("phases out of order or not tiling the start: %+v", phases)
		}
	}
	want := []string{PhaseGateAcquired, PhaseLeaseHeld, PhaseGateReleased, PhaseLockChecked, PhaseSearchTools, PhaseNodeStarted, PhaseNodeExited}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("phases %v, want %v", names, want)
	}
	var buf bytes.Buffer
	FormatPhases(&buf, phases)
	if !strings.Contains(buf.String(), "launch node_started: ") {
		t.Fatal(buf.String())
	}
	if live, _ := receipt.ListLeases(f.home, "hello"); len(live) != 0 {
		t.Fatalf("lease left: %+v", live)
	}
}

func TestRunRefusesChangedLock(t *testing.T) {
	needNode(t)
	f := install(t, nil)
	os.WriteFile(filepath.Join(f.payload, "piship.lock"), []byte(`{"schema":"piship-lock/v1",`+lockIdentity+`,"verifyAtLaunch":false,"x":1}`+"\n"), 0o644)
	mark := filepath.Join(t.TempDir(), "mark")
	_, _, err := Run(context.Background(), f.home, "hello", nil, Options{Env: []string{"MARK=" + mark}})
	wantCode(t, err, receipt.CodeIntegrity)
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("node ran despite the changed lock")
	}
	if l, _ := receipt.ListLeases(f.home, "hello"); len(l) != 0 {
		t.Fatal("lease left after a refusal")
	}
	// With no digest recorded the check is skipped, not failed.
	g := install(t, func(r *receipt.Release) { r.LockSHA256 = "" })
	os.WriteFile(filepath.Join(g.payload, "piship.lock"), []byte(`{`+lockIdentity+`}`), 0o644)
	if code, _, err := Run(context.Background(), g.home, "hello", nil, Options{Stdout: &bytes.Buffer{}}); err != nil || code != 0 {
		t.Fatalf("code %d err %v", code, err)
	}
}

// A receipt whose active record points at a consistent copy of the
// payload outside apps/<id>/ (moved there, or reached through a link) is
// refused before anything of it is read or run; one under a .retained-*
// directory of apps/<id> still runs.
func TestRunRefusesPayloadOutsideTheAppDir(t *testing.T) {
	needNode(t)
	f := install(t, nil)
	elsewhere := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(elsewhere, os.DirFS(filepath.Dir(f.payload))); err != nil {
		t.Fatal(err)
	}
	retained := filepath.Join(f.home, "apps", "hello", ".retained-1.0.0-abcd")
	if err := os.CopyFS(retained, os.DirFS(filepath.Dir(f.payload))); err != nil {
		t.Fatal(err)
	}
	point := func(dir, pay string) {
		rc, err := receipt.Read(f.home, "hello")
		if err != nil {
			t.Fatal(err)
		}
		rc.Releases[0].Dir, rc.Releases[0].Payload = dir, pay
		if err := receipt.Write(f.home, rc); err != nil {
			t.Fatal(err)
		}
	}
	mark := filepath.Join(t.TempDir(), "mark")
	refused := func(what string) {
		t.Helper()
		_, _, err := Run(context.Background(), f.home, "hello", nil, Options{Env: []string{"MARK=" + mark}, Stdout: &bytes.Buffer{}})
		wantCode(t, err, receipt.CodeIntegrity)
		if !strings.Contains(err.Error(), "outside") || !strings.Contains(err.Error(), "piship doctor") {
			t.Fatalf("%s: %v", what, err)
		}
		if _, err := os.Stat(mark); err == nil {
			t.Fatalf("%s: node ran", what)
		}
	}
	point(elsewhere, filepath.Join(elsewhere, "payload"))
	refused("a copy elsewhere")
	point(f.rec.Dir, filepath.Join(elsewhere, "payload"))
	refused("the payload elsewhere")
	point(filepath.Join(f.rec.Dir, "..", "..", "..", "..", filepath.Base(filepath.Dir(elsewhere)), "copy"), filepath.Join(elsewhere, "payload"))
	refused("dot-dot")
	// A link inside apps/hello leading out.
	link := filepath.Join(f.home, "apps", "hello", "2.0.0")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	point(link, filepath.Join(link, "payload"))
	refused("a link out")

	point(retained, filepath.Join(retained, "payload"))
	if code, _, err := Run(context.Background(), f.home, "hello", nil, Options{Stdout: &bytes.Buffer{}}); err != nil || code != 0 {
		t.Fatalf("retained: code %d err %v", code, err)
	}
}

func TestRunVerifyAtLaunch(t *testing.T) {
	needNode(t)
	// Without verifyAtLaunch a changed payload file is not looked at.
	f := install(t, nil)
	cli := filepath.Join(f.payload, "node_modules", "x", "cli.js")
	os.WriteFile(cli, []byte(script+"\n// changed\n"), 0o644)
	if _, _, err := Run(context.Background(), f.home, "hello", nil, Options{Stdout: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	// With it, the full inventory check refuses the start.
	g := install(t, func(r *receipt.Release) { r.VerifyAtLaunch = true })
	code, tr, err := Run(context.Background(), g.home, "hello", nil, Options{Stdout: &bytes.Buffer{}})
	if err != nil || code != 0 || tr.Phases[4].Name != PhaseInventoryVerified {
		t.Fatalf("clean payload: %d %v %+v", code, err, tr.Phases)
	}
	os.WriteFile(filepath.Join(g.payload, "node_modules", "x", "cli.js"), []byte(script+"\n// changed\n"), 0o644)
	_, _, err = Run(context.Background(), g.home, "hello", nil, Options{})
	wantCode(t, err, receipt.CodeIntegrity)
	if !strings.Contains(err.Error(), "changed node_modules/x/cli.js") {
		t.Fatal(err)
	}
	// An extra file is refused too.
	h := install(t, func(r *receipt.Release) { r.VerifyAtLaunch = true })
	os.WriteFile(filepath.Join(h.payload, "extra.js"), []byte("x"), 0o644)
	_, _, err = Run(context.Background(), h.home, "hello", nil, Options{})
	wantCode(t, err, receipt.CodeIntegrity)
}

func TestRunRefusals(t *testing.T) {
	_, _, err := Run(context.Background(), t.TempDir(), "hello", nil, Options{})
	wantCode(t, err, receipt.CodeUnavailable)

	f := install(t, nil)
	os.WriteFile(filepath.Join(f.payload, "metadata", "target.json"), []byte(`{"platform":"sunos","arch":"s390x"}`), 0o644)
	_, _, err = Run(context.Background(), f.home, "hello", nil, Options{})
	wantCode(t, err, receipt.CodeConfigInvalid)

	g := install(t, nil)
	_, _, err = Run(context.Background(), g.home, "hello", nil, Options{Node: filepath.Join(t.TempDir(), "no-node")})
	wantCode(t, err, receipt.CodeUnavailable)
	if l, _ := receipt.ListLeases(g.home, "hello"); len(l) != 0 {
		t.Fatal("lease left after node was not found")
	}

	// A held gate: the start waits its bound and gives up.
	release, err := receipt.TakeGate(context.Background(), g.home, "hello", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err = Run(context.Background(), g.home, "hello", nil, Options{GateWait: 100 * time.Millisecond})
	wantCode(t, err, receipt.CodeUnavailable)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("waited %v", d)
	}
	release()
}

func TestRunContextCancel(t *testing.T) {
	needNode(t)
	f := install(t, nil)
	ready := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			if _, err := os.Stat(ready); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	code, _, err := Run(ctx, f.home, "hello", []string{"wait"}, Options{Env: []string{"READY=" + ready}})
	if err != nil || code != 3 {
		t.Fatalf("code %d err %v", code, err)
	}
}

// TestImportsStayTiny keeps the launch path on the standard library and
// package receipt: no dist, HCL, engine or telemetry.
func TestImportsStayTiny(t *testing.T) {
	const self = "piship.dev/piship/stages/home/"
	allowed := map[string]bool{self + "receipt": true, "piship.dev/piship/stages/platform": true,
		"piship.dev/piship/cache/atomicfs": true, "piship.dev/piship/cache/canon": true, "piship.dev/piship/stages/proc": true,
		"piship.dev/piship/stages/stage/errcode": true}
	for _, dir := range []string{".", "../receipt", "../../platform", "../../../cache/atomicfs", "../../../cache/canon", "../../proc", "../../stage/errcode"} {
		for _, goos := range []string{"linux", "darwin", "windows", "freebsd"} {
			ctx := build.Default
			ctx.GOOS = goos
			pkg, err := ctx.ImportDir(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range pkg.Imports {
				first, _, _ := strings.Cut(imp, "/")
				if strings.Contains(first, ".") && !allowed[imp] {
					t.Errorf("%s (%s) imports %s", dir, goos, imp)
				}
			}
		}
	}
}

// A start is a trace: with TRACEPARENT it continues the caller's trace,
// node gets a TRACEPARENT naming the launch's root span, the phases tile
// the root, and PISHIP_TRACE_FILE receives OTLP/JSON a collector accepts.
func TestRunTrace(t *testing.T) {
	needNode(t)
	f := install(t, nil)
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	t.Setenv("TRACEPARENT", parent)
	traceFile := filepath.Join(t.TempDir(), "launch.json")
	t.Setenv(EnvTraceFile, traceFile)
	tpOut := filepath.Join(t.TempDir(), "tp")
	code, tr, err := Run(context.Background(), f.home, "hello", nil, Options{Stdout: &bytes.Buffer{}, Env: []string{"TP_OUT=" + tpOut}})
	if err != nil || code != 0 {
		t.Fatal(code, err)
	}
	if got := hex.EncodeToString(tr.TraceID[:]); got != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("trace id %s", got)
	}
	if b, _ := os.ReadFile(tpOut); string(b) != tr.Traceparent() || !strings.Contains(string(b), hex.EncodeToString(tr.Root[:])) {
		t.Fatalf("node saw TRACEPARENT %q, want %q", b, tr.Traceparent())
	}
	var buf bytes.Buffer
	tr.Format(&buf)
	if !strings.Contains(buf.String(), "launch lease_held: ") || !strings.Contains(buf.String(), "launch total: ") {
		t.Fatal(buf.String())
	}
	if err := tr.Export("hello"); err != nil {
		t.Fatal(err)
	}
	var req struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []struct {
					Key   string
					Value struct{ StringValue string }
				}
			}
			ScopeSpans []struct {
				Spans []struct {
					TraceID, SpanID, ParentSpanID, Name string
					StartTimeUnixNano, EndTimeUnixNano  string
				}
			}
		}
	}
	data, _ := os.ReadFile(traceFile)
	if err := json.Unmarshal(data, &req); err != nil {
		t.Fatal(err)
	}
	spans := req.ResourceSpans[0].ScopeSpans[0].Spans
	if len(spans) != len(tr.Phases)+1 || spans[0].Name != "launch hello" || spans[0].ParentSpanID != "b7ad6b7169203331" {
		t.Fatalf("spans %+v", spans)
	}
	if req.ResourceSpans[0].Resource.Attributes[0].Value.StringValue != "piship-launch" {
		t.Fatalf("resource %+v", req.ResourceSpans[0].Resource)
	}
	rootStart, _ := strconv.ParseInt(spans[0].StartTimeUnixNano, 10, 64)
	rootEnd, _ := strconv.ParseInt(spans[0].EndTimeUnixNano, 10, 64)
	ids := map[string]bool{}
	for _, sp := range spans {
		if len(sp.SpanID) != 16 || ids[sp.SpanID] {
			t.Fatalf("span id %q missing or repeated in %+v", sp.SpanID, spans)
		}
		ids[sp.SpanID] = true
	}
	prevEnd := rootStart
	for _, sp := range spans[1:] {
		st, _ := strconv.ParseInt(sp.StartTimeUnixNano, 10, 64)
		en, _ := strconv.ParseInt(sp.EndTimeUnixNano, 10, 64)
		if sp.TraceID != spans[0].TraceID || sp.ParentSpanID != spans[0].SpanID || st != prevEnd || en < st || en > rootEnd {
			t.Fatalf("span %+v does not tile the root %+v", sp, spans[0])
		}
		prevEnd = en
	}

	// A malformed TRACEPARENT starts a new trace.
	t.Setenv("TRACEPARENT", "00-zz-11-01")
	if got := NewTrace("00-zz-11-01"); hex.EncodeToString(got.TraceID[:]) == "0af7651916cd43dd8448eb211c80319c" || got.Parent != ([8]byte{}) {
		t.Fatalf("malformed traceparent used: %+v", got)
	}
}

// A receipt edited to run another payload file (or under another
// command) is refused: the record's entry and command must be the
// lock's, whether or not the receipt recorded the lock's digest (an
// attacker who edits the receipt could drop that too).
func TestRunRefusesAnEntryTheLockDoesNotName(t *testing.T) {
	needNode(t)
	for _, c := range []struct {
		name string
		mod  func(*receipt.Release)
	}{
		{"entry", func(r *receipt.Release) { r.Entry = "node_modules/x/evil.js" }},
		{"entry, no lock digest", func(r *receipt.Release) { r.Entry, r.LockSHA256 = "node_modules/x/evil.js", "" }},
		{"command", func(r *receipt.Release) { r.Command = "other" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := install(t, c.mod)
			mark := filepath.Join(t.TempDir(), "mark")
			os.WriteFile(filepath.Join(f.payload, "node_modules", "x", "evil.js"), []byte("require('fs').writeFileSync(process.env.MARK, 'ran')\n"), 0o644)
			code, _, err := Run(context.Background(), f.home, "hello", nil, Options{Env: []string{"MARK=" + mark}, Stdout: &bytes.Buffer{}})
			wantCode(t, err, receipt.CodeIntegrity)
			if code != 1 || !strings.Contains(err.Error(), "the receipt was edited") {
				t.Fatalf("code %d: %v", code, err)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("the edited entry ran")
			}
			if l, _ := receipt.ListLeases(f.home, "hello"); len(l) != 0 {
				t.Fatal("lease left after a refusal")
			}
		})
	}
}

// The launcher's compile cache follows the measured rule of issue 29 (on
// by default only where it makes the start at least 5% faster,
// docs/performance.md): on for an ordinary start, from the second one; off
// for a smoke start, where node gets no NODE_COMPILE_CACHE, no state
// directory is made, and the timing note says why and how to turn it on.
// PISHIP_COMPILE_CACHE=1 turns it on for a smoke start too, =0 off for
// every start; any other value is refused before node runs.
func TestRunCompileCacheDefaultsAndOptIn(t *testing.T) {
	needNode(t)
	f := install(t, nil)
	os.WriteFile(filepath.Join(f.payload, "metadata", "bundle.json"), []byte("{}\n"), 0o644)
	lock := `{"schema":"piship-lock/v1",` + lockIdentity + `,"verifyAtLaunch":false,"smoke":[{"name":"version","args":["--version"],"expect":"version","timeoutMs":5000}]}` + "\n"
	os.WriteFile(filepath.Join(f.payload, "piship.lock"), []byte(lock), 0o644)
	rc, _ := receipt.Read(f.home, "hello")
	r := rc.Find("1.0.0")
	r.LockSHA256 = hexSum([]byte(lock))
	rc.Put(*r)
	if err := receipt.Write(f.home, rc); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state", "hello")
	start := func(args []string, env map[string]string) (nodeSaw string, note string, err error) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "cc")
		_, tr, err := Run(context.Background(), f.home, "hello", args,
			Options{Stdout: io.Discard, Stderr: io.Discard, StateDir: state, Env: []string{"CC_OUT=" + out}, Getenv: func(k string) string { return env[k] }})
		data, rerr := os.ReadFile(out)
		if err == nil && rerr != nil {
			t.Fatalf("node did not run: %v", rerr)
		}
		return string(data), tr.Notes["compile_cache"], err
	}
	smoke := []string{SmokeFlag}
	for range 2 {
		saw, note, err := start(smoke, nil)
		if err != nil || saw != "" || note != "off: off by default for a smoke start (PISHIP_COMPILE_CACHE=1 turns it on)" {
			t.Fatalf("smoke start: node saw NODE_COMPILE_CACHE=%q, note %q, err %v; want none, off by default", saw, note, err)
		}
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Fatalf("smoke starts made the state directory: %v", err)
	}
	if saw, note, err := start(nil, nil); err != nil || saw != "" || note != "off: first start (state directory created)" {
		t.Fatalf("first start: node saw %q, note %q, err %v", saw, note, err)
	}
	cache := filepath.Join(state, "cache", "compile")
	if saw, note, err := start(nil, nil); err != nil || saw != cache || note != "on" {
		t.Fatalf("second start: node saw %q, note %q, err %v; want %s, on", saw, note, err, cache)
	}
	if saw, note, err := start(smoke, nil); err != nil || saw != "" || !strings.HasPrefix(note, "off: off by default") {
		t.Fatalf("smoke start after the state directory was made: node saw %q, note %q, err %v", saw, note, err)
	}
	if saw, note, err := start(smoke, map[string]string{EnvPishipCompileCache: "1"}); err != nil || saw != cache || note != "on" {
		t.Fatalf("smoke start with PISHIP_COMPILE_CACHE=1: node saw %q, note %q, err %v", saw, note, err)
	}
	if saw, note, err := start(nil, map[string]string{EnvPishipCompileCache: "0"}); err != nil || saw != "" || note != "off: PISHIP_COMPILE_CACHE=0" {
		t.Fatalf("PISHIP_COMPILE_CACHE=0: node saw %q, note %q, err %v", saw, note, err)
	}
	_, _, err := start(nil, map[string]string{EnvPishipCompileCache: "yes"})
	wantCode(t, err, receipt.CodeConfigInvalid)
	if err == nil || !strings.Contains(err.Error(), `PISHIP_COMPILE_CACHE="yes"`) {
		t.Fatalf("PISHIP_COMPILE_CACHE=yes: %v", err)
	}
}
