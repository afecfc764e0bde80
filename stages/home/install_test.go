package home

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"piship.dev/piship/cache/atomicfs"

	"piship.dev/piship/stages/home/receipt"
)

func TestInstallFromArchive(t *testing.T) {
	e := newEnv(t)
	rel := makeRelease(t, e.src, spec("1.0.0"))
	arch, digest := makeArchive(t, rel)
	res := e.mustInstall(arch)
	if res.ID != "hello" || res.Version != "1.0.0" || res.Source != receipt.SourceArchive || res.ArchiveSHA256 != digest || res.Reused {
		t.Fatalf("result %+v", res)
	}
	vdir := receipt.VersionDir(e.homes.Install, "hello", "1.0.0")
	if res.Dir != vdir || res.Payload != filepath.Join(vdir, "payload") {
		t.Fatalf("dir %s payload %s", res.Dir, res.Payload)
	}
	for _, p := range []string{"release.json", "checksums.txt", "payload/node_modules/x/cli.js", "payload/metadata/inventory.json"} {
		if _, err := os.Stat(filepath.Join(vdir, p)); err != nil {
			t.Error(err)
		}
	}
	rc := e.receipt()
	a := rc.Find(rc.Active)
	if rc.Active != "1.0.0" || rc.Previous != "" || a.ArchiveSHA256 != digest || a.LockSHA256 == "" || a.Entry != "node_modules/x/cli.js" || a.Command != "hello" || a.Channel != "stable" {
		t.Fatalf("receipt %+v", rc)
	}
	shim, err := os.ReadFile(filepath.Join(e.homes.Bin, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#!/bin/sh\n", "exec '/opt/piship/bin/piship' launch 'hello' -- \"$@\"\n", "PISHIP_INSTALL_HOME='" + e.homes.Install + "'"} {
		if !strings.Contains(string(shim), want) {
			t.Errorf("shim lacks %q:\n%s", want, shim)
		}
	}
	if fi, _ := os.Stat(filepath.Join(e.homes.Bin, "hello")); fi.Mode().Perm()&0o111 == 0 {
		t.Error("shim is not executable")
	}
	if _, err := os.Stat(filepath.Join(e.homes.Bin, "hello.cmd")); err == nil {
		t.Error("a .cmd shim for a non-win32 target")
	}
}

func TestInstallFromReleaseAndPayloadDirs(t *testing.T) {
	e := newEnv(t)
	rel := makeRelease(t, e.src, spec("1.0.0"))
	res := e.mustInstall(rel)
	if res.Source != receipt.SourceRelease || res.Version != "1.0.0" || res.ArchiveSHA256 != "" {
		t.Fatalf("%+v", res)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "release.json")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(res.Payload, "bin", "hello")); err != nil || fi.Mode().Perm()&0o111 == 0 {
		t.Fatalf("bin/hello lost its execute bit: %v", err)
	}

	pay := filepath.Join(e.src, "out", "hello")
	makePayload(t, pay, spec("2.0.0"))
	writeFile(t, pay+".piship-qualification.json", `{"qualification":"unqualified-local"}`, 0o644)
	res = e.mustInstall(pay)
	if res.Source != receipt.SourcePayload || res.Version != "2.0.0" || len(res.Warnings) == 0 {
		t.Fatalf("%+v", res)
	}
	if res.Payload != filepath.Join(receipt.VersionDir(e.homes.Install, "hello", "2.0.0"), "payload") {
		t.Fatalf("payload %s", res.Payload)
	}
	rc := e.receipt()
	if rc.Active != "2.0.0" || rc.Previous != "1.0.0" {
		t.Fatalf("active %s previous %s", rc.Active, rc.Previous)
	}
	// Installing the same directory again reuses it.
	res = e.mustInstall(pay)
	if !res.Reused {
		t.Fatalf("not reused: %+v", res)
	}
	if rc := e.receipt(); rc.Active != "2.0.0" || rc.Previous != "1.0.0" {
		t.Fatalf("a reinstall of the active version moved previous: %+v", rc)
	}
}

func TestInstallTamperedArchive(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	before := e.receiptBytes()

	// A payload file changed after the inventory was made: the archive and
	// its sidecar agree, the file does not match the inventory.
	rel := makeRelease(t, e.src, spec("2.0.0"))
	writeFile(t, filepath.Join(rel, "payload", "node_modules", "x", "cli.js"), "evil()\n", 0o644)
	arch, _ := makeArchive(t, rel)
	_, err := e.install(arch)
	wantCode(t, err, receipt.CodeIntegrity)
	if !strings.Contains(err.Error(), "node_modules/x/cli.js") {
		t.Errorf("%v does not name the file", err)
	}
	if e.receiptBytes() != before {
		t.Fatal("the receipt changed")
	}
	vdir := receipt.VersionDir(e.homes.Install, "hello", "2.0.0")
	if _, err := os.Stat(vdir); err == nil {
		t.Fatal("the refused version stands at its version path")
	}
	// Never referenced, it was removed at once (issue 13, defect 8), not
	// left for doctor.
	if n := retained(t, e, "2.0.0"); n != 0 {
		t.Fatalf("%d retained directories of 2.0.0, want none", n)
	}
	if _, err := os.Stat(filepath.Join(e.homes.Bin, "hello")); err != nil {
		t.Fatal("the shim of the active version went away")
	}

	// The archive itself differs from its sidecar.
	rel3 := makeRelease(t, e.src, spec("3.0.0"))
	arch3, _ := makeArchive(t, rel3)
	writeFile(t, arch3+".sha256", strings.Repeat("0", 64)+"  "+filepath.Base(arch3)+"\n", 0o644)
	_, err = e.install(arch3)
	wantCode(t, err, receipt.CodeIntegrity)
	// --sha256 and the sidecar disagree: refused before reading.
	os.Remove(arch3 + ".sha256")
	_, err = e.install(arch3, func(o *InstallOptions) { o.SHA256 = strings.Repeat("1", 64) })
	wantCode(t, err, receipt.CodeIntegrity)
	if e.receiptBytes() != before {
		t.Fatal("the receipt changed")
	}

	// release.json is for another version than the archive's name says.
	rel4 := makeRelease(t, e.src, spec("4.0.0"))
	renamed := filepath.Join(e.src, spec("5.0.0").name())
	if err := os.Rename(rel4, renamed); err != nil {
		t.Fatal(err)
	}
	arch5, _ := makeArchive(t, renamed)
	_, err = e.install(arch5)
	wantCode(t, err, receipt.CodeIntegrity)
	if e.receiptBytes() != before {
		t.Fatal("the receipt changed")
	}
}

func TestInstallChecksumsBindReleaseFiles(t *testing.T) {
	e := newEnv(t)
	rel := makeRelease(t, e.src, spec("1.0.0"))
	writeFile(t, filepath.Join(rel, "sbom.spdx.json"), `{"tampered":true}`, 0o644)
	arch, _ := makeArchive(t, rel)
	_, err := e.install(arch)
	wantCode(t, err, receipt.CodeIntegrity)
	if !strings.Contains(err.Error(), "sbom.spdx.json") {
		t.Fatal(err)
	}
}

func retained(t *testing.T, e *env, version string) int {
	t.Helper()
	entries, _ := os.ReadDir(receipt.AppDir(e.homes.Install, "hello"))
	n := 0
	for _, en := range entries {
		if receipt.RetainedVersion(en.Name()) == version {
			n++
		}
	}
	return n
}

func TestInstallMovesLeftoverAside(t *testing.T) {
	e := newEnv(t)
	arch, _ := makeArchive(t, makeRelease(t, e.src, spec("1.0.0")))
	vdir := receipt.VersionDir(e.homes.Install, "hello", "1.0.0")
	writeFile(t, filepath.Join(vdir, "payload", "half-written.js"), "partial", 0o644)
	res := e.mustInstall(arch)
	if res.MovedAside == "" || receipt.RetainedVersion(filepath.Base(res.MovedAside)) != "1.0.0" {
		t.Fatalf("moved aside %q", res.MovedAside)
	}
	if _, err := os.Stat(filepath.Join(res.MovedAside, "payload", "half-written.js")); err != nil {
		t.Fatal("the leftover was not moved aside whole")
	}
	if _, err := os.Stat(filepath.Join(vdir, "payload", "half-written.js")); err == nil {
		t.Fatal("the leftover is in the new version")
	}
}

func TestRetainedNeverOverwritten(t *testing.T) {
	e := newEnv(t)
	// 1.0.0 installed, then 1.0.0 with other bytes: the first is set aside
	// and recorded among the retained, with its archive digest.
	arch1, d1 := makeArchive(t, makeRelease(t, e.src, spec("1.0.0")))
	e.mustInstall(arch1)
	other := filepath.Join(e.src, "other")
	s := spec("1.0.0")
	s.extra = map[string]string{"resources/note.txt": "second build\n"}
	arch1b, d1b := makeArchive(t, makeRelease(t, other, s))
	res := e.mustInstall(arch1b)
	if res.MovedAside == "" || res.Reused {
		t.Fatalf("%+v", res)
	}
	first := res.MovedAside
	stamp := func() string { b, _ := os.ReadFile(filepath.Join(first, "payload", "piship.lock")); return string(b) }
	lockBefore := stamp()
	rc := e.receipt()
	if len(rc.Retained) != 1 || rc.Retained[0].ArchiveSHA256 != d1 || rc.Retained[0].Dir != first {
		t.Fatalf("retained %+v", rc.Retained)
	}
	if rc.Find("1.0.0").ArchiveSHA256 != d1b {
		t.Fatal("the active record is not the second build")
	}
	// The first archive again: the retained directory is reused as it is,
	// never written into.
	res = e.mustInstall(arch1)
	if !res.Reused || res.Dir != first {
		t.Fatalf("%+v", res)
	}
	if stamp() != lockBefore {
		t.Fatal("the retained release was overwritten")
	}
	rc = e.receipt()
	if a := rc.Find(rc.Active); a.Dir != first || a.ArchiveSHA256 != d1 {
		t.Fatalf("active %+v", a)
	}
	// The version path (the second build) is now retained in turn.
	if len(rc.Retained) != 1 || rc.Retained[0].ArchiveSHA256 != d1b {
		t.Fatalf("retained %+v", rc.Retained)
	}
}

func TestInstallReceiptAtomic(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	before := e.receiptBytes()
	arch, _ := makeArchive(t, makeRelease(t, e.src, spec("2.0.0")))
	failing := atomicfs.Renamer{Rename: func(from, to string) error {
		if filepath.Base(to) == "hello.json" {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EIO}
		}
		return os.Rename(from, to)
	}}
	_, err := e.install(arch, func(o *InstallOptions) { o.Renamer = &failing })
	if err == nil {
		t.Fatal("install succeeded with a failing receipt rename")
	}
	if e.receiptBytes() != before {
		t.Fatal("the receipt changed")
	}
	if rc := e.receipt(); rc.Active != "1.0.0" {
		t.Fatal(rc.Active)
	}
	// The failed install removed the directory it wrote: the next one
	// has nothing to move aside.
	res := e.mustInstall(arch)
	if res.MovedAside != "" || retained(t, e, "2.0.0") != 0 {
		t.Fatalf("%+v", res)
	}
}

func TestInstallRefusals(t *testing.T) {
	e := newEnv(t)
	rel := makeRelease(t, e.src, spec("1.0.0"))
	arch, _ := makeArchive(t, rel)
	// Another host target.
	_, err := e.install(arch, func(o *InstallOptions) { o.HostTarget = "sunos-s390x" })
	wantCode(t, err, receipt.CodeConfigInvalid)
	// An archive whose name says nothing.
	plain := filepath.Join(e.src, "download.tar.gz")
	data, _ := os.ReadFile(arch)
	writeFile(t, plain, string(data), 0o644)
	_, err = e.install(plain)
	wantCode(t, err, receipt.CodeConfigInvalid)
	// ... unless the id and version are given (an update's download).
	res := e.mustInstall(plain, func(o *InstallOptions) { o.ID, o.Version = "hello", "1.0.0" })
	if res.Version != "1.0.0" {
		t.Fatal(res.Version)
	}
	// Overlapping homes.
	_, err = e.install(arch, func(o *InstallOptions) { o.Homes.Bin = filepath.Join(o.Homes.Install, "bin") })
	wantCode(t, err, receipt.CodeConfigInvalid)
	e.mustInstall(rel, func(o *InstallOptions) { o.Channel = "stable" })
	// A shim path held by someone else's file.
	other := spec("2.0.0")
	other.command = "ls"
	writeFile(t, filepath.Join(e.homes.Bin, "ls"), "#!/bin/sh\necho mine\n", 0o755)
	_, err = e.install(makeRelease(t, e.src, other))
	wantCode(t, err, receipt.CodeUnavailable)
	if b, _ := os.ReadFile(filepath.Join(e.homes.Bin, "ls")); string(b) != "#!/bin/sh\necho mine\n" {
		t.Fatal("a foreign file was replaced")
	}
}

func TestParseArchiveName(t *testing.T) {
	for name, want := range map[string][3]string{
		"hello-1.0.0-linux-x64.tar.gz":          {"hello", "1.0.0", "linux-x64"},
		"my-app-2.3.4-rc.1-darwin-arm64.tar.gz": {"my-app", "2.3.4-rc.1", "darwin-arm64"},
		"pi-2-1.0.0-win32-x64.tar.gz":           {"pi-2", "1.0.0", "win32-x64"},
		"a.b-0.0.1+build.5-linux-arm64.tar.gz":  {"a.b", "0.0.1+build.5", "linux-arm64"},
		"hello-1.0.0-linux-x64-extra.tar.gz":    {},
		"hello-linux-x64.tar.gz":                {},
		"x-1.2.3-4.5.6-linux-x64.tar.gz":        {}, // ambiguous
		"hello-1.0-linux-x64.tar.gz":            {},
		"hello-1.0.0-linux-amd64.tar.gz":        {},
		"hello-1.0.0-linux-x64-musl.tar.gz":     {"hello", "1.0.0", "linux-x64-musl"},
		"hello-1.0.0-darwin-x64-musl.tar.gz":    {}, // only linux names its C library
		"hello-musl-1.0.0-linux-arm64.tar.gz":   {"hello-musl", "1.0.0", "linux-arm64"},
		// V2, what releases write now; no other extension.
		"hello-1.0.0-linux-x64.tar.zst":  {"hello", "1.0.0", "linux-x64"},
		"hello-1.0.0-linux-x64.tar.zstd": {},
		"hello-1.0.0-linux-x64.tar":      {},
		"hello-1.0.0-linux-x64.zst":      {},
	} {
		id, v, tg, err := parseArchiveName(name)
		if want == [3]string{} {
			if err == nil {
				t.Errorf("%s: parsed as %s %s %s", name, id, v, tg)
			}
			continue
		}
		if err != nil || [3]string{id, v, tg} != want {
			t.Errorf("%s: %s %s %s %v", name, id, v, tg, err)
		}
	}
}

func TestWindowsShimAndRenameRetryInInstall(t *testing.T) {
	// The .cmd shim text.
	h := receipt.Homes{Install: `C:\Users\u\piship`, Bin: `C:\Users\u\bin`, State: `C:\Users\u\.piship 100%`}
	cmd := ShimCmd(`C:\Program Files\piship\piship.exe`, "hello", h)
	for _, want := range []string{"@echo off\r\n", `set "PISHIP_STATE_HOME=C:\Users\u\.piship 100%%"` + "\r\n", `"C:\Program Files\piship\piship.exe" launch hello -- %*` + "\r\n"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("cmd shim lacks %q:\n%s", want, cmd)
		}
	}
	// An install whose move-aside rename is refused twice with EBUSY, as a
	// scanner's handle makes Windows do, succeeds after the schedule's
	// first two waits under the Windows policy.
	e := newEnv(t)
	arch, _ := makeArchive(t, makeRelease(t, e.src, spec("1.0.0")))
	writeFile(t, filepath.Join(receipt.VersionDir(e.homes.Install, "hello", "1.0.0"), "leftover"), "x", 0o644)
	var slept []string
	busy := 2
	policy := atomicfs.WindowsRenamer(atomicfs.InstallDelays)
	policy.Rename = func(from, to string) error {
		if strings.Contains(to, receipt.RetainedPrefix) && busy > 0 {
			busy--
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EBUSY}
		}
		return os.Rename(from, to)
	}
	res := e.mustInstall(arch, func(o *InstallOptions) {
		policy.Sleep = func(d time.Duration) { slept = append(slept, d.String()) }
		o.Renamer = &policy
	})
	if res.MovedAside == "" || strings.Join(slept, ",") != "25ms,50ms" {
		t.Fatalf("moved %q after waits %v", res.MovedAside, slept)
	}
	// The same failure under the immediate policy fails at once.
	e2 := newEnv(t)
	writeFile(t, filepath.Join(receipt.VersionDir(e2.homes.Install, "hello", "1.0.0"), "leftover"), "x", 0o644)
	imm := atomicfs.ImmediateRenamer()
	imm.Rename = func(from, to string) error {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EBUSY}
	}
	_, err := e2.install(arch, func(o *InstallOptions) { o.Renamer = &imm })
	wantCode(t, err, receipt.CodeUnavailable)
}

// BeforeCommit runs once the release is in place and before anything
// refers to it; its failure leaves the previous release active and the
// new version unreferenced, for archive installs and for reuses alike.
func TestBeforeCommitFailureActivatesNothing(t *testing.T) {
	e := newEnv(t)
	arch1, _ := makeArchive(t, makeRelease(t, e.src, spec("1.0.0")))
	arch2, _ := makeArchive(t, makeRelease(t, e.src, spec("2.0.0")))
	e.mustInstall(arch1)
	before := e.receiptBytes()
	shim, _ := os.ReadFile(filepath.Join(e.homes.Bin, "hello"))
	vdir := receipt.VersionDir(e.homes.Install, "hello", "2.0.0")
	boom := errors.New("CONFIG_UNAVAILABLE: cannot keep the launcher")
	calls := 0
	_, err := e.install(arch2, func(o *InstallOptions) {
		o.BeforeCommit = func() error {
			calls++
			if _, err := os.Stat(filepath.Join(vdir, "payload", "metadata", "inventory.json")); err != nil {
				t.Errorf("BeforeCommit ran before the release was extracted: %v", err)
			}
			return boom
		}
	})
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("install = %v after %d BeforeCommit calls, want its error after one", err, calls)
	}
	if got := e.receiptBytes(); got != before {
		t.Fatalf("receipt changed:\n%s\nwas\n%s", got, before)
	}
	if got, _ := os.ReadFile(filepath.Join(e.homes.Bin, "hello")); !bytes.Equal(got, shim) {
		t.Fatal("shim changed")
	}
	// A reuse (the active release again) waits for it too.
	calls = 0
	_, err = e.install(arch1, func(o *InstallOptions) {
		o.BeforeCommit = func() error { calls++; return boom }
	})
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("reinstall = %v after %d BeforeCommit calls, want its error after one", err, calls)
	}
	// Without the failure the next install succeeds.
	if res := e.mustInstall(arch2); res.Version != "2.0.0" || e.receipt().Active != "2.0.0" {
		t.Fatalf("install after the failure: %+v", res)
	}
}

// --expect-key holds on every path (issue 13, defect 4): a release that does
// not trust the expected key is refused on a fresh home, and also when the
// same release is already installed or retained and would be reused as it
// stands. The refusal changes nothing.
func TestExpectKeyIsCheckedOnEveryPath(t *testing.T) {
	const key = "sha256:" + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12"
	expect := func(o *InstallOptions) { o.ExpectKey = key }

	fresh := newEnv(t)
	pay := makeRelease(t, fresh.src, spec("1.0.0"))
	_, err := fresh.install(pay, expect)
	wantCode(t, err, "POLICY_DENIED")

	// Installed and active: the reuse path.
	e := newEnv(t)
	rel1 := makeRelease(t, e.src, spec("1.0.0"))
	e.mustInstall(rel1)
	before := e.receiptBytes()
	_, err = e.install(rel1, expect)
	wantCode(t, err, "POLICY_DENIED")
	if !strings.Contains(err.Error(), key) {
		t.Errorf("the refusal does not name the expected key: %v", err)
	}
	if e.receiptBytes() != before {
		t.Error("a refused reinstall changed the receipt")
	}

	// Installed, then superseded (previous): reusing it is refused too.
	e.mustInstall(makeRelease(t, filepath.Join(e.root, "two"), spec("2.0.0")))
	before = e.receiptBytes()
	_, err = e.install(rel1, expect)
	wantCode(t, err, "POLICY_DENIED")
	if rc := e.receipt(); rc.Active != "2.0.0" || e.receiptBytes() != before {
		t.Fatalf("a refused reinstall of the previous version changed the receipt: %+v", rc)
	}
	// Without the flag the same reinstall still reuses it.
	if res := e.mustInstall(rel1); !res.Reused {
		t.Fatalf("not reused: %+v", res)
	}
}
