package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// addWasm is a WebAssembly module exporting add(i32, i32) i32.
var addWasm = string([]byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x07, 0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f,
	0x03, 0x02, 0x01, 0x00,
	0x07, 0x07, 0x01, 0x03, 0x61, 0x64, 0x64, 0x00, 0x00,
	0x0a, 0x09, 0x01, 0x07, 0x00, 0x20, 0x00, 0x20, 0x01, 0x6a, 0x0b,
})

const entry = "node_modules/app/bin/cli.js"

// fixture is a small npm-installed tree: an ESM command package importing a
// CommonJS and an ES module dependency, a WebAssembly package and a native
// addon package loaded by path, an asset read through import.meta.url, an
// optional import nothing installs, a package required by name at run time
// and a module loaded through a computed import().
var fixture = map[string]string{
	"package.json":                    `{"name":"payload","private":true,"dependencies":{"app":"1.0.0"}}`,
	"package-lock.json":               `{"lockfileVersion":3}`,
	"node_modules/.package-lock.json": `{"lockfileVersion":3}`,
	"node_modules/app/package.json": `{"name":"app","version":"1.2.3","type":"module",
		"bin":{"app":"bin/cli.js"},"main":"lib/index.js",
		"exports":{".":"./lib/index.js","./package.json":"./package.json"},
		"dependencies":{"cjsdep":"1","esmdep":"1","wasmpkg":"1","nativepkg":"1","runtime-cjs":"1"}}`,
	"node_modules/app/README.md":     "# app\n",
	"node_modules/app/docs/guide.md": "guide\n",
	"node_modules/app/bin/cli.js": `#!/usr/bin/env node
import { run } from "../lib/index.js";
await run(process.argv.slice(2));
`,
	"node_modules/app/lib/index.js": `import { createRequire } from "node:module";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import cjs from "cjsdep";
import esmDefault, { value } from "esmdep";
import wasm from "wasmpkg";
import native from "nativepkg";

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));

function packageRoot() {
	let d = here;
	while (!existsSync(join(d, "package.json"))) d = dirname(d);
	return d;
}
const rel = (p) => relative(packageRoot(), p).split("\\").join("/");

export const name = "app";
export default function hello() { return "hello from app"; }

export async function run(args) {
	const out = [];
	out.push("args " + args.join(","));
	out.push("cjs " + cjs.greet("x") + " " + cjs.dir + " " + cjs.optional);
	out.push("esm " + value + " " + esmDefault());
	out.push("wasm " + wasm.add(2, 3));
	out.push("native " + JSON.stringify(native));
	out.push("asset " + readFileSync(new URL("../assets/banner.txt", import.meta.url), "utf8").trim());
	out.push("script " + readFileSync(join(packageRoot(), "assets", "client.js"), "utf8").length);
	out.push("version " + JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")).version);
	out.push("runtime " + require("runtime-cjs").name);
	out.push("resolve " + rel(require.resolve("esmdep")));
	try { await import("optional-missing"); out.push("optional present"); } catch (e) { out.push("optional " + e.code); }
	try { await import("./missing-local.js"); out.push("local present"); } catch (e) { out.push("local " + e.code); }
	const load = (s) => import(s);
	out.push("extra " + (await load("./extra.js")).extra);
	out.push("meta " + rel(fileURLToPath(import.meta.url)));
	out.push("dirname " + (import.meta.dirname === undefined ? "none" : rel(import.meta.dirname)));
	console.log(out.join("\n"));
}
`,
	"node_modules/app/lib/extra.js":      "export const extra = \"extra-ok\";\n",
	"node_modules/app/lib/unused.js":     "export const unused = 1;\n",
	"node_modules/app/assets/banner.txt": "BANNER\n",
	"node_modules/app/assets/client.js":  "document.title = \"client\";\n",
	"node_modules/cjsdep/package.json":   `{"name":"cjsdep","version":"1.0.0","main":"index.js"}`,
	"node_modules/cjsdep/README.md":      "cjsdep\n",
	"node_modules/cjsdep/index.js": `const path = require("path");
let optional = "absent";
try { require("also-missing"); optional = "present"; } catch (e) { optional = e.code; }
try { require("./missing-local"); optional += "+local"; } catch (e) { optional += "+" + e.code; }
module.exports = { greet: (n) => "hi " + n, dir: path.basename(__dirname), optional };
`,
	"node_modules/esmdep/package.json":  `{"name":"esmdep","version":"1.0.0","type":"module","exports":{".":{"import":"./index.js","default":"./index.js"}}}`,
	"node_modules/esmdep/index.js":      "export const value = 42;\nexport default function () { return \"esm-default\"; }\n",
	"node_modules/wasmpkg/package.json": `{"name":"wasmpkg","version":"1.0.0","main":"index.js","dependencies":{"helper":"1"}}`,
	"node_modules/wasmpkg/LICENSE":      "MIT\n",
	"node_modules/wasmpkg/index.js": `const fs = require("fs");
const path = require("path");
const helper = require("helper");
const inst = new WebAssembly.Instance(new WebAssembly.Module(fs.readFileSync(path.join(__dirname, "mod.wasm"))));
module.exports = { add: (a, b) => helper.twice(inst.exports.add(a, b)) / 2 };
`,
	"node_modules/wasmpkg/mod.wasm":       addWasm,
	"node_modules/helper/package.json":    `{"name":"helper","version":"1.0.0"}`,
	"node_modules/helper/index.js":        "exports.twice = (x) => x * 2;\n",
	"node_modules/nativepkg/package.json": `{"name":"nativepkg","version":"1.0.0"}`,
	"node_modules/nativepkg/index.js": `let native = false, code = "";
try { require("./build/addon.node"); native = true; } catch (e) { code = e.code; }
module.exports = { native, code };
`,
	"node_modules/nativepkg/build/addon.node":                  "not a real addon",
	"node_modules/nativepkg/prebuilds/linux-x64/addon.node":    "linux x64",
	"node_modules/nativepkg/prebuilds/darwin-arm64/addon.node": "darwin arm64",
	"node_modules/nativepkg/prebuilds/win32-x64/addon.node":    "win32 x64",
	"node_modules/nativepkg/src/addon.cc":                      "// source\n",
	"node_modules/runtime-cjs/package.json":                    `{"name":"runtime-cjs","version":"1.0.0"}`,
	"node_modules/runtime-cjs/index.js":                        "module.exports = { name: \"runtime-cjs\" };\n",
	"node_modules/unused-native/package.json":                  `{"name":"unused-native","version":"1.0.0"}`,
	"node_modules/unused-native/index.js":                      "module.exports = require(\"./a.node\");\n",
	"node_modules/unused-native/a.node":                        "binary",
	"node_modules/unused-pkg/package.json":                     `{"name":"unused-pkg","version":"1.0.0"}`,
	"node_modules/unused-pkg/index.js":                         "module.exports = 1;\n",
}

// writeFiles writes files (slash-separated paths under root) with mode 0644.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFixture(t *testing.T, root string) {
	t.Helper()
	for name, content := range fixture {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if name == entry {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(root, "node_modules", ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../app/bin/cli.js", filepath.Join(bin, "app")); err != nil {
		t.Skipf("symlinks not available: %v", err)
	}
	if err := os.Symlink("../unused-pkg/index.js", filepath.Join(bin, "unused")); err != nil {
		t.Fatal(err)
	}
}

// listTree returns every file and symlink under root, slash-separated.
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func runNode(t *testing.T, root string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: the tests need Node.js (see README)")
	}
	cmd := exec.Command(node, filepath.Join(root, filepath.FromSlash(entry)), "a", "b")
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", entry, err, stderr.String())
	}
	return string(out)
}

// importProbe imports the command package and a dependency by name, as
// code loaded at run time (an extension) would.
const importProbe = `import hello, { name, run } from "app";
import * as esm from "esmdep";
import { createRequire } from "node:module";
const require = createRequire(process.cwd() + "/");
console.log(hello(), name, typeof run, esm.value, esm.default(), require.resolve("esmdep").slice(process.cwd().length));`

func runNodeEval(t *testing.T, root, code string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: the tests need Node.js (see README)")
	}
	cmd := exec.Command(node, "--input-type=module", "-e", code)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node -e: %v\n%s", err, stderr.String())
	}
	return string(out)
}

func bundleCopy(t *testing.T, o Options) (string, *Manifest) {
	t.Helper()
	root := t.TempDir()
	writeFixture(t, root)
	o.Root, o.Entry = root, entry
	var log bytes.Buffer
	o.Log = &log
	m, err := Bundle(context.Background(), o)
	if err != nil {
		t.Fatalf("Bundle: %v\n%s", err, log.String())
	}
	return root, m
}

func reasons(list []Kept) map[string]string {
	m := map[string]string{}
	for _, k := range list {
		m[k.Path] = k.Reason
	}
	return m
}

func TestBundleFixture(t *testing.T) {
	plain := t.TempDir()
	writeFixture(t, plain)
	want, wantProbe := "", ""
	if _, err := exec.LookPath("node"); err == nil {
		wantProbe = runNodeEval(t, plain, importProbe)
		if wantProbe != "hello from app app function 42 esm-default /node_modules/esmdep/index.js\n" {
			t.Fatalf("unbundled import probe: %q", wantProbe)
		}
		want = runNode(t, plain)
		for _, line := range []string{"wasm 5", "asset BANNER", "version 1.2.3", "optional ERR_MODULE_NOT_FOUND",
			"extra extra-ok", "cjs hi x cjsdep MODULE_NOT_FOUND+MODULE_NOT_FOUND", "local ERR_MODULE_NOT_FOUND", "meta lib/index.js", "resolve ../esmdep/index.js"} {
			if !strings.Contains(want, line+"\n") {
				t.Fatalf("unbundled fixture output lacks %q:\n%s", line, want)
			}
		}
	}

	root := t.TempDir()
	writeFixture(t, root)
	// A file hardlinked into a "cache" outside the root must not change.
	cacheFile := filepath.Join(t.TempDir(), "cached-cli.js")
	if err := os.Link(filepath.Join(root, filepath.FromSlash(entry)), cacheFile); err != nil {
		t.Fatal(err)
	}
	cacheFile2 := filepath.Join(t.TempDir(), "cached-cjsdep.js")
	if err := os.Link(filepath.Join(root, "node_modules/cjsdep/index.js"), cacheFile2); err != nil {
		t.Fatal(err)
	}
	before := statOf(t, cacheFile)
	before2 := statOf(t, cacheFile2)
	time.Sleep(10 * time.Millisecond) // a write would move the change time

	var log bytes.Buffer
	m, err := Bundle(context.Background(), Options{Root: root, Entry: entry, Log: &log})
	if err != nil {
		t.Fatalf("Bundle: %v\n%s", err, log.String())
	}
	t.Log(log.String())

	if m.Schema != Schema || m.Entry != entry || m.Esbuild == "" {
		t.Fatalf("manifest header: %+v", m)
	}
	// Chunks: all beside the entry, sorted, sizes right.
	if len(m.Chunks) < 2 {
		t.Fatalf("chunks: %+v", m.Chunks)
	}
	for i, c := range m.Chunks {
		if !strings.HasPrefix(c.Path, "node_modules/app/bin/") || !strings.HasSuffix(c.Path, ".mjs") {
			t.Errorf("chunk %s not beside the entry", c.Path)
		}
		if i > 0 && m.Chunks[i-1].Path >= c.Path {
			t.Errorf("chunks not sorted")
		}
		info, err := os.Stat(filepath.Join(root, filepath.FromSlash(c.Path)))
		if err != nil || info.Size() != c.Bytes {
			t.Errorf("chunk %s: size %v, manifest %d (%v)", c.Path, info, c.Bytes, err)
		}
	}
	// Each chunk names the packages it carries (the SBOM's file for a
	// package whose directory bundling removed).
	if m.Carrier("node_modules/app") == "" || m.Carrier("node_modules/cjsdep") == "" || m.Carrier("node_modules/not-there") != "" {
		t.Errorf("carriers: %+v", m.Chunks)
	}
	shims := reasons(m.Shims)
	wantShims := map[string]string{
		"node_modules/app/bin/cli.js":   "shim: entry; bin app",
		"node_modules/app/lib/index.js": "shim: main; exports .",
		"node_modules/app/lib/extra.js": "shim: loaded at run time from node_modules/app/lib/index.js",
		"node_modules/esmdep/index.js":  "shim: loaded at run time from node_modules/app/lib/index.js",
	}
	if !reflect.DeepEqual(shims, wantShims) {
		t.Errorf("shims:\n got %v\nwant %v", shims, wantShims)
	}
	kept := reasons(m.Kept)
	ext := func(why string) string { return "external-package: " + why }
	wantKept := map[string]string{
		"package.json":                                             "package-json",
		"package-lock.json":                                        "outside-node_modules",
		"node_modules/.bin/app":                                    "bin-link",
		"node_modules/app/package.json":                            "package-json",
		"node_modules/app/assets/banner.txt":                       "asset",
		"node_modules/app/assets/client.js":                        "asset",
		"node_modules/cjsdep/package.json":                         "package-json",
		"node_modules/esmdep/package.json":                         "package-json",
		"node_modules/wasmpkg/package.json":                        ext("WebAssembly (1 .wasm files)"),
		"node_modules/wasmpkg/index.js":                            ext("WebAssembly (1 .wasm files)"),
		"node_modules/wasmpkg/mod.wasm":                            ext("WebAssembly (1 .wasm files)"),
		"node_modules/helper/package.json":                         ext("dependency of external package wasmpkg"),
		"node_modules/helper/index.js":                             ext("dependency of external package wasmpkg"),
		"node_modules/nativepkg/package.json":                      ext("native addon (4 .node files)"),
		"node_modules/nativepkg/index.js":                          ext("native addon (4 .node files)"),
		"node_modules/nativepkg/build/addon.node":                  ext("native addon (4 .node files)"),
		"node_modules/nativepkg/prebuilds/linux-x64/addon.node":    ext("native addon (4 .node files)"),
		"node_modules/nativepkg/prebuilds/darwin-arm64/addon.node": ext("native addon (4 .node files)"),
		"node_modules/nativepkg/prebuilds/win32-x64/addon.node":    ext("native addon (4 .node files)"),
		"node_modules/runtime-cjs/package.json":                    ext("required by name at run time from node_modules/app/lib/index.js"),
		"node_modules/runtime-cjs/index.js":                        ext("required by name at run time from node_modules/app/lib/index.js"),
	}
	if !reflect.DeepEqual(kept, wantKept) {
		for p, r := range kept {
			if wantKept[p] != r {
				t.Errorf("kept %s: %q, want %q", p, r, wantKept[p])
			}
		}
		for p, r := range wantKept {
			if _, ok := kept[p]; !ok {
				t.Errorf("not kept: %s (%s)", p, r)
			}
		}
	}
	// The tree holds exactly the chunks, shims and kept files.
	var listed []string
	for _, c := range m.Chunks {
		listed = append(listed, c.Path)
	}
	for _, k := range append(append([]Kept{}, m.Kept...), m.Shims...) {
		listed = append(listed, k.Path)
	}
	sort.Strings(listed)
	if got := listTree(t, root); !reflect.DeepEqual(got, listed) {
		t.Errorf("tree:\n got %v\nwant %v", got, listed)
	}
	// No folder is left empty.
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if ents, _ := os.ReadDir(p); len(ents) == 0 {
				t.Errorf("empty folder left: %s", p)
			}
		}
		return nil
	})
	// Shims keep the entry's hashbang and mode.
	cli, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(entry)))
	if err != nil || !strings.HasPrefix(string(cli), "#!/usr/bin/env node\n") {
		t.Errorf("entry shim: %q %v", cli, err)
	}
	if info, err := os.Stat(filepath.Join(root, filepath.FromSlash(entry))); err != nil || runtime.GOOS != "windows" && info.Mode().Perm()&0o111 == 0 {
		t.Errorf("entry shim not executable: %v %v", info, err)
	}
	// No path of the build machine in what was written.
	for _, p := range listed {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err == nil && bytes.Contains(data, []byte(root)) {
			t.Errorf("%s contains the root path", p)
		}
	}
	// The hardlinked cache files are untouched.
	if after := statOf(t, cacheFile); after != before {
		t.Errorf("hardlinked entry changed:\n before %+v\n after  %+v", before, after)
	}
	if after := statOf(t, cacheFile2); after != before2 {
		t.Errorf("hardlinked dependency changed:\n before %+v\n after  %+v", before2, after)
	}
	if data, _ := os.ReadFile(cacheFile); string(data) != fixture[entry] {
		t.Errorf("hardlinked entry content changed: %q", data)
	}

	// The bundle runs exactly like the tree did.
	if want != "" {
		if got := runNode(t, root); got != want {
			t.Errorf("bundled output differs:\n--- unbundled\n%s--- bundled\n%s", want, got)
		}
		if got := runNodeEval(t, root, importProbe); got != wantProbe {
			t.Errorf("importing the bundled packages by name differs:\n--- unbundled\n%s--- bundled\n%s", wantProbe, got)
		}
	}
}

// fileStat is what a write, truncation or chmod through another name of a
// hardlinked file would change. (The change time is not compared: removing
// the tree's name of the file legitimately updates it.)
type fileStat struct {
	Size    int64
	Mode    fs.FileMode
	ModTime time.Time
	Content string
}

func statOf(t *testing.T, p string) fileStat {
	t.Helper()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return fileStat{Size: info.Size(), Mode: info.Mode(), ModTime: info.ModTime(), Content: string(data)}
}

func TestBundleDeterministic(t *testing.T) {
	a, ma := bundleCopy(t, Options{})
	b, mb := bundleCopy(t, Options{})
	ja, _ := json.Marshal(ma)
	jb, _ := json.Marshal(mb)
	if !bytes.Equal(ja, jb) {
		t.Fatalf("manifests differ:\n%s\n%s", ja, jb)
	}
	fa, fb := listTree(t, a), listTree(t, b)
	if !reflect.DeepEqual(fa, fb) {
		t.Fatalf("file sets differ:\n%v\n%v", fa, fb)
	}
	for _, f := range fa {
		da, err1 := os.ReadFile(filepath.Join(a, filepath.FromSlash(f)))
		db, err2 := os.ReadFile(filepath.Join(b, filepath.FromSlash(f)))
		if err1 != nil || err2 != nil {
			la, _ := os.Readlink(filepath.Join(a, filepath.FromSlash(f)))
			lb, _ := os.Readlink(filepath.Join(b, filepath.FromSlash(f)))
			if la != lb {
				t.Errorf("%s differs", f)
			}
			continue
		}
		if !bytes.Equal(da, db) {
			t.Errorf("%s differs between two bundles of the same tree", f)
		}
	}
}

func TestBundlePlatform(t *testing.T) {
	root, m := bundleCopy(t, Options{Platform: "linux", Arch: "x64"})
	kept := reasons(m.Kept)
	for _, p := range []string{"node_modules/nativepkg/build/addon.node", "node_modules/nativepkg/prebuilds/linux-x64/addon.node"} {
		if _, ok := kept[p]; !ok {
			t.Errorf("%s not kept", p)
		}
	}
	for _, p := range []string{"node_modules/nativepkg/prebuilds/darwin-arm64/addon.node", "node_modules/nativepkg/prebuilds/win32-x64/addon.node"} {
		if _, ok := kept[p]; ok {
			t.Errorf("%s kept for linux/x64", p)
		}
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p))); !os.IsNotExist(err) {
			t.Errorf("%s still in the tree", p)
		}
	}
}

func TestBundleKeepOption(t *testing.T) {
	_, m := bundleCopy(t, Options{Keep: []string{"node_modules/app/docs", "node_modules/app/README.md"}})
	kept := reasons(m.Kept)
	if kept["node_modules/app/docs/guide.md"] != "requested" || kept["node_modules/app/README.md"] != "requested" {
		t.Errorf("Keep not honoured: %v", kept)
	}
}

func TestBundleErrors(t *testing.T) {
	root := t.TempDir()
	writeFixture(t, root)
	for _, o := range []Options{
		{Root: root},
		{Root: root, Entry: "node_modules/app/missing.js"},
		{Root: root, Entry: "../outside.js"},
		{Root: root, Entry: "node_modules/app/package.json"},
	} {
		if _, err := Bundle(context.Background(), o); err == nil {
			t.Errorf("Bundle(%+v): no error", o)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Bundle(ctx, Options{Root: root, Entry: entry}); err == nil {
		t.Error("cancelled context: no error")
	}
	// Nothing was changed by the failures.
	if got := len(listTree(t, root)); got != len(fixture)+2 {
		t.Errorf("tree changed by failed runs: %d files", got)
	}
}

func TestEsbuildVersion(t *testing.T) {
	v := EsbuildVersion()
	if v == "" || strings.HasPrefix(v, "v") || strings.Count(v, ".") != 2 {
		t.Errorf("EsbuildVersion() = %q", v)
	}
}

// A CommonJS command package: the entry shim runs the bundle through
// import(), the "main" shim re-exports it through require(esm).
var cjsFixture = map[string]string{
	"package.json":                     `{"name":"payload","private":true}`,
	"node_modules/cjsapp/package.json": `{"name":"cjsapp","version":"2.0.0","bin":"cli.js","main":"lib.js"}`,
	"node_modules/cjsapp/cli.js": `#!/usr/bin/env node
const lib = require("./lib");
console.log(lib.hello(), lib.asset.trim(), require("path").basename(__filename), require("path").basename(__dirname));
`,
	"node_modules/cjsapp/lib.js": `const fs = require("fs"), path = require("path");
exports.hello = () => "hi";
exports.asset = fs.readFileSync(path.join(__dirname, "data", "x.txt"), "utf8");
`,
	"node_modules/cjsapp/data/x.txt": "DATA\n",
}

func TestBundleCommonJSCommand(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: the tests need Node.js (see README)")
	}
	const cjsEntry = "node_modules/cjsapp/cli.js"
	run := func(root string) string {
		out, err := exec.Command(node, filepath.Join(root, filepath.FromSlash(cjsEntry))).CombinedOutput()
		if err != nil {
			t.Fatalf("node: %v\n%s", err, out)
		}
		return string(out)
	}
	write := func() string {
		root := t.TempDir()
		writeFiles(t, root, cjsFixture)
		return root
	}
	want := run(write())
	if want != "hi DATA cli.js cjsapp\n" {
		t.Fatalf("unbundled: %q", want)
	}
	root := write()
	m, err := Bundle(context.Background(), Options{Root: root, Entry: cjsEntry})
	if err != nil {
		t.Fatal(err)
	}
	if got := run(root); got != want {
		t.Errorf("bundled: %q, want %q", got, want)
	}
	shims := reasons(m.Shims)
	if shims[cjsEntry] != "shim: entry; bin cjsapp" || shims["node_modules/cjsapp/lib.js"] != "shim: main" {
		t.Errorf("shims %v", shims)
	}
	if reasons(m.Kept)["node_modules/cjsapp/data/x.txt"] != "asset" {
		t.Errorf("kept %v", m.Kept)
	}
	// require(esm) of the main shim: Node 20.19 and later.
	if out, err := exec.Command(node, "-p", "process.features.require_module === true").Output(); err == nil && strings.TrimSpace(string(out)) == "true" {
		cmd := exec.Command(node, "-p", `require("cjsapp").hello()`)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "hi" {
			t.Errorf("require(\"cjsapp\"): %v %s", err, out)
		}
	}
}
