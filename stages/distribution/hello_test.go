package distribution

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The committed tarballs are what the lock pins, and hello-cli's version is
// the distribution's (hello --version prints it).
func TestHelloTarballsMatchLock(t *testing.T) {
	d := mustLoad(t, helloDir)
	pl := loadPackageLock(t, d)
	vendored := 0
	for key, p := range pl.Packages {
		rel, ok := strings.CutPrefix(p.Resolved, "file:")
		if !ok {
			continue
		}
		vendored++
		b, err := os.ReadFile(filepath.Join(d.RuntimeDir(), filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha512.Sum512(b)
		if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != p.Integrity {
			t.Errorf("%s: %s is %s, the lock pins %s: run packages-src/pack.sh", key, rel, got, p.Integrity)
		}
		if key == "node_modules/hello-cli" {
			var pkg struct{ Version string }
			if err := json.Unmarshal(tarFile(t, b, "package/package.json"), &pkg); err != nil {
				t.Fatal(err)
			}
			if pkg.Version != d.Version {
				t.Errorf("hello-cli is %s but the distribution is %s: keep them equal, hello --version prints hello-cli's", pkg.Version, d.Version)
			}
		}
	}
	if vendored != 4 {
		t.Errorf("%d vendored packages, want 4", vendored)
	}
}

func tarFile(t *testing.T, tgz []byte, name string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in the tarball: %v", name, err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

// npmEnv is an environment in which npm cannot reach a network or a warm
// cache.
func npmEnv(t *testing.T) []string {
	cache := t.TempDir()
	return append(os.Environ(),
		"npm_config_cache="+cache, "npm_config_offline=true", "npm_config_audit=false",
		"npm_config_fund=false", "npm_config_update_notifier=false")
}

// TestHelloOffline installs hello's runtime with npm, offline and with an
// empty cache, runs it, and checks the tarballs are reproducible from
// packages-src. It needs node and npm.
func TestHelloOffline(t *testing.T) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: the build needs node and npm on PATH", tool)
		}
	}
	d := mustLoad(t, helloDir)
	t.Run("npm ci", func(t *testing.T) {
		t.Parallel()
		rt := filepath.Join(copyTree(t, helloDir), "runtime")
		run(t, rt, npmEnv(t), "npm", "ci", "--offline", "--omit=dev", "--ignore-scripts", "--prefer-offline")
		entry := filepath.Join(rt, filepath.FromSlash(d.Runtime.Entry))
		if got := strings.TrimSpace(run(t, rt, nil, "node", entry, "--version")); got != d.Version {
			t.Errorf("hello --version = %q, want %q", got, d.Version)
		}
		help := run(t, rt, nil, "node", entry, "--help")
		for _, want := range []string{"| hello 1.0.0 |", "read from greeting.txt", "Usage: hello", "  --version  print the version"} {
			if !strings.Contains(help, want) {
				t.Errorf("hello --help lacks %q:\n%s", want, help)
			}
		}
	})
	srcs, _ := filepath.Glob(filepath.Join(helloDir, "packages-src", "*", "package.json"))
	if len(srcs) != 4 {
		t.Fatalf("packages-src holds %d packages", len(srcs))
	}
	for _, pj := range srcs {
		pkgDir := filepath.Dir(pj)
		t.Run("pack "+filepath.Base(pkgDir), func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			run(t, pkgDir, npmEnv(t), "npm", "pack", "--silent", "--ignore-scripts", "--pack-destination", out)
			made, _ := filepath.Glob(filepath.Join(out, "*.tgz"))
			if len(made) != 1 {
				t.Fatalf("npm pack made %v", made)
			}
			committed := filepath.Join(d.RuntimeDir(), "vendor", filepath.Base(made[0]))
			a, err := os.ReadFile(made[0])
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(committed)
			if err != nil {
				t.Fatalf("%v: run packages-src/pack.sh", err)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("%s differs from what npm pack makes of %s: run packages-src/pack.sh", committed, pkgDir)
			}
		})
	}
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
