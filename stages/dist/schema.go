package dist

import (
	"fmt"
	"strings"
)

// Field documents one attribute of distribution.hcl. The decoder's hcl
// schemas are built from the same table, so the documentation cannot drift
// from what is accepted.
type Field struct {
	// Name is the attribute's path: "name", "runtime.entry",
	// "release.targets".
	Name     string
	Type     string
	Required bool
	// Default is what an omitted optional attribute means ("" when it has
	// no value of its own).
	Default string
	Doc     string
	Example string
}

// Block documents a block of distribution.hcl.
type Block struct {
	Name     string
	Required bool
	Doc      string
}

var schema = []Field{
	{Name: "name", Type: "string", Required: true, Example: `"Hello"`,
		Doc: "display name"},
	{Name: "version", Type: "string", Required: true, Example: `"1.0.0"`,
		Doc: "semantic version MAJOR.MINOR.PATCH[-pre][+build] of the distribution"},
	{Name: "command", Type: "string", Required: true, Example: `"hello"`,
		Doc: "the shim's name, [a-z0-9][a-z0-9._-]*: <bin-home>/<command>"},
	{Name: "resources", Type: "list(string)", Default: "[]", Example: `["resources"]`,
		Doc: "files and directories copied into the payload as they are, relative to the distribution directory; each file's sha256 is locked"},
	{Name: "tools", Type: "map(object({source=string, sha256=string}))", Default: "{}", Example: `{ rg = { source = "tools/rg", sha256 = "<hex>" } }`,
		Doc: "pinned extra executables copied to tools/<name>: source is a path in the distribution directory or an https:// URL, sha256 its 64 lowercase hex digits"},
	{Name: "verify_at_launch", Type: "bool", Default: "false", Example: "false",
		Doc: "true: every start verifies the whole payload inventory; false: a start checks the lock against the receipt only"},

	{Name: "runtime.dir", Type: "string", Default: `"runtime"`, Example: `"runtime"`,
		Doc: "the npm project: package.json and package-lock.json (lockfileVersion 3), relative to the distribution directory"},
	{Name: "runtime.entry", Type: "string", Required: true, Example: `"node_modules/hello-cli/bin/hello.js"`,
		Doc: "the program's main module, relative to runtime.dir, inside a locked package: node_modules/<package>/<file>; the shim runs node <entry>"},
	{Name: "runtime.allow_install_scripts", Type: "list(string)", Default: "[]", Example: `["koffi"]`,
		Doc: "packages allowed to declare install scripts; the scripts never run (npm ci --ignore-scripts)"},

	{Name: "release.bundle", Type: "bool", Default: "false", Example: "true",
		Doc: "bundle the installed tree into a few ESM chunks (files read from disk stay files)"},
	{Name: "release.strip", Type: "bool", Default: "false", Example: "true",
		Doc: "drop files a running program never reads (type declarations, source maps, docs)"},
	{Name: "release.targets", Type: "list(string)", Required: true, Example: `["linux-x64"]`,
		Doc: "<platform>-<arch> in Node's naming (linux-x64, linux-arm64, darwin-arm64, win32-x64); a release is built on its target"},
	{Name: "release.sources", Type: "list(string)", Default: `["npm"]`, Example: `["npm"]`,
		Doc: `where locked packages may come from: "npm" (the registry npm is configured for) or https:// URL prefixes; file: packages inside the distribution directory are always allowed`},
}

var blocks = []Block{
	{Name: "runtime", Required: true, Doc: "the npm project whose locked dependency tree is the program"},
	{Name: "release", Required: true, Doc: "how releases are made and what they may contain"},
}

// Schema returns the documented attributes of distribution.hcl.
func Schema() ([]Field, []Block) {
	return append([]Field(nil), schema...), append([]Block(nil), blocks...)
}

func fieldByName(name string) (Field, bool) {
	for _, f := range schema {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Doc documents distribution.hcl for `piship stages`-style help.
func Doc() string {
	var b strings.Builder
	b.WriteString(`distribution.hcl: one block per distribution directory.

distribution "<id>" {   # id: [a-z0-9][a-z0-9._-]*; names apps/<id>/ and receipts/<id>.json
  name    = "Hello"
  version = "1.0.0"
  command = "hello"
  runtime {
    dir   = "runtime"
    entry = "node_modules/hello-cli/bin/hello.js"
  }
  release {
    targets = ["linux-x64"]
  }
}
`)
	section := func(title, prefix string) {
		fmt.Fprintf(&b, "\n%s\n", title)
		for _, f := range schema {
			rest, ok := strings.CutPrefix(f.Name, prefix)
			if !ok || strings.Contains(rest, ".") {
				continue
			}
			req := "optional"
			if f.Required {
				req = "required"
			}
			doc := f.Doc
			if f.Default != "" {
				doc += " (default " + f.Default + ")"
			}
			typ := f.Type
			if len(typ) > 14 {
				typ = typ[:strings.IndexByte(typ, '(')] + "(...)"
			}
			fmt.Fprintf(&b, "  %-22s %-14s %-8s %s\n", rest, typ, req, doc)
		}
	}
	section("Attributes:", "")
	for _, blk := range blocks {
		req := "optional"
		if blk.Required {
			req = "required"
		}
		section(fmt.Sprintf("%s { } block (%s): %s", blk.Name, req, blk.Doc), blk.Name+".")
	}
	b.WriteString("\npiship.lock, beside distribution.hcl, records the digests of distribution.hcl, the runtime's package.json and\npackage-lock.json, every resource file and every tool; a release refuses a lock that is not current.\n")
	return b.String()
}
