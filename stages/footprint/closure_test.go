package footprint

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"piship.dev/piship/stages/distribution"
)

// safePackage is a Pi package whose closure passes every test: an ESM
// extension importing a module of its own and a dependency through its
// exports map, and the host's pi-tui (a peer: Pi supplies it).
func safePackage(name string) map[string]string {
	d := "pi-packages/" + name + "/node_modules/" + name
	w := "pi-packages/" + name + "/node_modules/words"
	return map[string]string{
		d + "/package.json":    `{"name": "` + name + `", "version": "1.0.0", "type": "module", "pi": {"extensions": ["./index.js"]}}`,
		d + "/index.js":        "import { commands } from \"./lib/commands.js\";\nexport default function (pi) { for (const c of commands) pi.registerCommand(c, {}); }\n",
		d + "/lib/commands.js": "import { hello } from \"words\";\nimport { greet } from \"./greet.js\";\nexport const commands = [hello, greet()];\n",
		d + "/lib/greet.js":    "import * as tui from \"@earendil-works/pi-tui\";\nexport const greet = () => \"greet-\" + typeof tui;\n",
		d + "/lib/unused.js":   "export const unused = 1;\n",
		w + "/package.json":    `{"name": "words", "version": "1.0.0", "type": "module", "exports": {".": "./index.js"}}`,
		w + "/index.js":        "export { hello } from \"./hello.js\";\nexport default 7;\n",
		w + "/hello.js":        "export const hello = \"hello\";\n",
		w + "/LICENSE":         "MIT\n",
		"pi-packages/" + name + "/node_modules/@earendil-works/pi-tui/package.json": `{"name": "@earendil-works/pi-tui", "version": "1.0.0", "type": "module", "exports": "./i.js"}`,
		"pi-packages/" + name + "/node_modules/@earendil-works/pi-tui/i.js":         "export const tui = 1;\n",
	}
}

func safeLock(name string) *distribution.PackageLock {
	return &distribution.PackageLock{Packages: map[string]distribution.LockPackage{
		"":                                    {},
		"node_modules/" + name:                {Version: "1.0.0", Dependencies: map[string]string{"words": "1.0.0"}, PeerDeps: map[string]string{"@earendil-works/pi-tui": "*"}},
		"node_modules/words":                  {Version: "1.0.0", Integrity: "sha512-words"},
		"node_modules/@earendil-works/pi-tui": {Version: "1.0.0", Integrity: "sha512-tui"},
	}}
}

// commandsOf loads an extension entry in Node as Pi would call it and
// returns the commands it registers.
func commandsOf(t *testing.T, entry string) string {
	t.Helper()
	script := `const m = await import(process.argv[1]); const got = []; m.default({ registerCommand: (n) => got.push(n) }); console.log(got.join(","));`
	out, err := exec.Command("node", "--input-type=module", "-e", script, entry).CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", entry, err, out)
	}
	return strings.TrimSpace(string(out))
}

// A bundle-safe closure is bundled: its entry keeps its bytes, the module
// it imports directly becomes a forwarding module into .bundle, the
// modules that one pulled in are gone, and the extension registers the
// same commands as before. Files outside the closure stay.
func TestBundleSafeClosureIsBundled(t *testing.T) {
	root := t.TempDir()
	write(t, root, safePackage("safe"))
	entry := filepath.Join(root, "pi-packages/safe/node_modules/safe/index.js")
	before := commandsOf(t, entry)
	entryBytes, _ := os.ReadFile(entry)
	p := Package{Name: "safe", Dir: "pi-packages/safe", Lock: safeLock("safe"), Entries: []string{"pi-packages/safe/node_modules/safe/index.js"}}
	rep, err := Apply(root, []Package{p}, true)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Closures[0]
	if c.Decision != "bundled" || len(c.Findings) != 0 || c.Modules != 5 || c.Removed != 3 || c.Written == 0 {
		t.Fatalf("closure: %+v", c)
	}
	if after := commandsOf(t, entry); after != before || before != "hello,greet-object" {
		t.Errorf("commands before %q, after %q", before, after)
	}
	if b, _ := os.ReadFile(entry); string(b) != string(entryBytes) {
		t.Errorf("the entry changed:\n%s", b)
	}
	fwd, _ := os.ReadFile(filepath.Join(root, "pi-packages/safe/node_modules/safe/lib/commands.js"))
	if !strings.HasPrefix(string(fwd), "export * from \"../../../.bundle/") {
		t.Errorf("commands.js is not a forwarding module:\n%s", fwd)
	}
	for _, gone := range []string{"safe/lib/greet.js", "words/index.js", "words/hello.js"} {
		if _, err := os.Stat(filepath.Join(root, "pi-packages/safe/node_modules", gone)); err == nil {
			t.Errorf("%s was bundled but is still there", gone)
		}
	}
	for _, kept := range []string{"safe/lib/unused.js", "words/package.json", "words/LICENSE", "@earendil-works/pi-tui/i.js"} {
		if _, err := os.Stat(filepath.Join(root, "pi-packages/safe/node_modules", kept)); err != nil {
			t.Errorf("%s should stay: %v", kept, err)
		}
	}
	if l := rep.Lines()[0]; l != "Pi package closures: 1 of 1 bundled" {
		t.Errorf("line: %q", l)
	}
}

// Each test a closure can fail keeps its files, and the report names it.
func TestClosureFindings(t *testing.T) {
	base := "pi-packages/p/node_modules/p/"
	cases := []struct {
		finding string
		files   map[string]string
		entries []string
	}{
		{findTypeScript, map[string]string{"lib/commands.js": "export { commands } from \"./t.ts\";\n", "lib/t.ts": "export const commands: string[] = [];\n"}, nil},
		{findJSON, map[string]string{"lib/commands.js": "import c from \"./c.json\" with { type: \"json\" };\nexport const commands = c;\n", "lib/c.json": "[]"}, nil},
		{findEntryImports, map[string]string{"other.js": "export default function () {}\n", "lib/commands.js": "import o from \"../other.js\";\nexport const commands = [typeof o];\n"}, []string{"other.js"}},
		{findUnresolved, map[string]string{"lib/commands.js": "import { x } from \"not-vendored\";\nexport const commands = [x];\n"}, nil},
		{findDynamic, map[string]string{"lib/commands.js": "export const commands = [];\nimport(\"./greet.js\");\n"}, nil},
		{findRequire, map[string]string{"lib/commands.js": "const g = require(\"./greet.js\");\nexport const commands = [g];\n"}, nil},
		{findOwnFiles, map[string]string{"lib/commands.js": "export const commands = [new URL(\".\", import.meta.url).href];\n"}, nil},
		{findDiscovery, map[string]string{"lib/commands.js": "import { createRequire } from \"node:module\";\nexport const commands = [typeof createRequire];\n"}, nil},
		{findCommonJS, map[string]string{"index.js": "import { commands } from \"./lib/commands.cjs\";\nexport default function (pi) { for (const c of commands) pi.registerCommand(c, {}); }\n", "lib/commands.cjs": "exports.commands = [];\n"}, nil},
		{findLeftImport, map[string]string{"lib/unused.js": "export { greet } from \"./greet.js\";\n"}, nil},
		{findNative, map[string]string{"lib/addon.node": "\x7fELF"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.finding, func(t *testing.T) {
			root := t.TempDir()
			files := safePackage("p")
			for k, v := range tc.files {
				files[base+k] = v
			}
			write(t, root, files)
			p := Package{Name: "p", Dir: "pi-packages/p", Lock: safeLock("p"), Entries: []string{base + "index.js"}}
			for _, e := range tc.entries {
				p.Entries = append(p.Entries, base+e)
			}
			rep, err := Apply(root, []Package{p}, true)
			if err != nil {
				t.Fatal(err)
			}
			c := rep.Closures[0]
			if c.Decision != "vendored" || !slices.Contains(c.Findings, tc.finding) {
				t.Fatalf("closure: %+v, want vendored with %s", c, tc.finding)
			}
			if _, err := os.Stat(filepath.Join(root, base, "lib/greet.js")); err != nil {
				t.Errorf("a vendored closure lost a file: %v", err)
			}
		})
	}
}

// pretranspile writes the TypeScript modules an extension imports as
// JavaScript beside them (not the entry), their relative .ts imports
// rewritten, so Node loads the chain without a TypeScript loader; the
// closure is still reported typescript-closure and kept. A .js already
// there is not overwritten.
func TestPretranspileWritesJavaScriptBeside(t *testing.T) {
	root := t.TempDir()
	base := "pi-packages/p/node_modules/p/"
	write(t, root, map[string]string{
		base + "package.json":  `{"name": "p", "version": "1.0.0", "type": "module", "pi": {"extensions": ["./index.ts"]}}`,
		base + "index.ts":      "import { greet } from \"./helper\";\nexport default function (pi: any): void { pi.registerCommand(greet(), {}); }\n",
		base + "helper.ts":     "import { name } from \"./util.ts\";\nimport type { X } from \"./types.ts\";\nexport const greet = (x?: X): string => \"greet-\" + name;\n",
		base + "util.ts":       "export const name: string = \"util\";\n",
		base + "types.ts":      "export interface X { a: number }\n",
		base + "kept.ts":       "import { name } from \"./util.ts\";\nexport const k = name;\n",
		base + "kept.js":       "export const k = \"written by the package\";\n",
		base + "lib/other.ts":  "export const unreached = 1;\n",
		"pi-packages/p/x.json": "{}",
	})
	write(t, root, map[string]string{base + "index.ts": "import { greet } from \"./helper\";\nimport { k } from \"./kept.ts\";\nexport default function (pi: any): void { pi.registerCommand(greet() + k, {}); }\n"})
	lock := &distribution.PackageLock{Packages: map[string]distribution.LockPackage{"": {}, "node_modules/p": {Version: "1.0.0"}}}
	p := Package{Name: "p", Dir: "pi-packages/p", Lock: lock, Entries: []string{base + "index.ts"}, Pretranspile: true}
	rep, err := Apply(root, []Package{p}, true)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Closures[0]
	if c.Decision != "vendored" || !slices.Contains(c.Findings, findTypeScript) || c.Pretranspiled != 2 {
		t.Fatalf("closure: %+v, want typescript-closure kept with helper and util written (types is only imported as a type; kept.js exists)", c)
	}
	for _, f := range []string{"index.js", "lib/other.js"} {
		if _, err := os.Stat(filepath.Join(root, base, f)); err == nil {
			t.Errorf("%s was written (the entry, or a module nothing imports)", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, base, "kept.js")); string(b) != "export const k = \"written by the package\";\n" {
		t.Errorf("kept.js was overwritten: %s", b)
	}
	helper, _ := os.ReadFile(filepath.Join(root, base, "helper.js"))
	if !strings.Contains(string(helper), `"./util.js"`) || strings.Contains(string(helper), ": string") {
		t.Errorf("helper.js:\n%s", helper)
	}
	out, err := exec.Command("node", "--input-type=module", "-e", `const m = await import(process.argv[1]); console.log(m.greet());`, filepath.Join(root, base, "helper.js")).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "greet-util" {
		t.Errorf("node helper.js: %v\n%s", err, out)
	}
	// With the footprint work off nothing is written.
	root2 := t.TempDir()
	write(t, root2, map[string]string{base + "package.json": `{"name": "p", "version": "1.0.0", "type": "module"}`, base + "index.ts": "import { name } from \"./util.ts\";\nexport default () => name;\n", base + "util.ts": "export const name = 1;\n"})
	if rep, err := Apply(root2, []Package{p}, false); err != nil || rep.Closures[0].Pretranspiled != 0 {
		t.Fatalf("footprint off: %+v %v", rep, err)
	}
	if _, err := os.Stat(filepath.Join(root2, base, "util.js")); err == nil {
		t.Error("footprint off wrote util.js")
	}
}
