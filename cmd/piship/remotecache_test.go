package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The remote cache's flags refuse what cannot work, saying what to give.
func TestRemoteCacheFlagsRefuseBadCombinations(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "cache.pem")
	code, out, stderr := piship(t, nil, "keygen", key)
	if code != 0 {
		t.Fatalf("keygen: %s", stderr)
	}
	pub := ""
	for _, l := range strings.Split(out+stderr, "\n") {
		if p, ok := strings.CutPrefix(l, "public key: "); ok {
			pub = p
		}
	}
	url := "oci://127.0.0.1:1/piship/cache"
	dist := filepath.Join("..", "..", "testdata", "distributions", "hello")
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--remote-cache-mode", "readwrite"}, "USAGE_INVALID: --remote-cache-mode, --remote-cache-key and --remote-cache-trust need a remote cache"},
		{nil, []string{"--remote-cache", url}, "USAGE_INVALID: a remote cache is read only through pinned keys: give --remote-cache-trust PUBKEY"},
		{map[string]string{"PISHIP_REMOTE_CACHE": url}, nil, "give --remote-cache-trust PUBKEY"},
		{nil, []string{"--remote-cache", url, "--remote-cache-mode", "write"}, `USAGE_INVALID: --remote-cache-mode "write": give read`},
		{nil, []string{"--remote-cache", url, "--remote-cache-mode", "readwrite"}, "USAGE_INVALID: --remote-cache-mode readwrite signs every entry it pushes: give --remote-cache-key FILE"},
		{nil, []string{"--remote-cache", url, "--remote-cache-key", key, "--remote-cache-trust", pub}, "USAGE_INVALID: --remote-cache-key signs what readwrite pushes"},
		{nil, []string{"--remote-cache", url, "--remote-cache-trust", "bm90IGEga2V5"}, "CONFIG_INVALID"},
		{nil, []string{"--remote-cache", "https://ghcr.io/acme/cache", "--remote-cache-trust", pub}, "CONFIG_INVALID"},
		{nil, []string{"--remote-cache", url, "--remote-cache-mode", "readwrite", "--remote-cache-key", filepath.Join(dir, "missing.pem")}, "--remote-cache-key"},
	} {
		for _, cmd := range []string{"release", "build"} {
			code, _, stderr := piship(t, c.env, append([]string{cmd, dist, "--out", t.TempDir()}, c.args...)...)
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("%s %v: exit %d, stderr %q; want exit 2 and %q", cmd, c.args, code, stderr, c.want)
			}
		}
	}
	code, _, stderr = piship(t, nil, "run", "demo", "--remote-cache-trust", pub)
	if code != 2 || !strings.Contains(stderr, "need a remote cache") {
		t.Errorf("run without --remote-cache: exit %d, %q", code, stderr)
	}
}
