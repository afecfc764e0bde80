package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/engine"
)

// bundleHitIsCacheHit is whether the engine reports a bundle stage that
// placed its b- cache entry as StageResult.CacheHit: it does since the
// kinds report their own cache lookups (issue 15, item 3), so the view is
// held to CACHED.
const bundleHitIsCacheHit = true

// tmuxTerm is a detached tmux session on a private server (own socket
// under a temp dir, no user configuration), a real terminal to run piship
// in.
type tmuxTerm struct {
	t    *testing.T
	tmux string
	env  []string
	dir  string
	n    int
}

func newTmuxTerm(t *testing.T) *tmuxTerm {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is needed for this test (a real terminal for the progress view): apt-get install tmux")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "tmux.conf")
	// remain-on-exit keeps a finished run's pane for the last capture;
	// exit-empty off keeps the server between runs (kill-server ends it).
	if err := os.WriteFile(conf, []byte("set -s exit-empty off\nset -g remain-on-exit on\nset -g status off\nset -g history-limit 5000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	// The server's environment is the panes': no PISHIP_PROGRESS, so the
	// runs decide by the terminal; a private HOME and cache.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TERM=xterm-256color", "TMUX_TMPDIR=" + dir,
		"PISHIP_TEST_MAIN=1", "PISHIP_CACHE_HOME=" + filepath.Join(dir, "cache"), "LANG=C.UTF-8"}
	tt := &tmuxTerm{t: t, tmux: tmux, env: env, dir: dir}
	t.Cleanup(func() { _ = tt.cmd("kill-server").Run() })
	return tt
}

func (tt *tmuxTerm) cmd(args ...string) *exec.Cmd {
	c := exec.Command(tt.tmux, append([]string{"-L", "piship-test", "-f", filepath.Join(tt.dir, "tmux.conf")}, args...)...)
	c.Env = tt.env
	return c
}

// paneRun is one piship command run in a pane: the pane captured while it
// ran and at its end, its exit code and stdout.
type paneRun struct {
	captures [][]string
	final    []string
	code     int
	stdout   string
}

// run runs piship args in dir in a new pane cols wide, capturing the pane
// (with its history, wrapped lines joined) every few milliseconds.
func (tt *tmuxTerm) run(cols int, dir string, args ...string) paneRun {
	tt.t.Helper()
	tt.n++
	self, err := os.Executable()
	if err != nil {
		tt.t.Fatal(err)
	}
	rc := filepath.Join(tt.dir, fmt.Sprintf("rc%d", tt.n))
	out := filepath.Join(tt.dir, fmt.Sprintf("stdout%d", tt.n))
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + a + "'"
	}
	script := fmt.Sprintf("cd '%s' && '%s' %s >'%s'; echo $? >'%s.tmp' && mv '%s.tmp' '%s'\n", dir, self, strings.Join(quoted, " "), out, rc, rc, rc)
	sh := filepath.Join(tt.dir, fmt.Sprintf("run%d.sh", tt.n))
	if err := os.WriteFile(sh, []byte(script), 0o755); err != nil {
		tt.t.Fatal(err)
	}
	session := fmt.Sprintf("run%d", tt.n)
	if b, err := tt.cmd("new-session", "-d", "-s", session, "-x", strconv.Itoa(cols), "-y", "40", "sh "+sh).CombinedOutput(); err != nil {
		tt.t.Fatalf("tmux new-session: %v\n%s", err, b)
	}
	capture := func() []string {
		b, err := tt.cmd("capture-pane", "-p", "-J", "-S", "-", "-t", session).Output()
		if err != nil {
			tt.t.Fatalf("tmux capture-pane: %v", err)
		}
		lines := strings.Split(string(b), "\n")
		for i := range lines {
			lines[i] = strings.TrimRight(lines[i], " ")
		}
		for len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		return lines
	}
	var r paneRun
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, err := os.ReadFile(rc)
		if err == nil {
			r.code, _ = strconv.Atoi(strings.TrimSpace(string(code)))
			break
		}
		if time.Now().After(deadline) {
			tt.t.Fatalf("piship %s did not end in 2 minutes; the pane:\n%s", strings.Join(args, " "), strings.Join(capture(), "\n"))
		}
		r.captures = append(r.captures, capture())
		time.Sleep(20 * time.Millisecond)
	}
	r.final = capture()
	b, _ := os.ReadFile(out)
	r.stdout = string(b)
	_ = tt.cmd("kill-session", "-t", session).Run()
	return r
}

var (
	headerRe  = regexp.MustCompile(`^\[\+\] (\S+) (\d+\.\d)s \((\d+)/(\d+)\)$`)
	runningRe = regexp.MustCompile(`^ +\d+\.\ds \S`)
)

// checkPane holds one capture to the view's rules and returns whether it
// showed the live view with a complete header and running stages:
//   - at most one header line (exactly one at the end), and below it only
//     running-stage lines, each shorter than the width (cut, not wrapped:
//     -J joins a wrapped line into one longer than the pane);
//   - no stale header or running line above the view, and no permanent
//     line erased (an empty line) or printed twice;
//   - the header's done count is the number of permanent stage lines above
//     it, and its total the run's stages (at the end: all of them done).
func checkPane(t *testing.T, what string, lines []string, cols, total, hidden int, final bool) bool {
	t.Helper()
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("%s: %s; the pane (%d columns):\n%s", what, fmt.Sprintf(format, a...), cols, strings.Join(lines, "\n"))
	}
	head := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "[+] ") {
			if head >= 0 {
				fail("two header lines (%d and %d): a stale view", head+1, i+1)
			}
			head = i
		}
	}
	if final && head < 0 {
		fail("no header line at the end")
	}
	// A capture after the last stage may already show Close's last header
	// and the command's summary below it.
	ended := final
	if head >= 0 {
		if m := headerRe.FindStringSubmatch(lines[head]); m != nil && m[3] == m[4] {
			ended = true
		}
	}
	end := len(lines)
	if head >= 0 {
		end = head
		if l := lines[head]; engine.Cells(l) >= cols {
			fail("the header %q takes %d cells of %d: it wrapped", l, engine.Cells(l), cols)
		}
		for _, l := range lines[head+1:] {
			switch {
			case ended && runningRe.MatchString(l):
				fail("the running-stage line %q after the run: a stale line", l)
			case ended:
				// The command's own summary lines.
			case !runningRe.MatchString(l) && !strings.HasPrefix(l, "  ... and "):
				fail("%q below the header: the view overwrote or left a line", l)
			case engine.Cells(l) >= cols:
				fail("the live line %q takes %d cells of %d: it wrapped", l, engine.Cells(l), cols)
			}
		}
	}
	seen := map[string]bool{}
	stages := 0
	for _, l := range lines[:end] {
		switch {
		case l == "":
			fail("an empty line above the view: a permanent line was erased")
		case runningRe.MatchString(l):
			fail("the running-stage line %q above the view: a stale line", l)
		case strings.HasPrefix(l, "=> "):
			label, _, _ := strings.Cut(strings.TrimPrefix(l, "=> "), ": ")
			if seen[label] {
				fail("two permanent lines for %s", label)
			}
			seen[label] = true
			stages++
		}
	}
	if head < 0 {
		return false
	}
	m := headerRe.FindStringSubmatch(lines[head])
	if m == nil {
		if final {
			fail("the last header %q is not `[+] PIPELINE N.Ns (DONE/TOTAL)`", lines[head])
		}
		return false // a header cut by the width, or caught mid-write
	}
	// hidden stages (their when condition is false) count as done but
	// print no line: done is the lines shown plus those settled so far.
	done, all := atoi(m[3]), atoi(m[4])
	if all != total || done < stages || done > stages+hidden || final && (done != total || stages+hidden != total) {
		fail("the header says %d/%d, the pane shows %d of %d stages done (and %d do not apply)", done, all, stages, total, hidden)
	}
	return !ended && head < len(lines)-1
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// The progress view in a real terminal (tmux) at 40 and 120 columns: the
// panes are captured while stages run and at the end, and hold no stale
// line, a header with the right counts, lines cut to the width, and CACHED
// for a cache hit: an exec stage's action-cache hit, and a build whose
// bundle stage places the b- entry of an earlier build.
func TestProgressInTmux(t *testing.T) {
	tt := newTmuxTerm(t)

	// 40 columns, narrower than the stage names; one stage's log lines
	// (wider than the pane, so they wrap) arrive while the others run.
	dir := t.TempDir()
	writeFile(t, dir, "narrow.hcl", `pipeline "narrow" {
  stage "exec" "a_stage_name_much_longer_than_forty_columns" {
    command = ["sh", "-c", "for i in 1 2 3 4 5; do echo line $i of a message much wider than the forty columns; sleep 0.12; done"]
    echo    = true
  }
  stage "exec" "second_stage_also_with_a_rather_long_name" { command = ["sleep", "0.5"] }
  stage "exec" "cached" {
    command = ["true"]
    cache   = true
  }
  stage "exec" "never" {
    command = ["true"]
    when    = false
  }
}
`)
	sawView, sawCut := false, false
	for i, want := range []string{"=> exec cached: DONE ", "=> exec cached: CACHED "} {
		r := tt.run(40, dir, "run", "narrow.hcl") // no --progress: a terminal gets the view
		what := fmt.Sprintf("run %d of narrow.hcl at 40 columns", i+1)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", what, r.code, strings.Join(r.final, "\n"))
		}
		for _, c := range r.captures {
			if checkPane(t, what+" (while running)", c, 40, 4, 1, false) {
				sawView = true
				for _, l := range c {
					if runningRe.MatchString(l) && strings.HasSuffix(l, "…") {
						sawCut = true
					}
				}
			}
		}
		checkPane(t, what, r.final, 40, 4, 1, true)
		pane := strings.Join(r.final, "\n")
		for _, l := range []string{want, "line 5 of a message much wider than the forty columns"} {
			if !strings.Contains(pane, l) {
				t.Errorf("%s: no %q in the pane:\n%s", what, l, pane)
			}
		}
		// A stage whose condition is false does not apply to this run:
		// no line (issue 29), though the header counts it done.
		if strings.Contains(pane, "exec never") {
			t.Errorf("%s: the stage that does not apply has a line:\n%s", what, pane)
		}
	}
	if !sawView || !sawCut {
		t.Errorf("no capture at 40 columns caught the live view with a running stage (%v) whose name was cut with … (%v)", sawView, sawCut)
	}

	// 120 columns: a build, then one into a new output directory, which
	// places the bundle cache entry of the first (--rebuild would not:
	// it bypasses the bundle cache).
	hello := copyDist(t, "hello")
	for i, out := range []string{"out1", "out2"} {
		r := tt.run(120, hello, "build", ".", "--progress", "auto", "--json", "--out", filepath.Join(hello, out))
		what := fmt.Sprintf("build %d of hello at 120 columns", i+1)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", what, r.code, strings.Join(r.final, "\n"))
		}
		// Stages that do not apply print no line: pi_packages,
		// search_tools and node (hello has none of them), and with the
		// bundle cached the runtime, prune and strip stages too.
		hidden := 3
		if i == 1 {
			hidden = 6
		}
		for _, c := range r.captures {
			checkPane(t, what+" (while running)", c, 120, 12, hidden, false)
		}
		checkPane(t, what, r.final, 120, 12, hidden, true)
		if i == 0 {
			continue
		}
		var doc struct{ BundleCache string }
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.BundleCache != "hit" {
			t.Fatalf("%s: bundleCache %q (%v), want a hit:\n%s", what, doc.BundleCache, err, r.stdout)
		}
		pane := strings.Join(r.final, "\n")
		want := "=> module.payload.stage.bundle: DONE "
		if bundleHitIsCacheHit {
			want = "=> module.payload.stage.bundle: CACHED "
		}
		if !strings.Contains(pane, want) {
			t.Errorf("%s: the bundle cache hit is not shown as %q (bundleHitIsCacheHit = %v):\n%s", what, want, bundleHitIsCacheHit, pane)
		}
	}
}

// --progress json prints the piship-progress/v1 stream docs/json.md
// documents: every line of stderr but the summary is one JSON object of
// the documented shape, and a run reports each kind of event.
func TestProgressJSONMatchesDocs(t *testing.T) {
	docs, _ := docSchemas(t)
	doc := docs[engine.ProgressSchema]
	dir := t.TempDir()
	p := writeFile(t, dir, "p.hcl", `pipeline "p" {
  stage "exec" "talk" {
    command = ["echo", "hello"]
    echo    = true
  }
  stage "exec" "no" {
    command = ["false"]
    depends_on = [stage.talk]
  }
  stage "exec" "after" {
    command    = ["true"]
    depends_on = [stage.no]
  }
}
`)
	// PISHIP_PROGRESS=0 asks for plain lines: the flag wins.
	code, _, stderr := piship(t, map[string]string{"PISHIP_PROGRESS": "0", "PISHIP_CACHE_HOME": filepath.Join(dir, "cache")}, "run", "--progress", "json", p)
	if code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	events := map[string]int{}
	var last string
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if !strings.HasPrefix(l, "{") {
			last = l
			continue
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("a progress line is not JSON (%v): %s", err, l)
		}
		if got["schema"] != engine.ProgressSchema {
			t.Errorf("schema %v: %s", got["schema"], l)
		}
		for _, d := range sameShape(engine.ProgressSchema, doc, got) {
			t.Errorf("%s (%s)", d, l)
		}
		events[fmt.Sprintf("%v %v %v", got["event"], got["stage"], got["status"])]++
	}
	for _, want := range []string{"started talk running", "finished talk passed", "log  ", "finished no failed", "skipped after not started"} {
		if events[want] != 1 {
			t.Errorf("want one event %q, got %v\n%s", want, events, stderr)
		}
	}
	if !strings.HasPrefix(last, "p: stage no failed") {
		t.Errorf("the last line %q is not the failing verdict\n%s", last, stderr)
	}
}

// A --progress value piship does not know is USAGE_INVALID, exit 2,
// naming the choices, before anything runs.
func TestProgressFlagRefusesUnknownMode(t *testing.T) {
	code, _, stderr := piship(t, nil, "build", "nowhere", "--progress", "fancy")
	if code != exitUsage || !strings.Contains(stderr, "USAGE_INVALID") || !strings.Contains(stderr, "auto (tty on a terminal, plain otherwise), tty, plain or json") {
		t.Fatalf("exit %d, want 2 with USAGE_INVALID and the choices:\n%s", code, stderr)
	}
}
