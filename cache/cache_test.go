package cache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHome(t *testing.T) {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	root := t.TempDir()
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{
			name: "PISHIP_CACHE_HOME wins",
			env: map[string]string{
				"PISHIP_CACHE_HOME": filepath.Join(root, "pc"),
				"XDG_CACHE_HOME":    filepath.Join(root, "xdg"),
				"HOME":              filepath.Join(root, "home"),
			},
			want: filepath.Join(root, "pc"),
		},
		{
			name: "relative PISHIP_CACHE_HOME made absolute",
			env:  map[string]string{"PISHIP_CACHE_HOME": "rel/cache"},
			want: abs("rel/cache"),
		},
		{
			name: "XDG_CACHE_HOME next",
			env: map[string]string{
				"XDG_CACHE_HOME": filepath.Join(root, "xdg"),
				"HOME":           filepath.Join(root, "home"),
			},
			want: filepath.Join(root, "xdg", "piship"),
		},
		{
			name: "relative XDG_CACHE_HOME ignored",
			env: map[string]string{
				"XDG_CACHE_HOME": "xdg",
				"HOME":           filepath.Join(root, "home"),
			},
			want: filepath.Join(root, "home", ".cache", "piship"),
		},
		{
			name: "HOME last",
			env:  map[string]string{"HOME": filepath.Join(root, "home")},
			want: filepath.Join(root, "home", ".cache", "piship"),
		},
		{
			name:    "nothing set",
			env:     map[string]string{},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Home(func(k string) string { return tt.env[k] })
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "PISHIP_CACHE_HOME") {
					t.Fatalf("Home = %q, %v; want error mentioning PISHIP_CACHE_HOME", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Home = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestKey(t *testing.T) {
	base := func() KeyInput {
		return KeyInput{
			Kind:        "exec",
			KindVersion: "1",
			Config:      []byte(`{"cmd":"make"}`),
			Inputs: map[string]string{
				"src/a.c": strings.Repeat("a", 64),
				"src/b.c": strings.Repeat("b", 64),
			},
			ToolDigest: strings.Repeat("c", 64),
		}
	}
	baseKey := base().Key()
	if !IsDigest(baseKey) {
		t.Fatalf("Key() = %q, want 64 lowercase hex digits", baseKey)
	}
	if again := base().Key(); again != baseKey {
		t.Fatalf("Key() not deterministic: %s then %s", baseKey, again)
	}

	tests := []struct {
		name   string
		mutate func(*KeyInput)
	}{
		{"kind", func(k *KeyInput) { k.Kind = "exec2" }},
		{"kind version", func(k *KeyInput) { k.KindVersion = "2" }},
		{"config", func(k *KeyInput) { k.Config = []byte(`{"cmd":"make all"}`) }},
		{"config empty", func(k *KeyInput) { k.Config = nil }},
		{"tool digest", func(k *KeyInput) { k.ToolDigest = strings.Repeat("d", 64) }},
		{"input digest", func(k *KeyInput) { k.Inputs["src/a.c"] = strings.Repeat("e", 64) }},
		{"input added", func(k *KeyInput) { k.Inputs["src/c.c"] = strings.Repeat("f", 64) }},
		{"input removed", func(k *KeyInput) { delete(k.Inputs, "src/b.c") }},
		{"input renamed", func(k *KeyInput) {
			k.Inputs["src/z.c"] = k.Inputs["src/a.c"]
			delete(k.Inputs, "src/a.c")
		}},
		{"no inputs", func(k *KeyInput) { k.Inputs = nil }},
		// Field boundaries must not be ambiguous.
		{"kind/version boundary", func(k *KeyInput) { k.Kind, k.KindVersion = "exec1", "" }},
		{"path/digest boundary", func(k *KeyInput) {
			k.Inputs = map[string]string{
				"src/a.c" + strings.Repeat("a", 64): "",
				"src/b.c":                           strings.Repeat("b", 64),
			}
		}},
	}
	seen := map[string]string{baseKey: "base"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := base()
			tt.mutate(&k)
			got := k.Key()
			if prev, ok := seen[got]; ok {
				t.Fatalf("key after changing %s equals key of %s: %s", tt.name, prev, got)
			}
			seen[got] = tt.name
		})
	}
}

func TestKeyMapOrder(t *testing.T) {
	var paths []string
	for i := range 200 {
		paths = append(paths, filepath.ToSlash(filepath.Join("dir", string(rune('a'+i%26)), strings.Repeat("x", i%7)+string(rune('A'+i%26))+".txt")))
	}
	fwd := map[string]string{}
	for i, p := range paths {
		fwd[p] = strings.Repeat(string("0123456789abcdef"[i%16]), 64)
	}
	rev := map[string]string{}
	for i := len(paths) - 1; i >= 0; i-- {
		rev[paths[i]] = fwd[paths[i]]
	}
	k1 := KeyInput{Kind: "k", Inputs: fwd}.Key()
	for range 20 {
		if k2 := (KeyInput{Kind: "k", Inputs: rev}).Key(); k2 != k1 {
			t.Fatalf("key depends on map order: %s vs %s", k1, k2)
		}
	}
}

func TestHashFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := HashFile(p)
	const want = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
	if err != nil || got != want {
		t.Fatalf("HashFile = %q, %v; want %q", got, err, want)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := HashFile(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("HashFile(missing) error = %v; want one naming %s", err, missing)
	}
}

func TestToolDigest(t *testing.T) {
	d := ToolDigest()
	if !IsDigest(d) {
		t.Fatalf("ToolDigest() = %q, want sha256 hex", d)
	}
	if d2 := ToolDigest(); d2 != d {
		t.Fatalf("ToolDigest not memoised: %s then %s", d, d2)
	}
	if fb := computeToolDigest(); !IsDigest(fb) {
		t.Fatalf("computeToolDigest() = %q", fb)
	}
}

// The tool digest is remembered by the executable's identity: a second
// computation reads the stamp; a stamp for another identity (a rewritten
// binary) or another path is ignored and the executable hashed again.
func TestToolDigestStamp(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := HashFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	t.Setenv("PISHIP_CACHE_HOME", home)
	if got := computeToolDigest(); got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
	stamp := filepath.Join(home, toolStampName)
	id, ok := fileIdentity(exe)
	if !ok {
		if _, err := os.Stat(stamp); err == nil {
			t.Fatal("a stamp was written on a platform without file identities")
		}
		return // this platform always hashes; nothing more to check
	}
	var st toolStamp
	data, err := os.ReadFile(stamp)
	if err != nil || json.Unmarshal(data, &st) != nil || st.Digest != want || st.Identity != id || st.Path != exe {
		t.Fatalf("stamp %s: %v", data, err)
	}
	// The stamp is what the next run uses (shown by planting a digest).
	planted := strings.Repeat("ab", 32)
	writeToolStamp(exe, id, planted)
	if got := computeToolDigest(); got != planted {
		t.Fatalf("the stamp was not used: %s", got)
	}
	// Another identity (the binary was rewritten) or another path: hashed again.
	for _, bad := range []toolStamp{
		{Schema: toolStampSchema, Path: exe, Identity: id + "1", Digest: planted},
		{Schema: toolStampSchema, Path: exe + ".old", Identity: id, Digest: planted},
		{Schema: "other", Path: exe, Identity: id, Digest: planted},
	} {
		b, _ := json.Marshal(bad)
		os.WriteFile(stamp, b, 0o644)
		if got := computeToolDigest(); got != want {
			t.Fatalf("stamp %+v trusted: %s", bad, got)
		}
	}
}
