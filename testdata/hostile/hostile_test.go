package hostile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/home/launch"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/verify"
)

// -out DIR also writes the corpus there, for a human to look at:
// go test ./testdata/hostile -run TestCorpus -out DIR
var out = flag.String("out", "", "also write every case's archive into this directory")

type world struct {
	t       *testing.T
	root    string
	homes   receipt.Homes
	outside string
}

func newWorld(t *testing.T) *world {
	root := t.TempDir()
	w := &world{t: t, root: root, outside: filepath.Join(root, "outside"),
		homes: receipt.Homes{Install: filepath.Join(root, "install"), Bin: filepath.Join(root, "bin"), State: filepath.Join(root, "state")}}
	if err := write(filepath.Join(w.outside, "secret"), "secret\n", 0o600); err != nil {
		t.Fatal(err)
	}
	// verify-release extracts into a temporary directory: keep it inside
	// the world, so the snapshot sees everything either consumer writes.
	if err := os.Mkdir(filepath.Join(root, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", filepath.Join(root, "tmp"))
	return w
}

func (w *world) install(archive string) (*home.InstallResult, error) {
	return home.Install(context.Background(), home.InstallOptions{
		Options: home.Options{Homes: w.homes, Launcher: "/opt/piship/bin/piship", GateWait: 2 * time.Second, LockWait: 2 * time.Second},
		Source:  archive, FreeSpace: func(string) (int64, error) { return 1 << 40, nil },
	})
}

func (w *world) archive(version string) string {
	w.t.Helper()
	src := filepath.Join(w.root, "src-"+version)
	dir, err := Release(src, version)
	if err != nil {
		w.t.Fatal(err)
	}
	path, err := Archive(dir, src)
	if err != nil {
		w.t.Fatal(err)
	}
	return path
}

// launch runs the active version and returns what it printed.
func (w *world) launch() string {
	w.t.Helper()
	var buf bytes.Buffer
	code, _, err := launch.Run(context.Background(), w.homes.Install, ID, []string{"hi"}, launch.Options{Stdout: &buf, Stderr: &buf})
	if err != nil || code != 0 {
		w.t.Fatalf("launch: exit %d, %v\n%s", code, err, buf.String())
	}
	return strings.TrimSpace(buf.String())
}

// snapshot maps every path below root (but the case's own archive
// directory) to its type and content digest.
func snapshot(t *testing.T, root string, skip string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skip {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(data)
			m[rel] = "file " + hex.EncodeToString(s[:])
		default:
			m[rel] = d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBaseIsValid: the release every case starts from installs, launches
// and verifies, so each case fails by the one rule it breaks.
func TestBaseIsValid(t *testing.T) {
	needNode(t)
	w := newWorld(t)
	arc := w.archive(Version)
	if _, err := w.install(arc); err != nil {
		t.Fatalf("install of the valid base: %v", err)
	}
	if got := w.launch(); got != `{"version":"1.0.1","args":["hi"]}` {
		t.Fatalf("launch printed %s", got)
	}
	rep, err := verify.Release(context.Background(), arc, verify.Options{})
	if err != nil || !rep.OK {
		data, _ := json.MarshalIndent(rep, "", "  ")
		t.Fatalf("verify-release of the valid base: %v\n%s", err, data)
	}
}

// TestCorpus runs every case through install (a home where Installed is
// active, restored fresh for each case) and verify-release: both must
// refuse it with the case's code, naming its rule; nothing may change
// outside the install home's apps/<id>/.retained-* (where install sets
// aside what it extracted), verify-release must leave nothing behind, and
// the installed version must stay active, with the same receipt, and
// launch.
func TestCorpus(t *testing.T) {
	needNode(t)
	w := newWorld(t)
	if _, err := w.install(w.archive(Installed)); err != nil {
		t.Fatal(err)
	}
	// The installed home, kept to restore before each case (at the same
	// paths: the receipt records them).
	saved := filepath.Join(t.TempDir(), "saved")
	var homeDirs []string
	for _, d := range []string{"install", "bin", "state"} {
		if _, err := os.Stat(filepath.Join(w.root, d)); err != nil {
			continue
		}
		homeDirs = append(homeDirs, d)
		if err := payload.CopyPath(filepath.Join(w.root, d), filepath.Join(saved, d)); err != nil {
			t.Fatal(err)
		}
	}
	base, err := Release(t.TempDir(), Version)
	if err != nil {
		t.Fatal(err)
	}
	// A stand-in for node that says what it would run: the launch path is
	// the real one, without a node start per case.
	fakeNode := filepath.Join(t.TempDir(), "node")
	if err := write(fakeNode, "#!/bin/sh\nprintf '%s\\n' \"$@\"\n", 0o755); err != nil {
		t.Fatal(err)
	}
	wantLaunch := filepath.Join(receipt.VersionDir(w.homes.Install, ID, Installed), "payload", "node_modules", "x", "cli.js") + "\nhi"

	if *out != "" {
		if err := WriteAll(*out); err != nil {
			t.Fatal(err)
		}
	}
	names := map[string]bool{}
	for _, c := range Cases {
		if names[c.Name] || c.Rule == "" || c.Code == "" || c.Description == "" || c.Make == nil {
			t.Fatalf("case %q: duplicate name, or no rule, code, description or writer", c.Name)
		}
		names[c.Name] = true
		for _, format := range c.Formats() {
			t.Run(string(format)+"/"+c.Name, func(t *testing.T) {
				for _, d := range append(homeDirs, "case") {
					if err := os.RemoveAll(filepath.Join(w.root, d)); err != nil {
						t.Fatal(err)
					}
				}
				for _, d := range homeDirs {
					if err := payload.CopyPath(filepath.Join(saved, d), filepath.Join(w.root, d)); err != nil {
						t.Fatal(err)
					}
				}
				g := &Gen{Dir: filepath.Join(w.root, "case"), Outside: w.outside, Base: base, Format: format}
				arc, err := c.Make(g)
				if err != nil {
					t.Fatalf("writing the case: %v", err)
				}
				before := snapshot(t, w.root, g.Dir)
				receiptBefore, _ := os.ReadFile(receipt.ReceiptPath(w.homes.Install, ID))

				_, err = w.install(arc)
				if err == nil {
					t.Errorf("install accepted %s (%s)", c.Name, c.Description)
				} else {
					if code := receipt.CodeOf(err); code != c.Code {
						t.Errorf("install: code %q, want %s: %v", code, c.Code, err)
					}
					if !strings.Contains(err.Error(), "("+c.Rule+")") {
						t.Errorf("install does not name the rule %s: %v", c.Rule, err)
					}
				}

				rep, err := verify.Release(context.Background(), arc, verify.Options{})
				switch {
				case err != nil:
					t.Errorf("verify-release: %v", err)
				case rep.OK:
					t.Errorf("verify-release accepted %s (%s)", c.Name, c.Description)
				default:
					if code := receipt.CodeOf(rep.Err()); code != c.Code {
						t.Errorf("verify-release: code %q, want %s: %v", code, c.Code, rep.Err())
					}
					named := false
					for _, ch := range rep.Checks {
						named = named || !ch.OK && (ch.Name == c.Rule || strings.Contains(ch.Detail, "("+c.Rule+")"))
					}
					if !named {
						data, _ := json.MarshalIndent(rep.Checks, "", "  ")
						t.Errorf("verify-release does not fail the rule %s:\n%s", c.Rule, data)
					}
				}

				after := snapshot(t, w.root, g.Dir)
				aside := filepath.Join("install", "apps", ID, receipt.RetainedPrefix)
				for p, v := range after {
					if before[p] != v && !strings.HasPrefix(p, aside) {
						t.Errorf("%s was written (%s)", p, v)
					}
				}
				for p := range before {
					if _, ok := after[p]; !ok {
						t.Errorf("%s was removed", p)
					}
				}
				if b, _ := os.ReadFile(receipt.ReceiptPath(w.homes.Install, ID)); !bytes.Equal(b, receiptBefore) {
					t.Errorf("the receipt changed:\n%s", b)
				}
				var buf bytes.Buffer
				code, _, err := launch.Run(context.Background(), w.homes.Install, ID, []string{"hi"}, launch.Options{Node: fakeNode, Stdout: &buf, Stderr: &buf})
				if err != nil || code != 0 || strings.TrimSpace(buf.String()) != wantLaunch {
					t.Errorf("launching the installed version: exit %d, %v, output %q, want %q", code, err, buf.String(), wantLaunch)
				}
			})
		}
	}
}

func needNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not on PATH: the tests need Node.js (see README)")
	}
}

// TestManual: the package comment lists every case with its rule, and
// nothing else.
func TestManual(t *testing.T) {
	raw, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	_, rest, _ := strings.Cut(string(raw), "what the archive does\n")
	for _, line := range strings.Split(rest, "\n") {
		f := strings.Fields(strings.TrimPrefix(line, "//"))
		if len(f) < 3 {
			break
		}
		listed[f[0]] = f[1]
	}
	for _, c := range Cases {
		if listed[c.Name] != c.Rule {
			t.Errorf("doc.go lists %s with rule %q, the case says %q", c.Name, listed[c.Name], c.Rule)
		}
		delete(listed, c.Name)
	}
	for n := range listed {
		t.Errorf("doc.go lists %s, which is not a case", n)
	}
}
