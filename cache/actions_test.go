package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// testKey returns a distinct valid key for each name.
func testKey(name string) string {
	return KeyInput{Kind: "test", Config: []byte(name)}.Key()
}

// writeTree writes files (slash-separated path -> content) under dir.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree returns every regular file under dir (slash-separated path ->
// content).
func readTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return filepath.SkipDir
			}
			return err
		}
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			got[filepath.ToSlash(rel)] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

var sampleFiles = map[string]string{
	"out.txt":         "hello\n",
	"out/a/b.txt":     "nested\x00binary\xff",
	"out/a/c.txt":     "",
	"report/z.json":   `{"ok":true}`,
	"same-as-out.txt": "hello\n",
}

// storeSample stores sampleFiles under key and returns the store, the
// stage dir it stored from and the result.
func storeSample(t testing.TB, key string) (*Actions, *Result) {
	t.Helper()
	a := OpenActions(t.TempDir())
	src := t.TempDir()
	writeTree(t, src, sampleFiles)
	res, err := a.Store(key, src, keys(sampleFiles), json.RawMessage(`{ "n": 1 }`))
	if err != nil {
		t.Fatalf("Store: %v", err)
	}
	return a, res
}

func TestStoreLookupRoundTrip(t *testing.T) {
	key := testKey("roundtrip")
	a, stored := storeSample(t, key)
	if got := string(stored.Outputs); got != `{"n":1}` {
		t.Errorf("stored Outputs = %s, want compacted {\"n\":1}", got)
	}
	for p, content := range sampleFiles {
		if stored.Files[p] == "" {
			t.Errorf("stored Files lacks %s", p)
		}
		h, _ := HashFile(writeTemp(t, content))
		if stored.Files[p] != h {
			t.Errorf("stored Files[%s] = %s, want %s", p, stored.Files[p], h)
		}
	}

	dst := filepath.Join(t.TempDir(), "fresh", "stage")
	res, hit, err := a.Lookup(key, dst, keys(sampleFiles))
	if err != nil || !hit || res == nil {
		t.Fatalf("Lookup = %v, %v, %v; want hit", res, hit, err)
	}
	if !a.Has(key) || a.Has(testKey("other")) || a.Has("not-a-key") {
		t.Errorf("Has does not match the store's contents")
	}
	if string(res.Outputs) != string(stored.Outputs) || !sameMap(res.Files, stored.Files) {
		t.Errorf("Lookup result = %s %v, want %s %v", res.Outputs, res.Files, stored.Outputs, stored.Files)
	}
	if got := readTree(t, dst); !sameMap(got, sampleFiles) {
		t.Errorf("restored tree = %q, want %q", got, sampleFiles)
	}

	// A second lookup overwrites existing (stale) files.
	writeTree(t, dst, map[string]string{"out.txt": "stale"})
	if _, hit, err := a.Lookup(key, dst, keys(sampleFiles)); err != nil || !hit {
		t.Fatalf("second Lookup = %v, %v", hit, err)
	}
	if got := readTree(t, dst); !sameMap(got, sampleFiles) {
		t.Errorf("restored tree after overwrite = %q, want %q", got, sampleFiles)
	}

	// A different key is a plain miss.
	if res, hit, err := a.Lookup(testKey("other"), dst, keys(sampleFiles)); res != nil || hit || err != nil {
		t.Errorf("Lookup(other) = %v, %v, %v; want miss", res, hit, err)
	}
}

func writeTemp(t testing.TB, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStoreNoFilesAndNullOutputs(t *testing.T) {
	a := OpenActions(t.TempDir())
	key := testKey("empty")
	if _, err := a.Store(key, t.TempDir(), nil, nil); err != nil {
		t.Fatal(err)
	}
	res, hit, err := a.Lookup(key, t.TempDir(), nil)
	if err != nil || !hit || string(res.Outputs) != "null" || len(res.Files) != 0 {
		t.Fatalf("Lookup = %+v, %v, %v; want hit with null outputs and no files", res, hit, err)
	}
}

func TestRestorePreservesMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no executable bit on windows")
	}
	a := OpenActions(t.TempDir())
	src := t.TempDir()
	writeTree(t, src, map[string]string{"bin/tool": "#!/bin/sh\n"})
	if err := os.Chmod(filepath.Join(src, "bin/tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	key := testKey("mode")
	if _, err := a.Store(key, src, []string{"bin/tool"}, nil); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if _, hit, err := a.Lookup(key, dst, []string{"bin/tool"}); !hit || err != nil {
		t.Fatalf("Lookup = %v, %v", hit, err)
	}
	info, err := os.Stat(filepath.Join(dst, "bin/tool"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm()&0o100 == 0 {
		t.Errorf("restored mode %v lost the executable bit", info.Mode())
	}
}

func TestDamagedEntries(t *testing.T) {
	outs := keys(sampleFiles)
	editEntry := func(t *testing.T, edir string, edit func(map[string]any)) {
		t.Helper()
		p := filepath.Join(edir, entryName)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		data, err = json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stored := func(edir string, i int) string { return filepath.Join(edir, filesName, storedName(i)) }

	tests := []struct {
		name    string
		damage  func(t *testing.T, edir string)
		outputs []string // declared outputs at lookup; default outs
		reason  string   // substring of the error
		is      error    // if set, errors.Is(err, is) must hold
	}{
		{
			name: "altered stored file",
			damage: func(t *testing.T, edir string) {
				os.WriteFile(stored(edir, 1), []byte("tampered"), 0o644)
			},
			reason: "has sha256",
		},
		{
			name: "same-length altered stored file",
			damage: func(t *testing.T, edir string) {
				os.WriteFile(stored(edir, 4), []byte("jello\n"), 0o644)
			},
			reason: "has sha256",
		},
		{
			name: "deleted stored file",
			damage: func(t *testing.T, edir string) {
				if err := os.Remove(stored(edir, 2)); err != nil {
					t.Fatal(err)
				}
			},
			reason: "stored files for",
		},
		{
			name: "extra stored file",
			damage: func(t *testing.T, edir string) {
				os.WriteFile(filepath.Join(edir, filesName, "junk"), nil, 0o644)
			},
			reason: "stored files for",
		},
		{
			name: "stored file replaced by another",
			damage: func(t *testing.T, edir string) {
				os.Remove(stored(edir, 0))
				os.WriteFile(filepath.Join(edir, filesName, "99"), []byte("x"), 0o644)
			},
			reason: "unexpected stored file",
		},
		{
			name: "entry.json outputs changed",
			damage: func(t *testing.T, edir string) {
				editEntry(t, edir, func(m map[string]any) { m["outputs"] = map[string]any{"n": 2} })
			},
			reason: "self-digest mismatch",
		},
		{
			name: "entry.json file digest changed",
			damage: func(t *testing.T, edir string) {
				editEntry(t, edir, func(m map[string]any) {
					m["files"].(map[string]any)["out.txt"] = strings.Repeat("0", 64)
				})
			},
			reason: "self-digest mismatch",
		},
		{
			name: "entry.json file removed",
			damage: func(t *testing.T, edir string) {
				editEntry(t, edir, func(m map[string]any) { delete(m["files"].(map[string]any), "out.txt") })
			},
			reason: "self-digest mismatch",
		},
		{
			name: "entry.json key changed",
			damage: func(t *testing.T, edir string) {
				editEntry(t, edir, func(m map[string]any) { m["key"] = testKey("x") })
			},
			reason: "is for key",
		},
		{
			name: "entry.json schema changed",
			damage: func(t *testing.T, edir string) {
				editEntry(t, edir, func(m map[string]any) { m["schema"] = "piship-action/v0" })
			},
			reason: "unknown schema",
		},
		{
			name: "entry.json malformed",
			damage: func(t *testing.T, edir string) {
				os.WriteFile(filepath.Join(edir, entryName), []byte(`{"schema":`), 0o644)
			},
			reason: "malformed",
		},
		{
			name: "entry.json unknown field",
			damage: func(t *testing.T, edir string) {
				editEntry(t, edir, func(m map[string]any) { m["extra"] = 1 })
			},
			reason: "malformed",
		},
		{
			name: "entry.json missing",
			damage: func(t *testing.T, edir string) {
				os.Remove(filepath.Join(edir, entryName))
			},
			reason: "reading entry.json",
			is:     fs.ErrNotExist,
		},
		{
			name:    "declared outputs differ (one fewer)",
			damage:  func(t *testing.T, edir string) {},
			outputs: outs[1:],
			reason:  "declares outputs",
		},
		{
			name:    "declared outputs differ (one more)",
			damage:  func(t *testing.T, edir string) {},
			outputs: append([]string{"new.txt"}, outs...),
			reason:  "declares outputs",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := testKey(tt.name)
			a, _ := storeSample(t, key)
			edir := a.entryDir(key)
			tt.damage(t, edir)
			lookupOuts := outs
			if tt.outputs != nil {
				lookupOuts = tt.outputs
			}

			dst := t.TempDir()
			res, hit, err := a.Lookup(key, dst, lookupOuts)
			var d *DamagedError
			if res != nil || hit || !errors.As(err, &d) {
				t.Fatalf("Lookup = %v, %v, %v; want miss with *DamagedError", res, hit, err)
			}
			if !strings.Contains(err.Error(), tt.reason) || d.Key != key || d.Dir != edir || d.RemoveErr != nil {
				t.Errorf("error = %v (%+v); want reason containing %q for %s", err, d, tt.reason, edir)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
			if a.Has(key) {
				t.Errorf("Has(%s) = true after damage was removed", key)
			}
			if _, err := os.Stat(edir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("damaged entry still present (stat: %v)", err)
			}
			if got := readTree(t, dst); len(got) != 0 {
				t.Errorf("damaged lookup wrote into the stage dir: %q", keys(got))
			}
			if leftovers := tempDirs(t, a); len(leftovers) != 0 {
				t.Errorf("temporary directories left behind: %v", leftovers)
			}
			// Now it is a plain miss.
			if res, hit, err := a.Lookup(key, dst, lookupOuts); res != nil || hit || err != nil {
				t.Errorf("second Lookup = %v, %v, %v; want plain miss", res, hit, err)
			}
		})
	}
}

func tempDirs(t testing.TB, a *Actions) []string {
	t.Helper()
	des, err := os.ReadDir(a.Root())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if strings.HasPrefix(de.Name(), tempPrefix) {
			out = append(out, de.Name())
		}
	}
	return out
}

func TestSecondStoreKeepsFirst(t *testing.T) {
	a := OpenActions(t.TempDir())
	key := testKey("twice")
	src1, src2 := t.TempDir(), t.TempDir()
	writeTree(t, src1, map[string]string{"o.txt": "first"})
	writeTree(t, src2, map[string]string{"o.txt": "second"})
	if _, err := a.Store(key, src1, []string{"o.txt"}, json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	res2, err := a.Store(key, src2, []string{"o.txt"}, json.RawMessage(`2`))
	if err != nil {
		t.Fatalf("second Store: %v", err)
	}
	if string(res2.Outputs) != "2" {
		t.Errorf("second Store returned %s, want what it was given", res2.Outputs)
	}
	dst := t.TempDir()
	res, hit, err := a.Lookup(key, dst, []string{"o.txt"})
	if err != nil || !hit || string(res.Outputs) != "1" {
		t.Fatalf("Lookup = %+v, %v, %v; want first entry", res, hit, err)
	}
	if got := readTree(t, dst); got["o.txt"] != "first" {
		t.Errorf("restored %q, want first entry's file", got["o.txt"])
	}
	if leftovers := tempDirs(t, a); len(leftovers) != 0 {
		t.Errorf("temporary directories left behind: %v", leftovers)
	}
}

func TestConcurrentStoreAndLookup(t *testing.T) {
	a := OpenActions(t.TempDir())
	key := testKey("concurrent")
	outs := keys(sampleFiles)
	const writers, readers = 8, 8
	var wg sync.WaitGroup
	errs := make(chan error, writers+readers*20)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := t.TempDir()
			writeTree(t, src, sampleFiles)
			if _, err := a.Store(key, src, outs, json.RawMessage(fmt.Sprint(w))); err != nil {
				errs <- fmt.Errorf("Store: %w", err)
			}
		}()
	}
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				dst := t.TempDir()
				res, hit, err := a.Lookup(key, dst, outs)
				switch {
				case err != nil:
					errs <- fmt.Errorf("Lookup: %w", err)
				case hit && !sameMap(readTree(t, dst), sampleFiles):
					errs <- fmt.Errorf("Lookup hit restored %q", readTree(t, dst))
				case !hit && res != nil:
					errs <- fmt.Errorf("miss with result %+v", res)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, hit, err := a.Lookup(key, t.TempDir(), outs); !hit || err != nil {
		t.Fatalf("final Lookup = %v, %v; want hit", hit, err)
	}
	if leftovers := tempDirs(t, a); len(leftovers) != 0 {
		t.Errorf("temporary directories left behind: %v", leftovers)
	}
}

func TestStoreErrors(t *testing.T) {
	a := OpenActions(t.TempDir())
	src := t.TempDir()
	writeTree(t, src, map[string]string{"present.txt": "x", "dir/inner.txt": "y"})
	key := testKey("errors")
	tests := []struct {
		name    string
		key     string
		outputs []string
		json    string
		want    []string // substrings of the error
	}{
		{"missing output", key, []string{"present.txt", "gone/missing.txt"}, "", []string{`"gone/missing.txt"`, "not produced", filepath.Join(src, "gone", "missing.txt")}},
		{"directory output", key, []string{"dir"}, "", []string{`"dir"`, "not a regular file"}},
		{"bad json", key, []string{"present.txt"}, "{", []string{"not valid JSON"}},
		{"bad key", "ABC", []string{"present.txt"}, "", []string{`invalid key "ABC"`}},
		{"key traversal", "../" + key[3:], []string{"present.txt"}, "", []string{"invalid key"}},
		{"duplicate output", key, []string{"present.txt", "present.txt"}, "", []string{"declared twice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Store(tt.key, src, tt.outputs, json.RawMessage(tt.json))
			if err == nil {
				t.Fatal("Store succeeded, want error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := os.Stat(a.entryDir(key)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("failed Store left an entry (stat: %v)", err)
	}
	if leftovers := tempDirs(t, a); len(leftovers) != 0 {
		t.Errorf("temporary directories left behind: %v", leftovers)
	}
}

func TestInvalidOutputPaths(t *testing.T) {
	a := OpenActions(t.TempDir())
	key := testKey("paths")
	for _, p := range []string{"", ".", "..", "/abs/x", "../x", "a/../b", "a/../../b", "a//b", "./a", "a/", "a/."} {
		t.Run(fmt.Sprintf("%q", p), func(t *testing.T) {
			if _, err := a.Store(key, t.TempDir(), []string{p}, nil); err == nil || !strings.Contains(err.Error(), "invalid output path") {
				t.Errorf("Store(%q) error = %v; want invalid output path", p, err)
			}
			if _, _, err := a.Lookup(key, t.TempDir(), []string{p}); err == nil || !strings.Contains(err.Error(), "invalid output path") {
				t.Errorf("Lookup(%q) error = %v; want invalid output path", p, err)
			}
		})
	}
}

func TestLookupRestoreErrorIsNotDamage(t *testing.T) {
	key := testKey("blocked")
	a, _ := storeSample(t, key)
	dst := t.TempDir()
	// A directory where a file should be restored: the entry is fine, the
	// stage dir is not.
	if err := os.MkdirAll(filepath.Join(dst, "out.txt", "sub"), 0o777); err != nil {
		t.Fatal(err)
	}
	_, hit, err := a.Lookup(key, dst, keys(sampleFiles))
	var d *DamagedError
	if hit || err == nil || errors.As(err, &d) || !strings.Contains(err.Error(), "out.txt") {
		t.Fatalf("Lookup = %v, %v; want plain error naming out.txt", hit, err)
	}
	if _, err := os.Stat(a.entryDir(key)); err != nil {
		t.Errorf("entry removed after a restore error: %v", err)
	}
	// No temporary files left in the stage dir.
	for p := range readTree(t, dst) {
		if strings.Contains(p, ".piship-") {
			t.Errorf("temporary file left behind: %s", p)
		}
	}
}
