package bundle

import (
	"reflect"
	"strings"
	"testing"
)

func TestScanJSDynamicImports(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int // computed import() calls found
	}{
		{`await import(name)`, 1},
		{`const load = (s) => import(s);`, 1},
		{`import(a, { with: { type: "json" } })`, 1},
		{`import("./literal.js")`, 0},
		{"import(`./locale/${x}.js`)", 0}, // esbuild bundles the matching files
		{`import("./a/" + x)`, 0},
		{`const o = { async import(e, t) { return e } }`, 0},
		{`class C { static import(x) { } }`, 0},
		{`loader.import(x)`, 0},
		{`jiti?.import(x)`, 0},
		{`"import(x)"; 'import(y)'; // import(z)`, 0},
		{"/* import(x) */ `import(${y})`", 0},
		{`const re = /import(x)/g; f(re)`, 0},
		{`x = a / import(b)`, 1},
		{"`${ import(x) }`", 1},
		{"#!/usr/bin/env node\nimport(x)", 1},
	} {
		if got := len(scanJS(tc.src).dynImports); got != tc.want {
			t.Errorf("%q: %d computed imports, want %d", tc.src, got, tc.want)
		}
	}
	src := "a;import(x);b"
	sc := scanJS(src)
	if len(sc.dynImports) != 1 || !strings.HasPrefix(src[sc.dynImports[0]:], "import(x)") {
		t.Errorf("offset %v", sc.dynImports)
	}
}

func TestScanJSRequireAndCalls(t *testing.T) {
	sc := scanJS(`
const cjsRequire = createRequire(import.meta.url);
const koffi = cjsRequire("koffi");
const t = require.resolve("typebox");
const u = import.meta.resolve("@s/pkg/sub");
resolveWorkspaceOrImport("agent/dist/index.js", "@s/agent");
notALoader("ignored");
require("./static.js");
path.join(__dirname, "x");
obj.__filename;
`)
	want := []jsCall{
		{Callee: "createRequire", Args: nil},
		{Callee: "cjsRequire", Args: []string{"koffi"}},
		{Callee: "require.resolve", Args: []string{"typebox"}},
		{Callee: "import.meta.resolve", Args: []string{"@s/pkg/sub"}},
		{Callee: "resolveWorkspaceOrImport", Args: []string{"agent/dist/index.js", "@s/agent"}},
		{Callee: "require", Args: []string{"./static.js"}},
	}
	var got []jsCall
	for _, c := range sc.calls {
		if len(c.Args) > 0 {
			got = append(got, c)
		}
	}
	want = want[1:] // createRequire has no literal argument
	if !reflect.DeepEqual(got, want) {
		t.Errorf("calls:\n got %+v\nwant %+v", got, want)
	}
	if !sc.metaURL || !sc.metaResolve || sc.metaDirname || !sc.dirname || sc.filename {
		t.Errorf("flags: %+v", sc)
	}
	if sc.computedRequire {
		t.Error("computedRequire set by literal requires")
	}
	if !scanJS(`module.exports = require(path.join(__dirname, name))`).computedRequire {
		t.Error("computed require not found")
	}
	if scanJS("require(`./x/${y}`)").computedRequire {
		t.Error("template require is esbuild's (a glob)")
	}
	if got := scanJS(`f("./a.js", '../b', "c", "./d" + e)`).relLiterals; !reflect.DeepEqual(got, []string{"./a.js", "../b", "./d"}) {
		t.Errorf("relLiterals %q", got)
	}
}

func TestRewriteModule(t *testing.T) {
	src := "#!/usr/bin/env node\nconst f = (s) => import(s);\nconsole.log(import.meta.url);\n"
	out := rewriteModule(src, "node_modules/a/b.js", scanJS(src), true)
	if !strings.HasPrefix(out, "#!/usr/bin/env node\nvar "+varMetaURL+"=") {
		t.Errorf("declarations not after the hashbang:\n%s", out)
	}
	if !strings.Contains(out, "(s) => "+varImport+"(s)") || strings.Count(out, "\n") != strings.Count(src, "\n") {
		t.Errorf("rewrite:\n%s", out)
	}
	if !strings.Contains(out, `__pishipURL("node_modules/a/b.js")`) {
		t.Errorf("module path missing:\n%s", out)
	}
	cjs := "module.exports = __dirname;"
	out = rewriteModule(cjs, "node_modules/c/i.js", scanJS(cjs), false)
	if !strings.Contains(out, varDirname+"=") || strings.Contains(out, varMetaURL) {
		t.Errorf("cjs rewrite:\n%s", out)
	}
	plain := "export const a = 1;"
	if out := rewriteModule(plain, "x.js", scanJS(plain), true); out != plain {
		t.Errorf("untouched module changed: %s", out)
	}
}

func TestResolveExports(t *testing.T) {
	ex, ok := parseOrdered([]byte(`{
		".": {"types": "./d.ts", "import": "./esm/index.js", "require": "./cjs/index.cjs"},
		"./sub": {"node": {"import": "./esm/sub.js"}, "default": "./sub.js"},
		"./feat/*": "./features/*.js",
		"./feat/internal/*": null,
		"./package.json": "./package.json"
	}`))
	if !ok {
		t.Fatal("parse")
	}
	for _, tc := range []struct {
		sub   string
		conds []string
		want  string
	}{
		{".", importConds, "./esm/index.js"},
		{".", requireConds, "./cjs/index.cjs"},
		{"./sub", importConds, "./esm/sub.js"},
		{"./sub", requireConds, "./sub.js"},
		{"./feat/a", importConds, "./features/a.js"},
		{"./feat/internal/x", importConds, ""},
		{"./missing", importConds, ""},
	} {
		got, _ := resolveExports(ex, tc.sub, tc.conds)
		if got != tc.want {
			t.Errorf("%s %v: %q, want %q", tc.sub, tc.conds, got, tc.want)
		}
	}
	sugar, _ := parseOrdered([]byte(`"./main.js"`))
	if got, _ := resolveExports(sugar, ".", importConds); got != "./main.js" {
		t.Errorf("sugar: %q", got)
	}
	if subs := exportsSubpaths(ex); len(subs) != 5 || subs[0] != "." {
		t.Errorf("subpaths %v", subs)
	}
}

func TestForeignBinary(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"build/koffi/linux_x64/koffi.node", false},
		{"build/koffi/musl_x64/koffi.node", false},
		{"build/koffi/darwin_arm64/koffi.node", true},
		{"build/koffi/win32_x64/koffi.node", true},
		{"build/koffi/linux_arm64/koffi.node", true},
		{"build/koffi/linux_riscv64d/koffi.node", true},
		{"clipboard.linux-x64-gnu.node", false},
		{"prebuilds/linux-x86_64/addon.node", false},
		{"build/Release/addon.node", false},
		{"prebuilds/darwin-x64+arm64/addon.node", true},
	} {
		if got := foreignBinary(tc.path, "linux", "x64"); got != tc.want {
			t.Errorf("%s: foreign %v, want %v", tc.path, got, tc.want)
		}
	}
	if foreignBinary("build/darwin_arm64/a.node", "", "") {
		t.Error("no platform given: nothing is foreign")
	}
}

func TestPrunable(t *testing.T) {
	for p, want := range map[string]bool{
		"README.md": true, "LICENSE": true, "docs/x.png": true, "src/a.cc": true, "lib/a.d.ts": true,
		"lib/a.js.map": true, ".npmignore": true, "test/a.js": true, "binding.gyp": true,
		"lib/a.js": false, "theme/dark.json": false, "build/Release/a.node": false, "a.wasm": false,
		"package.json": false, "assets/logo.png": false,
	} {
		if got := prunable(p); got != want {
			t.Errorf("prunable(%s) = %v, want %v", p, got, want)
		}
	}
}

func TestRelPath(t *testing.T) {
	for _, tc := range [][3]string{
		{"a/b", "a/b/c.mjs", "./c.mjs"},
		{"a/b", "a/d/e.js", "../d/e.js"},
		{"a/b", "", "../.."},
		{"", "x/y.js", "./x/y.js"},
	} {
		if got := relPath(tc[0], tc[1]); got != tc[2] {
			t.Errorf("relPath(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}
