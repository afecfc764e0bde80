package bundle

import (
	"context"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const ubEntry = "node_modules/ub/dist/bundle/cli.js"

// ubFixture is a package that ships its own bundle, the way Pi 1.6 does:
// its command requires a sibling through createRequire (which esbuild
// cannot follow), the chunks import each other statically and by literal
// import(), one package is loaded by name and one only located, and the
// code finds a theme under its package's dist folder. Its unbundled
// modules (dist/index.js) and a dependency nothing loads are there too.
var ubFixture = map[string]string{
	"package.json": `{"name":"payload","private":true,"dependencies":{"ub":"1.0.0"}}`,
	"node_modules/ub/package.json": `{"name":"ub","version":"1.0.0","type":"module","bin":{"ub":"dist/bundle/cli.js"},
		"main":"./dist/index.js","dependencies":{"loaded-dep":"1","located-only":"1","unused-dep":"1","wasm-pkg":"1"}}`,
	"node_modules/ub/README.md": "# ub\n",
	ubEntry: `#!/usr/bin/env node
import { createRequire } from "node:module";
createRequire(import.meta.url)("./cli-runtime.js");
`,
	"node_modules/ub/dist/bundle/cli-runtime.js": `import { msg } from "./chunks/chunk-A.js";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import dep from "loaded-dep";
const require2 = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const located = () => require2.resolve("located-only");
const wasm = require2.resolve("wasm-pkg/add.wasm");
const theme = JSON.parse(readFileSync(join(here, "..", "modes", "theme", "dark.json"), "utf8"));
import("./chunks/lazy.js").then((m) => console.log(msg, m.x, dep, theme.name, readFileSync(wasm).length, typeof located));
`,
	"node_modules/ub/dist/bundle/chunks/chunk-A.js": `export const msg = "hello";`,
	"node_modules/ub/dist/bundle/chunks/lazy.js":    `export const x = "lazy";`,
	"node_modules/ub/dist/modes/theme/dark.json":    `{"name":"dark"}`,
	"node_modules/ub/dist/index.js":                 `export * from "./main.js";`,
	"node_modules/ub/dist/main.js":                  `import "unused-dep"; export const main = 1;`,
	"node_modules/ub/dist/main.d.ts":                `export declare const main: number;`,
	"node_modules/loaded-dep/package.json":          `{"name":"loaded-dep","version":"1.0.0","main":"index.js","dependencies":{"sub-dep":"1"}}`,
	"node_modules/loaded-dep/index.js":              `module.exports = require("sub-dep") + "-dep";`,
	"node_modules/sub-dep/package.json":             `{"name":"sub-dep","version":"1.0.0","main":"index.js"}`,
	"node_modules/sub-dep/index.js":                 `module.exports = "sub";`,
	"node_modules/located-only/package.json":        `{"name":"located-only","version":"1.0.0","main":"index.js"}`,
	"node_modules/located-only/index.js":            `module.exports = 1;`,
	"node_modules/unused-dep/package.json":          `{"name":"unused-dep","version":"1.0.0","main":"index.js"}`,
	"node_modules/unused-dep/index.js":              `module.exports = 1;`,
	"node_modules/wasm-pkg/package.json":            `{"name":"wasm-pkg","version":"1.0.0","exports":{"./add.wasm":"./add.wasm"}}`,
	"node_modules/wasm-pkg/add.wasm":                addWasm,
	"node_modules/wasm-pkg/index.js":                `module.exports = 1;`,
}

func TestBundleKeepsAnUpstreamBundle(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: the tests need Node.js (see README)")
	}
	root := t.TempDir()
	writeFiles(t, root, ubFixture)
	run := func() string {
		out, err := exec.Command(node, filepath.Join(root, filepath.FromSlash(ubEntry))).CombinedOutput()
		if err != nil {
			t.Fatalf("node: %v\n%s", err, out)
		}
		return string(out)
	}
	want := run()
	if want != "hello lazy sub-dep dark 41 function\n" {
		t.Fatalf("before bundling: %q", want)
	}
	m, err := Bundle(context.Background(), Options{Root: root, Entry: ubEntry})
	if err != nil {
		t.Fatal(err)
	}
	if got := run(); got != want {
		t.Errorf("after bundling: %q, want %q", got, want)
	}
	if m.Upstream == nil || !strings.Contains(m.Upstream.Reason, "cli-runtime.js through createRequire()") {
		t.Fatalf("upstream %+v", m.Upstream)
	}
	if len(m.Chunks) != 0 || len(m.Shims) != 0 || m.Upstream.Modules != 4 {
		t.Errorf("chunks %v shims %v modules %d", m.Chunks, m.Shims, m.Upstream.Modules)
	}
	if want := []string{"node_modules/loaded-dep", "node_modules/sub-dep"}; !reflect.DeepEqual(m.Upstream.Packages, want) {
		t.Errorf("packages %v, want %v", m.Upstream.Packages, want)
	}
	if len(m.Upstream.Located) != 1 || m.Upstream.Located[0].Path != "located-only" {
		t.Errorf("located %v", m.Upstream.Located)
	}
	var kept []string
	for _, k := range m.Kept {
		kept = append(kept, k.Path)
	}
	wantKept := []string{
		"node_modules/loaded-dep/index.js", "node_modules/loaded-dep/package.json",
		"node_modules/sub-dep/index.js", "node_modules/sub-dep/package.json",
		"node_modules/ub/dist/bundle/chunks/chunk-A.js", "node_modules/ub/dist/bundle/chunks/lazy.js",
		"node_modules/ub/dist/bundle/cli-runtime.js", "node_modules/ub/dist/bundle/cli.js",
		"node_modules/ub/dist/modes/theme/dark.json", "node_modules/ub/package.json",
		"node_modules/wasm-pkg/add.wasm", "node_modules/wasm-pkg/package.json",
		"package.json",
	}
	if !reflect.DeepEqual(kept, wantKept) {
		t.Errorf("kept %v\nwant %v", kept, wantKept)
	}
	if got := listTree(t, root); !reflect.DeepEqual(got, wantKept) {
		t.Errorf("tree %v", got)
	}
}

// A module that only passes paths to path.resolve, and an ordinary
// tsc-style entry, are not taken for an upstream bundle.
func TestUpstreamDetection(t *testing.T) {
	sc := scanJS(`const r = createRequire(import.meta.url)("./x.js"); const p = path3.resolve(__dirname, ".."); import "./y.js"; export * from "./z.js";`)
	var callees []string
	for _, c := range sc.calls {
		callees = append(callees, c.Callee+":"+strings.Join(c.Args, ","))
	}
	if want := []string{"createRequire()" + ":./x.js", "path3.resolve:.."}; !reflect.DeepEqual(callees, want) {
		t.Errorf("calls %v, want %v", callees, want)
	}
	if want := []string{"./y.js", "./z.js"}; !reflect.DeepEqual(sc.staticImports, want) {
		t.Errorf("static imports %v", sc.staticImports)
	}
	for callee, want := range map[string]bool{"createRequire()": true, "require2": true, "require": false, "import": false, "require.resolve": false, "path3.resolve": false} {
		if got := invisibleLoader(callee); got != want {
			t.Errorf("invisibleLoader(%q) = %v", callee, got)
		}
	}
	_, m := bundleCopy(t, Options{})
	if m.Upstream != nil {
		t.Errorf("the fixture (modules of its own) was taken for an upstream bundle: %+v", m.Upstream)
	}
}
