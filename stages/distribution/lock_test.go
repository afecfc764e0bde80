package distribution

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"piship.dev/piship/cache/canon"
)

func TestLockDeterministic(t *testing.T) {
	dir := copyTree(t, helloDir)
	d := mustLoad(t, dir)
	a, err := ComputeLock(d)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ComputeLock(mustLoad(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Marshal(), b.Marshal()) {
		t.Fatalf("two computations differ:\n%s\n%s", a.Marshal(), b.Marshal())
	}
	// The copy and the committed example are the same inputs.
	c, err := ComputeLock(mustLoad(t, helloDir))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Marshal(), c.Marshal()) {
		t.Fatal("the lock depends on where the distribution is")
	}

	raw := a.Marshal()
	if !bytes.HasSuffix(raw, []byte("}\n")) || bytes.HasSuffix(raw, []byte("\n\n")) {
		t.Error("no single trailing newline")
	}
	if !bytes.Contains(raw, []byte("\n  \"distribution\": {\n    \"command\": \"hello\",")) {
		t.Errorf("not two-space indented with sorted keys:\n%s", raw)
	}
	if bad := unsortedKeys(raw); len(bad) > 0 {
		t.Errorf("keys out of order: %v", bad)
	}
	if bad := unsortedKeys([]byte(`{"a": {"y": [1, {"q": 1, "p": 2}], "x": 1}, "b": 2}`)); !reflect.DeepEqual(bad, []string{`"p" after "q"`, `"x" after "y"`}) {
		t.Errorf("the key order check is broken: %v", bad)
	}

	want := map[string]string{
		"resources/motd.txt":            canon.SHA256Hex([]byte(readFile(t, filepath.Join(dir, "resources/motd.txt")))),
		"resources/themes/default.json": canon.SHA256Hex([]byte(readFile(t, filepath.Join(dir, "resources/themes/default.json")))),
	}
	if !reflect.DeepEqual(a.Resources, want) {
		t.Errorf("resources = %v, want %v", a.Resources, want)
	}
	if a.Runtime.Packages != 4 || a.Schema != LockSchema || a.DistributionSHA256 != d.SHA256 {
		t.Errorf("lock = %+v", a)
	}
	if a.Tools["hello-info"] != (LockTool{Source: "tools/hello-info", SHA256: d.Tools["hello-info"].SHA256}) {
		t.Errorf("tools = %v", a.Tools)
	}

	// Round trip through the file.
	if err := WriteLock(d, a); err != nil {
		t.Fatal(err)
	}
	got, gotRaw, err := ReadLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotRaw, raw) || !bytes.Equal(got.Marshal(), raw) {
		t.Error("ReadLock does not give back what WriteLock wrote")
	}
	if l, err := CheckLock(d); err != nil || l.SHA256() != canon.SHA256Hex(raw) {
		t.Errorf("CheckLock on a fresh lock: %v", err)
	}
	// No temporary file is left behind.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left %s", e.Name())
		}
	}
	// Writing the same lock again does not touch the file.
	info1, _ := os.Stat(d.LockPath())
	if err := os.Chtimes(d.LockPath(), info1.ModTime().Add(-3600e9), info1.ModTime().Add(-3600e9)); err != nil {
		t.Fatal(err)
	}
	info1, _ = os.Stat(d.LockPath())
	if err := WriteLock(d, a); err != nil {
		t.Fatal(err)
	}
	if info2, _ := os.Stat(d.LockPath()); !info2.ModTime().Equal(info1.ModTime()) {
		t.Error("an unchanged lock was rewritten")
	}
}

// unsortedKeys lists the keys of the JSON document's objects that come
// after a greater key.
func unsortedKeys(raw []byte) []string {
	var bad []string
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		obj     bool
		lastKey string
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return bad
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.obj {
					top.wantKey = true
				}
				stack = append(stack, &frame{obj: v == '{', wantKey: v == '{'})
				continue
			case '}', ']':
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].wantKey = true
				}
				continue
			}
		case string:
			if top != nil && top.obj && top.wantKey {
				if v < top.lastKey {
					bad = append(bad, fmt.Sprintf("%q after %q", v, top.lastKey))
				}
				top.lastKey = v
				top.wantKey = false
				continue
			}
		}
		if top != nil && top.obj {
			top.wantKey = true
		}
	}
}

func TestLockEmptyCollections(t *testing.T) {
	raw := string((&Lock{Schema: LockSchema}).Marshal())
	for _, want := range []string{`"resources": {}`, `"tools": {}`, `"targets": []`, `"sources": []`, `"allowInstallScripts": []`} {
		if !strings.Contains(raw, want) {
			t.Errorf("lacks %s:\n%s", want, raw)
		}
	}
	if l, err := ParseLock([]byte(raw)); err != nil || !bytes.Equal(l.Marshal(), []byte(raw)) {
		t.Errorf("round trip: %v", err)
	}
	l := &Lock{Schema: LockSchema, Distribution: LockDistribution{Name: "A <b> & c"}}
	if !strings.Contains(string(l.Marshal()), `"A <b> & c"`) {
		t.Error("HTML-escaped")
	}
}

// lockedHello is a copy of hello with a current piship.lock.
func lockedHello(t *testing.T) string {
	t.Helper()
	dir := copyTree(t, helloDir)
	d := mustLoad(t, dir)
	l, err := ComputeLock(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteLock(d, l); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCheckLock(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		dir := copyTree(t, helloDir)
		_, err := CheckLock(mustLoad(t, dir))
		want := "LOCK_INVALID: " + filepath.Join(dir, LockFileName) + " is missing: run piship lock " + dir
		if err == nil || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
		var le *LockError
		if !errors.As(err, &le) || !le.Missing {
			t.Error("not a *LockError with Missing")
		}
	})

	tool := func(dir string) string { return filepath.Join(dir, "tools", "hello-info") }
	cases := []struct {
		name    string
		change  func(t *testing.T, dir string)
		changes []string
	}{
		{"distribution.hcl", func(t *testing.T, dir string) {
			editFile(t, filepath.Join(dir, FileName), `name    = "Hello"`, `name    = "Hello there"`)
		}, []string{"distribution.hcl"}},
		{"comment in distribution.hcl", func(t *testing.T, dir string) {
			editFile(t, filepath.Join(dir, FileName), "# The hello", "# Now the hello")
		}, []string{"distribution.hcl"}},
		{"package.json", func(t *testing.T, dir string) {
			editFile(t, filepath.Join(dir, "runtime/package.json"), `"private": true`, `"private": true, "author": "x"`)
		}, []string{"runtime/package.json"}},
		{"package-lock.json", func(t *testing.T, dir string) {
			editFile(t, filepath.Join(dir, "runtime/package-lock.json"), `"license": "ISC"`, `"license": "MIT"`)
		}, []string{"runtime/package-lock.json"}},
		{"resource changed", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "resources/motd.txt"), "changed\n")
		}, []string{"resource resources/motd.txt (changed)"}},
		{"resource added", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "resources/themes/dark.json"), "{}\n")
		}, []string{"resource resources/themes/dark.json (added)"}},
		{"resource removed", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "resources/themes/default.json")); err != nil {
				t.Fatal(err)
			}
		}, []string{"resource resources/themes/default.json (removed)"}},
		{"tool replaced and re-pinned", func(t *testing.T, dir string) {
			old := canon.SHA256Hex([]byte(readFile(t, tool(dir))))
			writeFile(t, tool(dir), "#!/bin/sh\necho v2\n")
			editFile(t, filepath.Join(dir, FileName), old, canon.SHA256Hex([]byte("#!/bin/sh\necho v2\n")))
		}, []string{"distribution.hcl", "tool hello-info (changed)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := lockedHello(t)
			c.change(t, dir)
			_, err := CheckLock(mustLoad(t, dir))
			var le *LockError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a *LockError", err)
			}
			if !reflect.DeepEqual(le.Changes, c.changes) {
				t.Errorf("changes %q, want %q", le.Changes, c.changes)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "LOCK_INVALID: "+filepath.Join(dir, LockFileName)+" is stale") ||
				!strings.HasSuffix(msg, "run piship lock "+dir) {
				t.Errorf("message %q", msg)
			}
			for _, ch := range c.changes {
				if !strings.Contains(msg, ch) {
					t.Errorf("message %q does not name %s", msg, ch)
				}
			}
			// piship lock makes it current again.
			d := mustLoad(t, dir)
			l, err := ComputeLock(d)
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteLock(d, l); err != nil {
				t.Fatal(err)
			}
			if _, err := CheckLock(d); err != nil {
				t.Errorf("after relocking: %v", err)
			}
		})
	}

	t.Run("tool file changed, pin kept", func(t *testing.T) {
		dir := lockedHello(t)
		pinned := canon.SHA256Hex([]byte(readFile(t, tool(dir))))
		writeFile(t, tool(dir), "#!/bin/sh\necho tampered\n")
		_, err := CheckLock(mustLoad(t, dir))
		actual := canon.SHA256Hex([]byte("#!/bin/sh\necho tampered\n"))
		if err == nil || !strings.HasPrefix(err.Error(), `POLICY_DENIED: tool "hello-info"`) ||
			!strings.Contains(err.Error(), pinned) || !strings.Contains(err.Error(), actual) {
			t.Fatalf("got %v", err)
		}
		if !strings.Contains(err.Error(), FileName+":19:58") {
			t.Errorf("not positioned at the pin: %v", err)
		}
	})

	t.Run("hand-edited", func(t *testing.T) {
		dir := lockedHello(t)
		p := filepath.Join(dir, LockFileName)
		writeFile(t, p, strings.ReplaceAll(readFile(t, p), "  ", "\t"))
		_, err := CheckLock(mustLoad(t, dir))
		if err == nil || !strings.Contains(err.Error(), "not in canonical form") || !strings.HasSuffix(err.Error(), "run piship lock "+dir) {
			t.Errorf("got %v", err)
		}
	})

	t.Run("edited values", func(t *testing.T) {
		dir := lockedHello(t)
		editFile(t, filepath.Join(dir, LockFileName), `"verifyAtLaunch": false`, `"verifyAtLaunch": true`)
		_, err := CheckLock(mustLoad(t, dir))
		if err == nil || !strings.Contains(err.Error(), "the lock's copy of distribution.hcl settings") {
			t.Errorf("got %v", err)
		}
	})

	t.Run("not a lock", func(t *testing.T) {
		dir := lockedHello(t)
		writeFile(t, filepath.Join(dir, LockFileName), `{"schema": "piship-lock/v0"}`)
		_, err := CheckLock(mustLoad(t, dir))
		if err == nil || !strings.Contains(err.Error(), "is not a valid lock") || !strings.Contains(err.Error(), `"piship-lock/v0"`) {
			t.Errorf("got %v", err)
		}
		writeFile(t, filepath.Join(dir, LockFileName), `{"schema": "piship-lock/v1", "extra": 1}`)
		if _, _, err := ReadLock(dir); err == nil || !strings.Contains(err.Error(), `unknown field "extra"`) {
			t.Errorf("got %v", err)
		}
	})
}

func TestComputeLockRefusesSymlinkedResource(t *testing.T) {
	dir := copyTree(t, helloDir)
	if err := os.Symlink("motd.txt", filepath.Join(dir, "resources", "again.txt")); err != nil {
		t.Fatal("cannot create a symlink:", err)
	}
	_, err := ComputeLock(mustLoad(t, dir))
	if err == nil || !strings.Contains(err.Error(), "again.txt is a symbolic link") || !strings.HasPrefix(err.Error(), "CONFIG_INVALID") {
		t.Errorf("got %v", err)
	}
}

func TestReadPackageLock(t *testing.T) {
	pl, raw, err := ReadPackageLock(filepath.Join(helloDir, "runtime/package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) == 0 || pl.LockfileVersion != 3 || pl.Name != "hello-runtime" || len(pl.Packages) != 5 {
		t.Fatalf("hello lock: %+v", pl)
	}
	cli := pl.Packages["node_modules/hello-cli"]
	if cli.Version != "1.0.0" || cli.Resolved != "file:vendor/hello-cli-1.0.0.tgz" || !strings.HasPrefix(cli.Integrity, "sha512-") ||
		cli.License != "MIT" || cli.Dependencies["hello-format"] != "^1.2.0" || cli.Bin == nil {
		t.Errorf("hello-cli: %+v", cli)
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "package-lock.json")
	writeFile(t, p, `{"lockfileVersion": 2, "packages": {}}`)
	if _, _, err := ReadPackageLock(p); err == nil || !strings.Contains(err.Error(), "lockfileVersion is 2") || !strings.Contains(err.Error(), "--lockfile-version 3") {
		t.Errorf("v2: %v", err)
	}
	writeFile(t, p, `{"lockfileVersion": 3, "packages": {
		"": {"name": "x"},
		"node_modules/old": {"version": "1.0.0", "license": {"type": "BSD"}, "os": "linux", "cpu": ["x64"]},
		"node_modules/dual": {"version": "1.0.0", "license": [{"type": "MIT"}, {"type": "Apache-2.0"}]},
		"node_modules/alias": {"name": "real", "version": "2.0.0"}
	}}`)
	pl, _, err = ReadPackageLock(p)
	if err != nil {
		t.Fatal(err)
	}
	if old := pl.Packages["node_modules/old"]; old.License != "BSD" || !reflect.DeepEqual(old.OS, []string{"linux"}) || !reflect.DeepEqual(old.CPU, []string{"x64"}) {
		t.Errorf("old: %+v", old)
	}
	if pl.Packages["node_modules/dual"].License != "(MIT OR Apache-2.0)" {
		t.Errorf("dual: %q", pl.Packages["node_modules/dual"].License)
	}
	if PackageName("node_modules/alias", pl.Packages["node_modules/alias"]) != "real" ||
		PackageName("node_modules/a/node_modules/@s/b", LockPackage{}) != "@s/b" {
		t.Error("PackageName")
	}
	if _, _, err := ReadPackageLock(filepath.Join(dir, "none.json")); err == nil || !strings.Contains(err.Error(), "npm install --package-lock-only") {
		t.Errorf("missing: %v", err)
	}
}
