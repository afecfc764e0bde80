package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/home/receipt"
)

// piRelease is a Pi release record with fd and rg in payload/tools/.
func piRelease(t *testing.T) (*receipt.Release, map[string][]byte) {
	t.Helper()
	pay := filepath.Join(t.TempDir(), "payload")
	tools := map[string][]byte{"fd": []byte("#!/bin/sh\necho fd 10.2.0\n"), "rg": []byte("#!/bin/sh\necho ripgrep 14.1.1\n")}
	rel := &receipt.Release{Version: "1.6.0", Payload: pay, Entry: "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js"}
	for _, name := range []string{"fd", "rg"} {
		p := filepath.Join(pay, "tools", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, tools[name], 0o755); err != nil {
			t.Fatal(err)
		}
		rel.SearchTools = append(rel.SearchTools, receipt.SearchTool{Name: name, Path: "tools/" + name, SHA256: hexSum(tools[name]), Size: int64(len(tools[name]))})
	}
	return rel, tools
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSearchToolsPlacedThenCheckedByFingerprint(t *testing.T) {
	rel, tools := piRelease(t)
	home := t.TempDir()
	env := envOf(map[string]string{"HOME": home, "PATH": ""})
	bin := filepath.Join(home, ".pi", "agent", "bin")

	res, extra, err := PrepareSearchTools("pi", rel, env)
	if err != nil || len(extra) != 0 {
		t.Fatal(err, extra)
	}
	if !slices.Equal(res.Placed, []string{"fd", "rg"}) || res.BinDir != bin || res.BytesRead == 0 {
		t.Fatalf("first start: %+v", res)
	}
	for name, data := range tools {
		got, err := os.ReadFile(filepath.Join(bin, name))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s in the agent bin directory: %q, %v", name, got, err)
		}
		if fi, _ := os.Stat(filepath.Join(bin, name)); fi.Mode()&0o111 == 0 {
			t.Fatalf("%s is not executable: %v", name, fi.Mode())
		}
	}
	if _, err := os.Stat(filepath.Join(bin, ToolsReceiptName)); err != nil {
		t.Fatal("no search tools receipt:", err)
	}

	// The second start reads no tool bytes: the fingerprints match.
	res, _, err = PrepareSearchTools("pi", rel, env)
	if err != nil || !slices.Equal(res.Checked, []string{"fd", "rg"}) || res.BytesRead != 0 {
		t.Fatalf("second start: %+v %v", res, err)
	}

	// A write of the same size with the modification time put back is
	// caught (its change time moved): the payload's fd replaces it.
	fd := filepath.Join(bin, "fd")
	before, _ := os.Stat(fd)
	time.Sleep(20 * time.Millisecond) // a change time the write visibly moves
	evil := bytes.Repeat([]byte("x"), len(tools["fd"]))
	if err := os.WriteFile(fd, evil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(fd, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(fd); after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("the tamper did not keep size and mtime")
	}
	res, _, err = PrepareSearchTools("pi", rel, env)
	if err != nil || !slices.Equal(res.Placed, []string{"fd"}) || !slices.Equal(res.Checked, []string{"rg"}) {
		t.Fatalf("after the tamper: %+v %v", res, err)
	}
	if got, _ := os.ReadFile(fd); !bytes.Equal(got, tools["fd"]) {
		t.Fatalf("fd was not restored: %q", got)
	}

	// Touched only (same bytes, new times): hashed once, re-recorded.
	now := time.Now().Add(time.Minute)
	os.Chtimes(fd, now, now)
	res, _, _ = PrepareSearchTools("pi", rel, env)
	if !slices.Equal(res.Rehashed, []string{"fd"}) {
		t.Fatalf("after a touch: %+v", res)
	}
	if res, _, _ = PrepareSearchTools("pi", rel, env); res.BytesRead != 0 {
		t.Fatalf("after the re-record: %+v", res)
	}

	// A payload copy that is not the installed one stops the start when
	// it is needed, and leaves the agent's file as it was.
	os.Remove(fd)
	os.WriteFile(filepath.Join(rel.Payload, "tools", "fd"), []byte("tampered"), 0o755)
	_, _, err = PrepareSearchTools("pi", rel, env)
	wantCode(t, err, receipt.CodeIntegrity)
	if _, serr := os.Stat(fd); serr == nil {
		t.Fatal("a tampered payload tool was placed")
	}
}

func TestSearchToolsLeaveForeignFilesAlone(t *testing.T) {
	rel, _ := piRelease(t)
	agent := t.TempDir()
	env := envOf(map[string]string{"HOME": t.TempDir(), "PI_CODING_AGENT_DIR": agent})
	bin := filepath.Join(agent, "bin")
	os.MkdirAll(bin, 0o755)
	own := []byte("Pi's own download")
	os.WriteFile(filepath.Join(bin, "rg"), own, 0o755)
	res, _, err := PrepareSearchTools("pi", rel, env)
	if err != nil || !slices.Equal(res.Foreign, []string{"rg"}) || !slices.Equal(res.Placed, []string{"fd"}) {
		t.Fatalf("%+v %v", res, err)
	}
	if got, _ := os.ReadFile(filepath.Join(bin, "rg")); !bytes.Equal(got, own) {
		t.Fatal("a file piship did not place was replaced")
	}
}

func TestToolDownloadsDeferredWithoutTools(t *testing.T) {
	rel, _ := piRelease(t)
	rel.SearchTools = nil
	home, path := t.TempDir(), t.TempDir()
	m := map[string]string{"HOME": home, "PATH": path}
	res, extra, err := PrepareSearchTools("pi", rel, envOf(m))
	if err != nil || !res.Deferred || !slices.Equal(extra, []string{"PI_OFFLINE=1"}) {
		t.Fatalf("no tools anywhere: %+v %v %v", res, extra, err)
	}
	m[EnvAllowToolDownload] = "1"
	if res, extra, _ := PrepareSearchTools("pi", rel, envOf(m)); res.Deferred || len(extra) != 0 {
		t.Fatalf("PISHIP_ALLOW_TOOL_DOWNLOAD=1: %+v %v", res, extra)
	}
	delete(m, EnvAllowToolDownload)
	os.WriteFile(filepath.Join(path, "rg"), []byte("#!/bin/sh\n"), 0o755)
	if res, _, _ := PrepareSearchTools("pi", rel, envOf(m)); res.Deferred {
		t.Fatal("rg on PATH, and the start was still deferred")
	}
	// Not Pi: nothing to prepare or defer.
	rel.Entry = "node_modules/hello-cli/bin/hello.js"
	os.Remove(filepath.Join(path, "rg"))
	if res, extra, _ := PrepareSearchTools("hello", rel, envOf(m)); res.Deferred || len(extra) != 0 {
		t.Fatalf("a non-Pi release: %+v", res)
	}
}

// With the compile cache turned on (PISHIP_COMPILE_CACHE=1), only a
// bundled payload gets one, from the second start, never with
// verifyAtLaunch, and never over one the environment sets.
func TestCompileCacheFromTheSecondStart(t *testing.T) {
	rel, _ := piRelease(t)
	state := filepath.Join(t.TempDir(), "pi")
	on := envOf(map[string]string{EnvPishipCompileCache: "1"})
	if kv, why, _ := compileCache(state, rel, false, false, on); kv != "" || !strings.Contains(why, "bundled") {
		t.Fatalf("unbundled: %q %q", kv, why)
	}
	os.MkdirAll(filepath.Join(rel.Payload, "metadata"), 0o755)
	os.WriteFile(filepath.Join(rel.Payload, "metadata", "bundle.json"), []byte("{}"), 0o644)
	if kv, why, _ := compileCache(state, rel, false, false, on); kv != "" || !strings.Contains(why, "first start") {
		t.Fatalf("first start: %q %q", kv, why)
	}
	if kv, _, _ := compileCache(state, rel, false, false, on); kv != EnvCompileCache+"="+filepath.Join(state, "cache", "compile") {
		t.Fatalf("second start: %q", kv)
	}
	if kv, why, _ := compileCache(state, rel, true, false, on); kv != "" || why != "verifyAtLaunch" {
		t.Fatalf("verifyAtLaunch: %q %q", kv, why)
	}
	for _, mine := range []string{EnvCompileCache, "NODE_DISABLE_COMPILE_CACHE"} {
		if kv, why, _ := compileCache(state, rel, false, false, envOf(map[string]string{EnvPishipCompileCache: "1", mine: "/mine"})); kv != "" || why != "set by the environment" {
			t.Fatalf("%s in the environment was overridden: %q %q", mine, kv, why)
		}
	}
}

func TestSmokeStartRunsTheFirstSmokeTest(t *testing.T) {
	needNode(t)
	for _, c := range []struct {
		expect string
		ok     bool
	}{{`^\["--version"\]$`, true}, {`^1\.0\.0$`, false}} {
		f := install(t, nil)
		lock := `{"schema":"piship-lock/v1",` + lockIdentity + `,"verifyAtLaunch":false,"smoke":[{"name":"version","args":["--version"],"expect":` + strconv.Quote(c.expect) + `,"timeoutMs":1000}]}` + "\n"
		os.WriteFile(filepath.Join(f.payload, "piship.lock"), []byte(lock), 0o644)
		rc, _ := receipt.Read(f.home, "hello")
		r := rc.Find("1.0.0")
		r.LockSHA256 = hexSum([]byte(lock))
		rc.Put(*r)
		receipt.Write(f.home, rc)
		var out bytes.Buffer
		code, tr, err := Run(context.Background(), f.home, "hello", []string{SmokeFlag}, Options{Stdout: &out, Stderr: &out})
		if c.ok != (err == nil && code == 0) || out.Len() != 0 {
			t.Fatalf("expect %s: code %d, err %v, output %q", c.expect, code, err, out.String())
		}
		if c.ok && tr.Phases[len(tr.Phases)-1].Name != PhaseSmokeChecked {
			t.Fatalf("phases %+v", tr.Phases)
		}
		if !c.ok && !strings.Contains(err.Error(), "does not match") {
			t.Fatal(err)
		}
	}
}

// An agent directory that refuses the copy (here a file stands where its
// bin directory goes, which refuses root too) does not stop the start:
// the tools are left out, and the result says why.
func TestSearchToolsWhereTheAgentDirectoryRefusesThem(t *testing.T) {
	agent := t.TempDir()
	os.WriteFile(filepath.Join(agent, "bin"), []byte("a file where the directory goes"), 0o644)
	rel, _ := piRelease(t)
	res, _, err := PrepareSearchTools("pi", rel, envOf(map[string]string{"HOME": t.TempDir(), "PI_CODING_AGENT_DIR": agent}))
	if err != nil || len(res.Unavailable) != 2 || len(res.Placed) != 0 {
		t.Fatalf("%+v %v", res, err)
	}
}

// CheckSearchTools (doctor's view) applies the start's rule and changes
// nothing: silent before the first start and while the copies are the
// placed ones; a changed placed copy is stale, another file foreign.
func TestCheckSearchToolsFindsWhatAStartWouldChange(t *testing.T) {
	rel, tools := piRelease(t)
	home := t.TempDir()
	env := envOf(map[string]string{"HOME": home, "PATH": ""})
	bin := filepath.Join(home, ".pi", "agent", "bin")
	check := func() []ToolFinding {
		t.Helper()
		got, f, err := CheckSearchTools(rel, env)
		if err != nil || got != bin {
			t.Fatal(got, err)
		}
		return f
	}
	if f := check(); len(f) != 0 {
		t.Fatalf("before any start: %+v", f)
	}
	if _, err := os.Stat(bin); !os.IsNotExist(err) {
		t.Fatal("CheckSearchTools created the agent bin directory")
	}
	if _, _, err := PrepareSearchTools("pi", rel, env); err != nil {
		t.Fatal(err)
	}
	if f := check(); len(f) != 0 {
		t.Fatalf("after a start: %+v", f)
	}
	fd, rg := filepath.Join(bin, "fd"), filepath.Join(bin, "rg")
	os.WriteFile(fd, []byte("#!/bin/sh\necho changed\n"), 0o755)
	rcBefore, _ := os.ReadFile(filepath.Join(bin, ToolsReceiptName))
	want := []ToolFinding{{Name: "fd", Path: fd}}
	if f := check(); !slices.Equal(f, want) {
		t.Fatalf("fd changed: %+v, want %+v", f, want)
	}
	if got, _ := os.ReadFile(fd); bytes.Equal(got, tools["fd"]) {
		t.Fatal("CheckSearchTools replaced the changed fd")
	}
	if rcAfter, _ := os.ReadFile(filepath.Join(bin, ToolsReceiptName)); !bytes.Equal(rcBefore, rcAfter) {
		t.Fatal("CheckSearchTools rewrote the tools' receipt")
	}
	// A receipt that vouches for the changed fd's fingerprint (forged, or
	// a Windows rewrite keeping size and mtime): the start trusts it, doctor
	// hashes and still finds it.
	if _, _, err := PrepareSearchTools("pi", rel, env); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(fd, bytes.Repeat([]byte("#"), len(tools["fd"])), 0o755)
	rc := readToolsReceipt(filepath.Join(bin, ToolsReceiptName))
	fp, _ := statFingerprint(fd)
	rc.Tools["fd"] = toolRecord{SHA256: rc.Tools["fd"].SHA256, fingerprint: fp}
	data, _ := json.Marshal(rc)
	os.WriteFile(filepath.Join(bin, ToolsReceiptName), data, 0o644)
	if res, _, _ := PrepareSearchTools("pi", rel, env); !slices.Equal(res.Checked, []string{"fd", "rg"}) {
		t.Fatalf("the start with a vouching receipt: %+v, want both taken by fingerprint", res)
	}
	want = []ToolFinding{{Name: "fd", Path: fd}}
	if f := check(); !slices.Equal(f, want) {
		t.Fatalf("fd under a forged fingerprint: %+v, want %+v", f, want)
	}
	// rg neither recorded nor the bundled bytes: another rg, Pi's or the user's.
	os.WriteFile(filepath.Join(bin, ToolsReceiptName), []byte(`{"schema":"`+ToolsReceiptSchema+`","tools":{}}`), 0o644)
	os.WriteFile(rg, []byte("#!/bin/sh\necho ripgrep 13\n"), 0o755)
	want = []ToolFinding{{Name: "fd", Path: fd, Foreign: true}, {Name: "rg", Path: rg, Foreign: true}}
	if f := check(); !slices.Equal(f, want) {
		t.Fatalf("unrecorded files: %+v, want %+v", f, want)
	}
}
