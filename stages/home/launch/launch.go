// Package launch runs the active release of an installed distribution: the
// hot path behind every command shim. It imports the standard library and
// package receipt only (a test keeps it so), so a start loads no HCL, no
// engine and no telemetry.
//
// A start, in order:
//
//  1. takes the launch gate (bounded wait, 5 s by default), reads the
//     receipt, refuses an active record whose directory or payload is not
//     inside apps/<id>/ (receipt.CheckInside: INTEGRITY_FAILED, links
//     resolved, nothing of it read), writes a runtime lease for the active
//     version (not flushed) and releases the gate: the gate is held for
//     milliseconds, never for a cold load. A home that refuses the lease
//     (full, read-only) does not stop the start: the lease goes to the
//     runtime directory instead and, where nothing takes it, the start runs
//     unregistered after one line on stderr saying an uninstall or reclaim
//     may remove it (on Linux those still find it by its process); a gate
//     whose file cannot be opened is skipped (see package receipt, "A home
//     that refuses the lease");
//  2. reads payload/metadata/target.json (the payload must be for this
//     platform) and hashes payload/piship.lock against the digest the
//     receipt recorded at install: a mismatch is INTEGRITY_FAILED and
//     nothing runs; with no recorded digest the check is skipped, not
//     failed. The record's entry and command must be the lock's
//     (runtime.entry, distribution.command), read in the one parse of the
//     lock a start makes anyway: an edited receipt is INTEGRITY_FAILED;
//  3. walks and hashes the payload against its inventory only when the
//     lock (or the receipt) says runtime.verifyAtLaunch;
//  4. runs node (the payload's own, checked by fingerprint, when the
//     release ships one: see node.go; else the node on PATH, refused when
//     it does not satisfy the entry package's engines: engines.go) on the entry with the user's arguments and inherited
//     stdio, PISHIP_APP_VERSION set to the receipt's version (the
//     application's release version: receipt.EnvAppVersion), forwards SIGINT, SIGTERM and SIGHUP to it, waits, removes the
//     lease and returns node's exit code.
//
// Why a child and not exec: exec would replace this process, so nothing
// would remove the lease when node ends. Each start would leave a dead
// lease behind (one file per start, for every later LiveLeases and doctor
// to read and sweep), node_exited could not be recorded, and Windows has no
// exec at all, so one code path serves both. The cost is one idle Go
// process per running session.
package launch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/platform"
)

// EnvTraceFile names a file the launcher writes its spans to, as OTLP/JSON
// (see Trace.WriteOTLPJSON), after the runtime ends.
const EnvTraceFile = "PISHIP_TRACE_FILE"

// Phase names, in order.
const (
	PhaseGateAcquired      = "gate_acquired"
	PhaseLeaseHeld         = "lease_held"
	PhaseGateReleased      = "gate_released"
	PhaseLockChecked       = "lock_checked"
	PhaseInventoryVerified = "inventory_verified" // only with verifyAtLaunch
	PhaseSearchTools       = "search_tools_done"
	PhaseNodeStarted       = "node_started"
	PhaseNodeExited        = "node_exited"
	PhaseSmokeChecked      = "smoke_checked" // only with --smoke
)

// SmokeFlag, as the only argument, makes a start a smoke start: the
// release's first smoke test (its args, its expect) on the installed
// copy, output captured, exit 0 when it passes. It is what the seed's
// start benchmarks time: everything a start does, without a session.
const SmokeFlag = "--smoke"

// EnvCompileCache is Node's variable for its on-disk V8 compile cache
// (module.enableCompileCache; Node 22.1 and later, ignored before).
const EnvCompileCache = "NODE_COMPILE_CACHE"

// EnvPishipCompileCache chooses whether a start gives node a compile
// cache in the state directory: "1" on (smoke starts too), "0" off, unset
// the default (compileCacheByDefault). Other values are refused
// (CONFIG_INVALID) before node runs.
const EnvPishipCompileCache = "PISHIP_COMPILE_CACHE"

// compileCacheByDefault is whether a start without PISHIP_COMPILE_CACHE
// gets the compile cache, by kind of start. The rule (issue 29): on by
// default only where its median start is at least 5% faster than without
// a compile cache. Measured on the flagship (Pi 1.6, Node 22;
// docs/performance.md, BenchmarkPiInteractiveCompileCache and
// BenchmarkPiStartToolsAndCompileCache): Pi's interactive start to its
// first screen is faster with it (by 6 to 20% in the median of the pairs
// of four runs: on), a smoke start (`--version`) 4-5% slower (off; a
// smoke start also no longer fills the cache with what `--version`
// compiles, which Node would keep for the starts after it).
func compileCacheByDefault(smoke bool) bool { return !smoke }

// Phase is one step of a start, a span of the start's Trace: from Start
// (the previous phase's end) to At, both offsets from the start of Run.
type Phase struct {
	Name      string
	Start, At time.Duration
	SpanID    [8]byte
}

// FormatPhases writes one "launch <phase>: N ms (+D ms)" line per phase,
// in order, for PISHIP_DEBUG_TIMING: when the phase ended, and its span's
// duration.
func FormatPhases(w io.Writer, phases []Phase) {
	for _, p := range phases {
		fmt.Fprintf(w, "launch %s: %.1f ms (+%.1f ms)\n", p.Name, ms(p.At), ms(p.At-p.Start))
	}
}

// Options tune a start. The zero value is what the command shim uses.
type Options struct {
	// Node is the node executable: a path, or a name looked up in PATH
	// ("" means "node").
	Node string
	// GateWait bounds the wait for the launch gate (receipt.DefaultGateWait
	// when 0).
	GateWait time.Duration
	// Env is added to this process's environment for node.
	Env []string
	// Stdin, Stdout and Stderr default to this process's.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// NodeArgs go before the entry (node options).
	NodeArgs []string
	// Trace records the start; nil starts one from the TRACEPARENT
	// environment variable. When the start is traced (TRACEPARENT or
	// PISHIP_TRACE_FILE set), node gets TRACEPARENT naming its root span.
	Trace *Trace
	// StateDir is the distribution's state directory (<state home>/<id>):
	// the first start creates it, later ones keep the compile cache in
	// its cache/compile. "" keeps no compile cache.
	StateDir string
	// Getenv reads the environment the start runs in (os.Getenv when nil).
	Getenv func(string) string
}

// Run starts the active release of id from the install home with args and
// returns node's exit code (128+N when node died of signal N on Unix) and
// the phases reached. err is non-nil when the start was refused or node
// could not be started or waited for; exitCode is then 1.
func Run(ctx context.Context, installHome, id string, args []string, o Options) (exitCode int, tr *Trace, err error) {
	tr = o.Trace
	if tr == nil {
		tr = NewTrace(os.Getenv("TRACEPARENT"))
	}
	defer func() { tr.End = time.Now() }()
	mark := tr.mark

	rel, removeLease, warning, err := register(ctx, installHome, id, o.GateWait, mark)
	if err != nil {
		return 1, tr, err
	}
	if warning != "" {
		stderr := o.Stderr
		if stderr == nil {
			stderr = os.Stderr
		}
		fmt.Fprintln(stderr, warning)
		tr.Attrs["piship.lease"] = "unregistered"
	}
	defer removeLease()
	tr.Attrs["piship.app.id"], tr.Attrs["piship.app.version"] = id, rel.Version

	verify, lock, err := checkTrust(id, rel)
	if err != nil {
		return 1, tr, err
	}
	mark(PhaseLockChecked)
	piArgs, err := checkPiPackages(id, rel, lock)
	if err != nil {
		return 1, tr, err
	}
	if verify {
		if err := VerifyInventory(ctx, rel.Payload); err != nil {
			return 1, tr, err
		}
		mark(PhaseInventoryVerified)
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	st, toolEnv, err := PrepareSearchTools(id, rel, getenv)
	if err != nil {
		return 1, tr, err
	}
	tr.Count("search_tools_bytes_read", st.BytesRead)
	if st.Deferred {
		tr.Note(NoteToolDownloadsDeferred, "no search tool bundled or on PATH: Pi runs offline this start (PISHIP_ALLOW_TOOL_DOWNLOAD=1 lets it download them)")
	}
	if len(st.Unavailable) > 0 {
		tr.Note("search_tools_unavailable", strings.Join(st.Unavailable, "; "))
	}
	for k, v := range map[string][]string{"search_tools_checked": st.Checked, "search_tools_rehashed": st.Rehashed, "search_tools_placed": st.Placed, "search_tools_foreign": st.Foreign} {
		if len(v) > 0 {
			tr.Note(k, strings.Join(v, ","))
		}
	}
	mark(PhaseSearchTools)
	nr, err := PrepareNode(id, rel, lock.Node, o.StateDir, verify)
	if err != nil {
		return 1, tr, err
	}
	if nr.Path != "" {
		tr.Count("node_bytes_read", nr.BytesRead)
		tr.Note("node", map[bool]string{true: "payload (hashed in full)", false: "payload (fingerprint)"}[nr.Hashed])
		if nr.Unrecorded != "" {
			tr.Note("node_unrecorded", nr.Unrecorded)
		}
	}
	env := append(append([]string(nil), o.Env...), toolEnv...)
	// The application's release version, the receipt's: what it prints
	// for --version without repeating it in its own files.
	env = append(env, receipt.EnvAppVersion+"="+rel.Version)
	smoke := len(args) == 1 && args[0] == SmokeFlag
	kv, why, err := compileCache(o.StateDir, rel, verify, smoke, getenv)
	if err != nil {
		return 1, tr, err
	}
	if kv != "" {
		env = append(env, kv)
		tr.Note("compile_cache", "on")
	} else {
		tr.Note("compile_cache", "off: "+why)
	}
	var smokeTest *lockSmoke
	if smoke {
		if len(lock.Smoke) == 0 {
			return 1, tr, receipt.Errorf(receipt.CodeConfigInvalid, "%s %s declares no smoke test: %s runs the release's first smoke block on the installed copy; add one to distribution.hcl", id, rel.Version, SmokeFlag)
		}
		smokeTest = &lock.Smoke[0]
		args = smokeTest.Args
		tr.Note("smoke", smokeTest.Name)
	}

	nodePath := nr.Path // the payload's own Node, when it ships one
	if nodePath == "" {
		node := o.Node
		if node == "" {
			node = "node"
		}
		if nodePath, err = exec.LookPath(node); err != nil {
			return 1, tr, receipt.Errorf(receipt.CodeUnavailable, "cannot start %s: node was not found (%v): install Node.js or put it on PATH", id, err)
		}
		// The node on PATH against the entry package's engines (engines.go).
		v, asked, err := CheckEngines(id, rel, nodePath, o.StateDir)
		if err != nil {
			return 1, tr, err
		}
		if v != "" {
			tr.Note("node", map[bool]string{true: "PATH " + v + " (asked)", false: "PATH " + v + " (remembered)"}[asked])
		}
	}
	entry := filepath.Join(rel.Payload, filepath.FromSlash(rel.Entry))
	argv := append(append(append([]string(nil), o.NodeArgs...), entry), piArgs...)
	cmd := exec.Command(nodePath, append(argv, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if o.Stdin != nil {
		cmd.Stdin = o.Stdin
	}
	if o.Stdout != nil {
		cmd.Stdout = o.Stdout
	}
	if o.Stderr != nil {
		cmd.Stderr = o.Stderr
	}
	var smokeOut bytes.Buffer
	if smoke {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, &smokeOut, &smokeOut
	}
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if os.Getenv("TRACEPARENT") != "" || os.Getenv(EnvTraceFile) != "" || o.Trace != nil {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, "TRACEPARENT="+tr.Traceparent())
	}

	stop := forwardSignals() // before the start: no signal may fall between
	defer stop.stop()
	if err := cmd.Start(); err != nil {
		return 1, tr, receipt.Errorf(receipt.CodeUnavailable, "cannot start node for %s: %w", id, err)
	}
	mark(PhaseNodeStarted)
	stop.attach(cmd.Process)

	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			terminate(cmd.Process)
		case <-done:
		}
	}()
	werr := cmd.Wait()
	close(done)
	mark(PhaseNodeExited)
	removeLease()
	if werr != nil {
		var ee *exec.ExitError
		if !errors.As(werr, &ee) {
			return 1, tr, receipt.Errorf(receipt.CodeUnavailable, "waiting for node: %w", werr)
		}
	}
	code := exitStatus(cmd.ProcessState)
	tr.Attrs["process.exit_code"] = strconv.Itoa(code)
	if smoke {
		err := checkSmoke(id, rel, smokeTest, code, smokeOut.String())
		mark(PhaseSmokeChecked)
		if err != nil {
			return 1, tr, err
		}
		return 0, tr, nil
	}
	return code, tr, nil
}

// checkSmoke judges a smoke start as the release's smoke stage does: exit
// 0 and the trimmed output matching expect.
func checkSmoke(id string, rel *receipt.Release, t *lockSmoke, code int, out string) error {
	out = strings.TrimSpace(out)
	re, err := regexp.Compile(receipt.ExpandExpect(t.Expect, rel.Version))
	switch {
	case err != nil:
		return receipt.Errorf(receipt.CodeConfigInvalid, "%s %s: smoke test %s: expect %q: %v", id, rel.Version, t.Name, t.Expect, err)
	case code != 0:
		return receipt.Errorf(receipt.CodeUnavailable, "%s %s: smoke test %s (%s) exited %d:\n%s", id, rel.Version, t.Name, strings.Join(t.Args, " "), code, out)
	case !re.MatchString(out):
		return receipt.Errorf(receipt.CodeUnavailable, "%s %s: smoke test %s (%s): the output does not match %q:\n%s", id, rel.Version, t.Name, strings.Join(t.Args, " "), t.Expect, out)
	}
	return nil
}

// compileCache returns NODE_COMPILE_CACHE=<state>/cache/compile for a
// bundled payload (metadata/bundle.json) once its state directory exists
// (the first start with the cache on creates it, so the cache starts with
// the second), or "" and why not. On as PISHIP_COMPILE_CACHE says, else
// by compileCacheByDefault (not for a smoke start); never with
// verifyAtLaunch: Node checks a cached entry against its source file, not
// against the lock. A compile cache the user set (or disabled) is theirs.
func compileCache(stateDir string, rel *receipt.Release, verify, smoke bool, getenv func(string) string) (kv, why string, err error) {
	on, off := compileCacheByDefault(smoke), "off by default for a smoke start ("+EnvPishipCompileCache+"=1 turns it on)"
	switch v := getenv(EnvPishipCompileCache); v {
	case "":
	case "1":
		on = true
	case "0":
		on, off = false, EnvPishipCompileCache+"=0"
	default:
		return "", "", receipt.Errorf(receipt.CodeConfigInvalid, "%s=%q: use 1 (a compile cache in the state directory) or 0 (none), or unset it for the default", EnvPishipCompileCache, v)
	}
	switch {
	case getenv(EnvCompileCache) != "" || getenv("NODE_DISABLE_COMPILE_CACHE") != "":
		return "", "set by the environment", nil
	case !on:
		return "", off, nil
	case stateDir == "":
		return "", "no state directory", nil
	case verify:
		return "", "verifyAtLaunch", nil
	}
	if _, err := os.Stat(filepath.Join(rel.Payload, "metadata", "bundle.json")); err != nil {
		return "", "not a bundled payload", nil
	}
	if _, err := os.Stat(stateDir); err != nil {
		if os.MkdirAll(stateDir, 0o700) != nil {
			return "", "the state directory cannot be created", nil
		}
		return "", "first start (state directory created)", nil
	}
	return EnvCompileCache + "=" + filepath.Join(stateDir, "cache", "compile"), "", nil
}

// register takes the gate, reads the receipt, writes the lease and lets
// the gate go. A home that refuses the gate's file or every lease (full,
// read-only) does not stop the start: the receipt is written atomically, so
// it is read without the gate, and a run that could register nowhere says
// so once on stderr (the returned warning) and runs.
func register(ctx context.Context, installHome, id string, wait time.Duration, mark func(string)) (rel *receipt.Release, remove func(), warning string, err error) {
	release, err := receipt.TakeGate(ctx, installHome, id, wait)
	if errors.Is(err, receipt.ErrLockUnopenable) {
		release, err = func() {}, nil
	}
	if err != nil {
		return nil, nil, "", err
	}
	mark(PhaseGateAcquired)
	defer func() {
		release()
		mark(PhaseGateReleased)
	}()
	r, err := receipt.Read(installHome, id)
	if err != nil {
		return nil, nil, "", err
	}
	rel, err = r.ActiveRelease()
	if err != nil {
		return nil, nil, "", err
	}
	if err := receipt.CheckInside(installHome, id, rel); err != nil {
		return nil, nil, "", err
	}
	if rel.Entry == "" || !filepath.IsLocal(filepath.FromSlash(rel.Entry)) {
		return nil, nil, "", receipt.Errorf(receipt.CodeConfigInvalid, "the receipt of %s names no valid entry for %s (%q): reinstall it", id, rel.Version, rel.Entry)
	}
	_, remove, err = receipt.WriteLease(installHome, id, rel.Version)
	if err != nil {
		var e *receipt.Error
		if !errors.As(err, &e) || e.Code != receipt.CodeUnavailable {
			return nil, nil, "", err
		}
		remove = func() {}
		warning = fmt.Sprintf("%s: cannot register this run (%s); an uninstall or reclaim meanwhile may remove the running version", id, e.Msg)
	}
	mark(PhaseLeaseHeld)
	return rel, remove, warning, nil
}

// maxLock bounds the lock read at launch.
const maxLock = 16 << 20

// LockNames is what a lock says a release record must name: the entry
// node runs and the command its shim is called by, read as a start reads
// them (checkTrust refuses a record naming anything else). Doctor and
// repair hold a record to this same reading.
func LockNames(lock []byte) (entry, command string, err error) {
	var l launchLock
	if err := json.Unmarshal(lock, &l); err != nil {
		return "", "", err
	}
	return l.Runtime.Entry, l.Distribution.Command, nil
}

// launchLock is what a start reads of the lock once its digest matched.
type launchLock struct {
	// Distribution.Command and Runtime.Entry are what the receipt's
	// record must name: an edited record is refused.
	Distribution struct {
		Command string `json:"command"`
	} `json:"distribution"`
	Runtime struct {
		Entry string `json:"entry"`
	} `json:"runtime"`
	VerifyAtLaunch bool        `json:"verifyAtLaunch"`
	Smoke          []lockSmoke `json:"smoke"`
	// Node is the node block: the Node the payload ships (node.go).
	Node *lockNode `json:"node"`
	// PiPackages are the vendored Pi packages: their directory in the
	// payload and the files that decide what Pi loads from it.
	PiPackages []struct {
		Name, Root string
		Manifest   lockFile
		Extensions []lockFile
	} `json:"piPackages"`
}

type lockFile struct{ Path, SHA256 string }

type lockSmoke struct {
	Name   string   `json:"name"`
	Args   []string `json:"args"`
	Expect string   `json:"expect"`
}

// checkPiPackages hashes each vendored Pi package's package.json and
// extension entry files against the lock, on every start whatever
// verifyAtLaunch says: a changed one is INTEGRITY_FAILED and nothing runs.
// It returns the arguments that hand the packages to Pi (-e <dir> each),
// which Pi loads beside whatever the user configured; piship neither
// reads nor writes the user's Pi settings.
func checkPiPackages(id string, rel *receipt.Release, lock launchLock) ([]string, error) {
	var args []string
	buf := make([]byte, 64<<10)
	for _, p := range lock.PiPackages {
		if !filepath.IsLocal(filepath.FromSlash(p.Root)) || p.Manifest.Path != "package.json" {
			return nil, receipt.Errorf(receipt.CodeIntegrity, "%s %s: the lock names Pi package %s at %q, which is not a directory of the payload: reinstall the release", id, rel.Version, p.Name, p.Root)
		}
		root := filepath.Join(rel.Payload, filepath.FromSlash(p.Root))
		for _, f := range append([]lockFile{p.Manifest}, p.Extensions...) {
			if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
				return nil, receipt.Errorf(receipt.CodeIntegrity, "%s %s: Pi package %s: the lock names %q, which is not a file of the package: reinstall the release", id, rel.Version, p.Name, f.Path)
			}
			fp := filepath.Join(root, filepath.FromSlash(f.Path))
			got, err := hashFile(fp, buf)
			if err != nil {
				return nil, receipt.Errorf(receipt.CodeIntegrity, "%s %s: Pi package %s: cannot read %s: %v: nothing was run; run piship doctor %s", id, rel.Version, p.Name, fp, err, id)
			}
			if !strings.EqualFold(got, f.SHA256) {
				return nil, receipt.Errorf(receipt.CodeIntegrity, "%s %s: Pi package %s: %s changed since it was released (sha256 %s, the lock pins %s): nothing was run; run piship doctor %s, or reinstall the release", id, rel.Version, p.Name, fp, got, f.SHA256, id)
			}
		}
		args = append(args, "-e", root)
	}
	return args, nil
}

// checkTrust reads target.json and hashes the lock. It returns whether the
// full inventory check is asked for, and the lock's launch fields.
func checkTrust(id string, rel *receipt.Release) (verify bool, lock launchLock, err error) {
	var target struct{ Platform, Arch string }
	tpath := filepath.Join(rel.Payload, "metadata", "target.json")
	data, err := atomicfs.ReadRegular(tpath, 0)
	if err == nil {
		err = json.Unmarshal(data, &target)
	}
	if err != nil {
		return false, lock, receipt.Errorf(receipt.CodeIntegrity, "%s %s: cannot read %s: %v: run piship doctor", id, rel.Version, tpath, err)
	}
	if got, want := target.Platform+"-"+target.Arch, platform.HostTarget(); got != want {
		return false, lock, receipt.Errorf(receipt.CodeConfigInvalid, "%s %s is built for %s, and this machine is %s", id, rel.Version, got, want)
	}

	lpath := filepath.Join(rel.Payload, "piship.lock")
	f, err := atomicfs.OpenRegular(lpath)
	if err != nil {
		return false, lock, receipt.Errorf(receipt.CodeIntegrity, "%s %s: cannot read %s: %v: run piship doctor", id, rel.Version, lpath, err)
	}
	defer f.Close()
	var buf bytes.Buffer
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(h, &buf), io.LimitReader(f, maxLock)); err != nil {
		return false, lock, receipt.Errorf(receipt.CodeIntegrity, "%s %s: cannot read %s: %v", id, rel.Version, lpath, err)
	}
	if rel.LockSHA256 != "" {
		if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, rel.LockSHA256) {
			return false, lock, receipt.Errorf(receipt.CodeIntegrity, "%s %s: %s changed since it was installed (sha256 %s, the receipt recorded %s): nothing was run; reinstall the release", id, rel.Version, lpath, got, rel.LockSHA256)
		}
	}
	// The lock's own verifyAtLaunch and Pi packages, trusted once its
	// digest matched (or when there was nothing to compare with).
	if err := json.Unmarshal(buf.Bytes(), &lock); err != nil {
		return false, lock, receipt.Errorf(receipt.CodeIntegrity, "%s %s: %s is not a lock (%v): reinstall the release", id, rel.Version, lpath, err)
	}
	// The record runs what the lock says: an entry or command edited in
	// the receipt (to run another payload file) is refused.
	if rel.Entry != lock.Runtime.Entry || rel.Command != lock.Distribution.Command {
		return false, lock, receipt.Errorf(receipt.CodeIntegrity, "%s %s: the receipt names entry %q and command %q, and the installed lock %q and %q: the receipt was edited; nothing was run; run piship repair %s", id, rel.Version, rel.Entry, rel.Command, lock.Runtime.Entry, lock.Distribution.Command, id)
	}
	return rel.VerifyAtLaunch || lock.VerifyAtLaunch, lock, nil
}
