package receipt

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"piship.dev/piship/cache/atomicfs"
	"strings"
	"syscall"
	"testing"
	"time"

	"piship.dev/piship/stages/proc"
	"piship.dev/piship/stages/stage/errcode"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestResolveHomesDefaults(t *testing.T) {
	h, err := ResolveHomes(env(map[string]string{"HOME": "/home/u", "USERPROFILE": "/home/u"}))
	if err != nil {
		t.Fatal(err)
	}
	want := Homes{Install: "/home/u/.local/share/piship", Bin: "/home/u/.local/bin", State: "/home/u/.piship"}
	if h != want {
		t.Fatalf("got %+v, want %+v", h, want)
	}
	if got := h.StateDir("hello"); got != "/home/u/.piship/hello" {
		t.Fatalf("StateDir = %s", got)
	}
}

func TestResolveHomesOverlapRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		vars  map[string]string
		names []string
	}{
		{"equal", map[string]string{EnvInstallHome: "/x/a", EnvBinHome: "/x/a", EnvStateHome: "/x/s"}, []string{EnvInstallHome, EnvBinHome}},
		{"bin inside install", map[string]string{EnvInstallHome: "/x/a", EnvBinHome: "/x/a/bin", EnvStateHome: "/x/s"}, []string{EnvInstallHome, EnvBinHome}},
		{"install inside state", map[string]string{EnvInstallHome: "/x/s/i", EnvBinHome: "/x/b", EnvStateHome: "/x/s"}, []string{EnvInstallHome, EnvStateHome}},
		{"state inside default bin", map[string]string{"HOME": "/h", EnvStateHome: "/h/.local/bin/st"}, []string{EnvBinHome, EnvStateHome}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ResolveHomes(env(tc.vars))
			if CodeOf(err) != CodeConfigInvalid {
				t.Fatalf("err = %v, want CONFIG_INVALID", err)
			}
			for _, n := range tc.names {
				if !strings.Contains(err.Error(), n) {
					t.Errorf("%v does not name %s", err, n)
				}
			}
		})
	}
	// Siblings with a common prefix do not overlap.
	if _, err := ResolveHomes(env(map[string]string{EnvInstallHome: "/x/a", EnvBinHome: "/x/ab", EnvStateHome: "/x/a-state"})); err != nil {
		t.Fatal(err)
	}
}

func sample(dir string) *Receipt {
	r := New("hello")
	r.Active = "1.0.0"
	r.Put(Release{Version: "1.0.0", Dir: filepath.Join(dir, "v1"), Payload: filepath.Join(dir, "v1", "payload"), Entry: "x.js", Command: "hello"})
	return r
}

func TestReceiptRoundTrip(t *testing.T) {
	home := t.TempDir()
	if _, err := Read(home, "hello"); !errors.Is(err, ErrNotInstalled) || CodeOf(err) != CodeUnavailable {
		t.Fatalf("missing receipt: %v", err)
	}
	r := sample(home)
	if err := Write(home, r); err != nil {
		t.Fatal(err)
	}
	got, err := Read(home, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if got.Active != "1.0.0" || got.Find("1.0.0").Entry != "x.js" {
		t.Fatalf("got %+v", got)
	}
	if _, err := Read(home, "other"); !errors.Is(err, ErrNotInstalled) {
		t.Fatal(err)
	}
	if _, err := Read(home, "../x"); CodeOf(err) != CodeConfigInvalid {
		t.Fatalf("bad id: %v", err)
	}
}

func TestReceiptWriteAtomic(t *testing.T) {
	home := t.TempDir()
	old := sample(home)
	if err := Write(home, old); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(ReceiptPath(home, "hello"))
	next := sample(home)
	next.Put(Release{Version: "2.0.0", Dir: filepath.Join(home, "v2"), Payload: filepath.Join(home, "v2", "payload")})
	next.Active, next.Previous = "2.0.0", "1.0.0"
	failing := atomicfs.Renamer{Rename: func(string, string) error { return &os.LinkError{Op: "rename", Err: syscall.EIO} }}
	if err := WriteWith(home, next, failing); err == nil {
		t.Fatal("write with a failing rename succeeded")
	}
	after, _ := os.ReadFile(ReceiptPath(home, "hello"))
	if string(before) != string(after) {
		t.Fatal("the receipt changed although the rename failed")
	}
	entries, _ := os.ReadDir(filepath.Dir(ReceiptPath(home, "hello")))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
	// An invalid receipt is never written.
	bad := sample(home)
	bad.Active = "9.9.9"
	if err := Write(home, bad); CodeOf(err) != CodeConfigInvalid {
		t.Fatalf("invalid receipt: %v", err)
	}
}

func TestRenamerWindowsSchedule(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EBUSY, syscall.EACCES, syscall.EPERM} {
		var slept []time.Duration
		calls := 0
		r := atomicfs.WindowsRenamer(atomicfs.InstallDelays)
		r.Sleep = func(d time.Duration) { slept = append(slept, d) }
		r.Rename = func(from, to string) error {
			calls++
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: errno}
		}
		err := r.Do("a", "b")
		if !errors.Is(err, errno) {
			t.Fatalf("%v: err = %v", errno, err)
		}
		want := []time.Duration{25, 50, 100, 200, 400, 800}
		if len(slept) != len(want) || calls != 7 {
			t.Fatalf("%v: slept %v in %d calls", errno, slept, calls)
		}
		var total time.Duration
		for i, d := range slept {
			if d != want[i]*time.Millisecond {
				t.Fatalf("%v: wait %d is %v, want %v", errno, i, d, want[i]*time.Millisecond)
			}
			total += d
		}
		if total != 1575*time.Millisecond {
			t.Fatalf("total wait %v", total)
		}
	}
	// Success on the third try stops the retries.
	var slept []time.Duration
	calls := 0
	r := atomicfs.WindowsRenamer(atomicfs.InstallDelays)
	r.Sleep = func(d time.Duration) { slept = append(slept, d) }
	r.Rename = func(string, string) error {
		if calls++; calls < 3 {
			return syscall.EBUSY
		}
		return nil
	}
	if err := r.Do("a", "b"); err != nil || len(slept) != 2 {
		t.Fatalf("err %v, slept %v", err, slept)
	}
	// Other errors are not retried on Windows; nothing is retried elsewhere.
	for name, r := range map[string]atomicfs.Renamer{"windows ENOENT": atomicfs.WindowsRenamer(atomicfs.InstallDelays), "immediate EBUSY": atomicfs.ImmediateRenamer()} {
		calls := 0
		r.Sleep = func(time.Duration) { t.Fatalf("%s slept", name) }
		errno := syscall.ENOENT
		if name == "immediate EBUSY" {
			errno = syscall.EBUSY
		}
		r.Rename = func(string, string) error { calls++; return errno }
		if err := r.Do("a", "b"); !errors.Is(err, errno) || calls != 1 {
			t.Fatalf("%s: err %v after %d calls", name, err, calls)
		}
	}
}

func TestGateBoundedWait(t *testing.T) {
	home := t.TempDir()
	release, err := TakeGate(context.Background(), home, "hello", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = TakeGate(context.Background(), home, "hello", 150*time.Millisecond)
	waited := time.Since(start)
	if CodeOf(err) != CodeUnavailable {
		t.Fatalf("second gate: %v", err)
	}
	if waited < 150*time.Millisecond || waited > 2*time.Second {
		t.Fatalf("waited %v for a 150ms bound", waited)
	}
	// Released while waiting: the waiter gets it.
	go func() { time.Sleep(50 * time.Millisecond); release() }()
	r2, err := TakeGate(context.Background(), home, "hello", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r2()
	// The maintenance lock is a different lock.
	r3, err := TakeMaintenance(context.Background(), home, "hello", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer r3()
	r4, err := TakeGate(context.Background(), home, "hello", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r4()
}

func TestLeases(t *testing.T) {
	home := t.TempDir()
	l, remove, err := WriteLease(home, "hello", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	live, err := LiveLeases(home, "hello")
	if err != nil || len(live) != 1 || live[0].PID != os.Getpid() || live[0].Instance != l.Instance {
		t.Fatalf("live = %+v, %v", live, err)
	}
	// A lease of a pid that does not exist is dead; so is one whose pid
	// runs but started long before the record says (a reused pid).
	dead := func(name string, pid int, start time.Time) {
		rec := Lease{Schema: LeaseSchema, App: "hello", Version: "1.0.0", PID: pid, Host: Hostname(), Start: start, Instance: name}
		data, _ := json.Marshal(rec)
		if err := os.WriteFile(filepath.Join(LeasesDir(home, "hello"), "1.0.0", name+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dead("gone", 1<<22+12345, time.Now())
	dead("reused", os.Getppid(), time.Now().Add(time.Hour))
	all, err := ListLeases(home, "hello")
	if err != nil || len(all) != 3 {
		t.Fatalf("all = %+v, %v", all, err)
	}
	states := map[string]bool{}
	for _, x := range all {
		states[x.Instance] = x.Live
	}
	if !states[l.Instance] || states["gone"] {
		t.Fatalf("states %v", states)
	}
	if _, ok := proc.StartTime(os.Getppid()); ok && states["reused"] {
		t.Fatalf("a pid started an hour from the record is live: %+v", all)
	}
	remove()
	remove()
	live, _ = LiveLeases(home, "hello")
	for _, x := range live {
		if x.Instance == l.Instance {
			t.Fatal("removed lease still listed")
		}
	}
}

func TestProcessStartSelf(t *testing.T) {
	st, ok := proc.StartTime(os.Getpid())
	if !ok {
		t.Skip("no process start time on this platform")
	}
	if d := time.Since(st); d < 0 || d > time.Hour {
		t.Fatalf("this process started %v ago?", d)
	}
}

func TestRetainedVersion(t *testing.T) {
	for name, want := range map[string]string{
		".retained-1.0.0-ab12cd34":      "1.0.0",
		".retained-1.0.0-rc.1-ab12cd34": "1.0.0-rc.1",
		"1.0.0":                         "",
		".retained-":                    "",
	} {
		if got := RetainedVersion(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// Errorf says a code once: not again when the wrapped error starts with it
// or carries it further in, while a different inner code stays. The inner
// error carries its code as a value (errcode.Coder): no code is read out
// of a message.
func TestErrorfSaysTheCodeOnce(t *testing.T) {
	inner := errcode.New(CodeIntegrity, "archive refused at entry 1 (truncated): it ends early")
	for _, c := range []struct {
		err  *Error
		want string
	}{
		{Errorf(CodeIntegrity, "%w", inner), "INTEGRITY_FAILED: archive refused at entry 1 (truncated): it ends early"},
		{Errorf(CodeIntegrity, "x.tar.gz: %w", inner), "INTEGRITY_FAILED: x.tar.gz: archive refused at entry 1 (truncated): it ends early"},
		{Errorf(CodeUpdate, "download: %w", inner), "UPDATE_FAILED: download: INTEGRITY_FAILED: archive refused at entry 1 (truncated): it ends early"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
		if !errors.Is(c.err, inner) {
			t.Errorf("%v does not wrap its cause", c.err)
		}
	}
}

// A receipt written before TUF holds the piship-channel/v1 replay floor,
// "sequences": it reads, and the next write drops it.
func TestReceiptWithV1SequencesReads(t *testing.T) {
	home := t.TempDir()
	if err := Write(home, sample(home)); err != nil {
		t.Fatal(err)
	}
	p := ReceiptPath(home, "hello")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(b), "{", `{"sequences": {"stable": 7},`, 1)
	if err := os.WriteFile(p, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Read(home, "hello")
	if err != nil || got.Active != "1.0.0" {
		t.Fatalf("old receipt: %v %+v", err, got)
	}
	if err := Write(home, got); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); strings.Contains(string(b), "sequences") {
		t.Fatalf("sequences kept:\n%s", b)
	}
}
