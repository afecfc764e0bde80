package home

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"piship.dev/piship/stages/home/receipt"
)

// repairEnv installs hello 1.0.0 from its archive, with a file of user
// state in its state directory.
func repairEnv(t *testing.T) (e *env, arc, releaseDir, payloadDir string) {
	t.Helper()
	e = newEnv(t)
	s := spec("1.0.0")
	s.extra = map[string]string{"resources/motd.txt": "hello\n", "resources/deep/a.txt": "a\n"}
	releaseDir = makeRelease(t, e.src, s)
	arc, _ = makeArchive(t, releaseDir)
	res := e.mustInstall(arc)
	writeFile(t, filepath.Join(e.homes.StateDir("hello"), "sessions", "today.json"), `{"mine":true}`+"\n", 0o600)
	return e, arc, releaseDir, res.Payload
}

// snapshot reads every file below dir.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(p)
			fi, _ := d.Info()
			out[p] = string(data) + "|" + fi.Mode().String() + "|" + fi.ModTime().String()
		}
		return nil
	})
	return out
}

// damage changes a file, deletes two, adds one and changes release.json
// and the SBOM: what doctor finds.
func damage(t *testing.T, payloadDir string) {
	t.Helper()
	writeFile(t, filepath.Join(payloadDir, "node_modules", "x", "cli.js"), "process.exit(7)\n", 0o644)
	os.Remove(filepath.Join(payloadDir, "resources", "motd.txt"))
	os.Remove(filepath.Join(payloadDir, "piship.lock"))
	writeFile(t, filepath.Join(payloadDir, "node_modules", "x", "planted.js"), "evil()\n", 0o644)
	dir := filepath.Dir(payloadDir)
	writeFile(t, filepath.Join(dir, "sbom.spdx.json"), "{}\n", 0o644)
}

func TestRepairRestoresChangedAndDeletedFiles(t *testing.T) {
	for _, from := range []string{"archive", "release directory", "payload directory", "kept download"} {
		t.Run(from, func(t *testing.T) {
			e, arc, releaseDir, pay := repairEnv(t)
			state := snapshot(t, e.homes.StateDir("hello"))
			before := snapshot(t, filepath.Dir(pay))
			damage(t, pay)
			rep := e.doctor()
			if !rep.Damaged() || !strings.Contains(rep.Found[0].Detail, "piship repair hello") {
				t.Fatalf("doctor on the damaged release: %+v", rep.Found)
			}
			src := map[string]string{"archive": arc, "release directory": releaseDir, "payload directory": filepath.Join(releaseDir, "payload")}[from]
			if from == "kept download" {
				dl := receipt.DownloadsDir(e.homes.Install, "hello")
				os.MkdirAll(dl, 0o755)
				data, _ := os.ReadFile(arc)
				os.WriteFile(filepath.Join(dl, "hello-1.0.0.tar.gz"), data, 0o644)
			}
			res, err := Repair(context.Background(), e.opts(), "hello", src)
			if from == "payload directory" {
				// A payload holds no release files: the SBOM cannot come
				// from it, and the repair is refused before it writes
				// anything.
				if err == nil || !strings.Contains(err.Error(), "repair from the release's archive") {
					t.Fatalf("repair from a payload with a damaged SBOM: %v", err)
				}
				writeFile(t, filepath.Join(filepath.Dir(pay), "sbom.spdx.json"), sbomJSON, 0o644)
				res, err = Repair(context.Background(), e.opts(), "hello", src)
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"payload/node_modules/x/cli.js", "payload/piship.lock", "payload/resources/motd.txt"}
			if from != "payload directory" {
				want = append(want, "sbom.spdx.json")
			}
			slices.Sort(res.Restored)
			if !slices.Equal(res.Restored, want) || !slices.Equal(res.Removed, []string{"payload/node_modules/x/planted.js"}) {
				t.Fatalf("restored %v removed %v", res.Restored, res.Removed)
			}
			if rep := e.doctor(); rep.Damaged() {
				t.Fatalf("doctor after the repair: %+v", rep.Found)
			}
			after := snapshot(t, filepath.Dir(pay))
			for p, v := range before {
				if a := after[p]; strings.SplitN(a, "|", 2)[0] != strings.SplitN(v, "|", 2)[0] {
					t.Errorf("%s after the repair differs from the installed file", p)
				}
			}
			if got := snapshot(t, e.homes.StateDir("hello")); !maps.Equal(got, state) {
				t.Fatalf("the user's state changed:\n%v\n%v", state, got)
			}
			if res, err := Repair(context.Background(), e.opts(), "hello", src); err != nil || len(res.Restored)+len(res.Removed) != 0 {
				t.Fatalf("a second repair: %+v %v", res, err)
			}
		})
	}
}

func TestRepairRefusesWhatIsNotTheRelease(t *testing.T) {
	e, _, _, pay := repairEnv(t)
	other := makeRelease(t, filepath.Join(e.root, "other"), spec("1.1.0"))
	damage(t, pay)
	before := snapshot(t, filepath.Dir(pay))
	_, err := Repair(context.Background(), e.opts(), "hello", other)
	wantCode(t, err, receipt.CodeIntegrity)
	if !maps.Equal(snapshot(t, filepath.Dir(pay)), before) {
		t.Fatal("a refused repair changed the installation")
	}
	_, err = Repair(context.Background(), e.opts(), "hello", "")
	if receipt.CodeOf(err) != receipt.CodeUnavailable || !strings.Contains(err.Error(), "--from") {
		t.Fatalf("no kept archive: %v", err)
	}
}

// A live lease: restoring missing files goes ahead; replacing a file the
// run may have loaded is refused before anything is written.
func TestRepairWhileRunning(t *testing.T) {
	e, arc, _, pay := repairEnv(t)
	_, remove, err := receipt.WriteLease(e.homes.Install, "hello", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	os.Remove(filepath.Join(pay, "resources", "motd.txt"))
	res, err := Repair(context.Background(), e.opts(), "hello", arc)
	if err != nil || !slices.Equal(res.Restored, []string{"payload/resources/motd.txt"}) {
		t.Fatalf("missing only, while running: %+v %v", res, err)
	}
	writeFile(t, filepath.Join(pay, "node_modules", "x", "cli.js"), "changed\n", 0o644)
	os.Remove(filepath.Join(pay, "resources", "motd.txt"))
	_, err = Repair(context.Background(), e.opts(), "hello", arc)
	wantCode(t, err, receipt.CodeUnavailable)
	if !strings.Contains(err.Error(), "is running") || !strings.Contains(err.Error(), "node_modules/x/cli.js") {
		t.Fatal(err)
	}
	if _, serr := os.Stat(filepath.Join(pay, "resources", "motd.txt")); serr == nil {
		t.Fatal("a refused repair restored a file")
	}
}

// A changed inventory is restored from the source (the receipt's digest
// says which is right), and what it lists with it.
func TestRepairRestoresTheInventory(t *testing.T) {
	e, arc, _, pay := repairEnv(t)
	inv := filepath.Join(pay, "metadata", "inventory.json")
	writeFile(t, inv, `{"x":"`+strings.Repeat("0", 64)+`"}`+"\n", 0o644)
	res, err := Repair(context.Background(), e.opts(), "hello", arc)
	if err != nil || !slices.Contains(res.Restored, "payload/metadata/inventory.json") {
		t.Fatalf("%+v %v", res, err)
	}
	if rep := e.doctor(); rep.Damaged() {
		t.Fatalf("doctor after: %+v", rep.Found)
	}
}
