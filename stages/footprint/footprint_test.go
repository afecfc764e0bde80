package footprint

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/stages/distribution"
)

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// dep is an ESM package with an exports map: an entry with a default
// export that imports an internal module, a CommonJS entry, a JSON file
// the map names, and a licence.
func dep(prefix string) map[string]string {
	return map[string]string{
		prefix + "/package.json":  `{"name": "shared-dep", "version": "1.0.0", "type": "module", "exports": {".": "./index.js", "./cjs": "./lib/c.cjs", "./data.json": "./data.json"}}`,
		prefix + "/index.js":      "import { inner } from \"./internal.js\";\nexport const x = inner + 1;\nexport default \"dflt\";\n",
		prefix + "/internal.js":   "export const inner = 41;\n",
		prefix + "/extra.js":      "export const extra = 1;\n",
		prefix + "/more.js":       "export const more = 2;\n",
		prefix + "/lib/c.cjs":     "module.exports = { c: 3 };\n",
		prefix + "/data.json":     `{"d": 4}`,
		prefix + "/LICENSE":       "MIT\n",
		prefix + "/README.md":     "readme\n",
		prefix + "/docs/guide.md": "guide\n",
		prefix + "/lib/a.js":      "export const a = 1;\n",
		prefix + "/lib/b.js":      "export const b = 1;\n",
		prefix + "/lib/d.js":      "export const d = 1;\n",
		prefix + "/lib/e.js":      "export const e = 1;\n",
	}
}

func lockOf(entries string) *distribution.PackageLock {
	pl := &distribution.PackageLock{Packages: map[string]distribution.LockPackage{"": {}}}
	for _, e := range strings.Split(entries, ",") {
		k, deps, _ := strings.Cut(e, "+")
		lp := distribution.LockPackage{Version: "1.0.0", Integrity: "sha512-" + filepath.Base(k)}
		if deps != "" {
			lp.Dependencies = map[string]string{deps: "1.0.0"}
		}
		pl.Packages[k] = lp
	}
	return pl
}

// Two packages hold the same shared-dep: it moves to pi-packages/.shared
// once, each place keeps package.json, its licence, the JSON its exports
// name and forwarding modules, and Node, importing it where it did, gets
// the same exports (ESM with its default, CommonJS, JSON). A copy with
// dependencies of its own and a single copy are kept, each with its
// reason; the closures record their findings; with sharing off nothing
// moves.
func TestShareIdenticalDependencies(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"pi-packages/a/node_modules/a/index.ts":        "export default function () {}\n",
		"pi-packages/b/node_modules/b/index.js":        "export default function () {}\n",
		"pi-packages/b/node_modules/b/addon.node":      "\x7fELF",
		"pi-packages/a/node_modules/solo/package.json": `{"name": "solo", "version": "1.0.0", "exports": "./i.js"}`,
		"pi-packages/a/node_modules/solo/i.js":         "export {}\n",
	}
	for k, v := range dep("pi-packages/a/node_modules/shared-dep") {
		files[k] = v
	}
	for k, v := range dep("pi-packages/b/node_modules/shared-dep") {
		files[k] = v
	}
	write(t, root, files)
	pkgs := []Package{
		{Name: "a", Dir: "pi-packages/a", Lock: lockOf("node_modules/a,node_modules/shared-dep,node_modules/solo"), Entries: []string{"pi-packages/a/node_modules/a/index.ts"}},
		{Name: "b", Dir: "pi-packages/b", Lock: lockOf("node_modules/b+shared-dep,node_modules/shared-dep"), Entries: []string{"pi-packages/b/node_modules/b/index.js"}},
	}
	// The two package roots are one copy each of a and b; b has a
	// dependency, so its copy (single anyway) counts as single-copy.
	rep, err := Apply(root, pkgs, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Shared) != 1 || rep.Shared[0].Name != "shared-dep" || len(rep.Shared[0].Places) != 2 || rep.Shared[0].Files != 14 {
		t.Fatalf("shared: %+v (kept %v)", rep.Shared, rep.Kept)
	}
	// 28 files before; 14 shared + 2 places x (package.json, LICENSE,
	// data.json, index.js, lib/c.cjs).
	if rep.Shared[0].Saved != 28-14-10 || rep.FilesSaved != rep.Shared[0].Saved {
		t.Errorf("saved %d, want 4", rep.Shared[0].Saved)
	}
	if rep.Kept["single-copy"] != 3 {
		t.Errorf("kept: %v", rep.Kept)
	}
	if got := rep.Closures; len(got) != 2 || strings.Join(got[0].Findings, ",") != "typescript-closure" || strings.Join(got[1].Findings, ",") != "native-addon" {
		t.Errorf("closures: %+v", got)
	}
	shared := filepath.Join(root, filepath.FromSlash(rep.Shared[0].Dir))
	for _, f := range []string{"index.js", "internal.js", "lib/c.cjs", "docs/guide.md"} {
		if _, err := os.Stat(filepath.Join(shared, f)); err != nil {
			t.Errorf("shared dir lacks %s: %v", f, err)
		}
	}
	place := filepath.Join(root, "pi-packages", "b", "node_modules", "shared-dep")
	for _, f := range []string{"internal.js", "README.md", "docs/guide.md"} {
		if _, err := os.Stat(filepath.Join(place, f)); err == nil {
			t.Errorf("the place still holds %s", f)
		}
	}
	fwd, _ := os.ReadFile(filepath.Join(place, "index.js"))
	if !strings.Contains(string(fwd), "export * from") || !strings.Contains(string(fwd), "export { default } from") {
		t.Errorf("index.js forwarder: %s", fwd)
	}
	// Node resolves the dependency where it did and gets the same exports.
	probe := filepath.Join(root, "pi-packages", "b", "node_modules", "b", "probe.mjs")
	write(t, root, map[string]string{"pi-packages/b/node_modules/b/probe.mjs": `import d, { x } from "shared-dep";
import { createRequire } from "node:module";
import data from "shared-dep/data.json" with { type: "json" };
const c = createRequire(import.meta.url)("shared-dep/cjs");
console.log(d, x, c.c, data.d);
`})
	out, err := exec.Command("node", probe).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "dflt 42 3 4" {
		t.Fatalf("node through the forwarders: %v\n%s", err, out)
	}
	if lines := rep.Lines(); !strings.HasPrefix(lines[0], "Pi package closures: 0 of 2 bundled; vendored: a (typescript-closure); b (native-addon)") ||
		!strings.HasPrefix(lines[1], "Pi package dependencies: 1 shared (") {
		t.Errorf("lines: %q", lines)
	}

	// Sharing off: the same tree stays as it is.
	root2 := t.TempDir()
	write(t, root2, files)
	rep2, err := Apply(root2, pkgs, false)
	if err != nil || len(rep2.Shared) != 0 || rep2.Sharing {
		t.Fatalf("sharing off: %+v %v", rep2, err)
	}
	if _, err := os.Stat(filepath.Join(root2, "pi-packages", "b", "node_modules", "shared-dep", "internal.js")); err != nil {
		t.Errorf("sharing off moved files: %v", err)
	}
}
