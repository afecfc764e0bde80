// Package bundle turns an installed npm dependency tree into a few large ESM
// chunks with esbuild's Go API (no node process), keeping as ordinary files
// only what must stay a file.
//
// Bundle rewrites the payload root in place. The entry's module graph is
// built as ESM with code splitting for platform node (target node20), and
// every JavaScript file esbuild writes (entries and shared chunks, *.mjs)
// goes into the entry's own folder, inside the entry package: code that
// walks up from its module to the nearest package.json (as Pi does to find
// its themes, images and HTML export templates) finds the package it found
// before. Everything else under node_modules is deleted unless a rule below
// keeps it; outside node_modules nothing is removed but the entry package's
// bundled modules (when the entry package is the root itself). Existing files
// are never written to, truncated or chmodded: new files are written under a
// temporary name and renamed over their path, old files are unlinked, so
// files hardlinked into a shared cache stay intact. The output is
// deterministic: the same tree gives the same bytes and manifest, and no
// path of the build machine is written (module paths are relative to the
// root; source maps are off).
//
// # Running where the code used to be
//
// In a chunk, import.meta.url, __dirname and __filename would name the
// chunk. Each module that uses them instead declares, on its first line,
// stand-ins computed at run time from the chunk's location and the module's
// original path relative to the root, and an esbuild define points
// import.meta.url, import.meta.dirname, import.meta.filename,
// import.meta.resolve, __dirname and __filename at them (the CommonJS names
// only in modules Node loads as CommonJS, so `typeof __dirname` in an ES
// module still says "undefined"). So a module reading "../assets/x.png"
// relative to itself, calling createRequire(import.meta.url), or walking up
// to its package.json, behaves as before, as long as the files it reads
// stay (the asset rule below). A computed import(x) is routed through a
// per-module loader that resolves a relative x from the module's original
// place. Every chunk starts with a banner holding the helpers and the
// `require` (createRequire(import.meta.url)) that CommonJS code inside the
// ESM chunks needs; esbuild reserves the name, so it cannot clash.
//
// # Entries already bundled upstream (Manifest.Upstream)
//
// Many packages ship their own bundle (Pi 1.6: its bin dist/bundle/cli.js
// does createRequire(import.meta.url)("./cli-runtime.js"), which imports
// ./chunks/*.js statically and by import("./chunks/x.js")). Cutting such a
// bundle apart breaks it, so before any esbuild run the modules of the
// entry's folder (all of its JavaScript files in the entry package,
// recursively) and everything they reach through static imports and string
// literals passed to loaders are followed. The entry counts as an upstream
// bundle when a module of the entry package is reached through a require
// esbuild cannot see (a loader other than a plain require()/import(), such
// as createRequire(...)("./x.js") or require2("./x.js")), or when a module
// of the entry package is bundler output (esbuild's __toESM/__commonJS,
// webpack's __webpack_require__). Then nothing is rebuilt: no chunks, no
// shims; what stays is
//   - "upstream-bundle: <how it is reached>": the modules followed;
//   - "external-package: loaded by name by the upstream bundle (...)":
//     every package those modules import or require by name, with its
//     installed dependencies, whole (documentation and foreign prebuilt
//     binaries still go);
//   - the entry package's package.json and assets (every file that is not
//     a module, documentation, source or declaration, and scripts in an
//     asset folder): the bundle finds its themes, images and templates
//     from its package directory;
//   - files a literal require.resolve("pkg/file.wasm") locates, with their
//     package.json, and everything outside node_modules but the entry
//     package's modules.
//
// A module only located by name (require.resolve("pkg"),
// import.meta.resolve("pkg"), Pi's extension aliases) is loaded by nothing
// of the bundle: it goes, and Manifest.Upstream.Located lists it. The
// entry package's unbundled modules and the packages nothing reaches go.
// path.resolve(__dirname, "..") and friends compute paths: not followed.
//
// # Packages kept unbundled ("external-package: <why>")
//
// An external package is not bundled: its files stay (without
// documentation, licences, native and TypeScript sources, declarations,
// maps, dotfiles and test/doc/example folders), and bundled code imports it
// by its bare name so Node resolves it from node_modules as before (by a
// relative path when the chunks' folder would find another copy). A package
// is external when it
//   - ships native addons or WebAssembly (.node, .wasm files), which such
//     packages load from disk relative to themselves ("native addon",
//     "WebAssembly");
//   - calls CommonJS require() with a computed name, so it may load any of
//     its files by path ("loads modules by computed name");
//   - is required by name at run time through a require esbuild cannot see,
//     such as createRequire(import.meta.url)("pkg") ("required by name at
//     run time from <module>");
//   - is an installed dependency, optional dependency or peer of an
//     external package, found as Node would from that package ("dependency
//     of external package <name>").
//
// With Options.Platform and Options.Arch set, the prebuilt binaries of an
// external package whose path names only other platforms or architectures
// (build/koffi/darwin_arm64/koffi.node for linux/x64) go too.
//
// # Other files that stay (Kept reasons)
//
//   - "asset", "package-json", "native-addon", "wasm": files of a bundled
//     package whose code locates its own files (it uses import.meta.url or
//     import.meta.dirname/filename, or CommonJS __dirname/__filename):
//     every file below the package's code root (the deepest folder holding
//     all its bundled modules: "dist" for Pi) that is not a module of the
//     bundle, documentation or source; scripts that are not modules of the
//     bundle but sit in a folder holding such assets (an HTML template's
//     script, a vendored browser library read as text); and the package's
//     package.json. Documentation and examples outside the code root (Pi's
//     README.md, docs/, examples/) go; Options.Keep keeps them.
//   - "package-json": the package.json files a shim needs to resolve and
//     load as before (its package's, and the one giving its module type).
//   - "native-addon", "wasm": also .node/.wasm files that bundled code of
//     the entry package imports by path; the import is re-pointed at them.
//   - "bin-link", "symlink": symlinks (node_modules/.bin) whose target stays.
//   - "outside-node_modules", and "requested" for Options.Keep.
//
// # Shims (module files left so a path still resolves)
//
// A shim is a small module at an original path that re-exports (or, for a
// command, runs) the bundled code; the package.json files it needs stay.
// Shims are written for
//   - the entry ("entry") and the entry package's "bin", "main" and
//     "exports" targets;
//   - modules resolved or imported at run time by name or path, found by a
//     light tokenizer (jsscan.go) in the bundled modules: string literals
//     passed to calls whose callee names a loader (require.resolve("x"),
//     import.meta.resolve("x"), resolveWorkspaceOrImport(..., "x"),
//     importNodeOnlyProvider("./y.js")) that esbuild did not bundle, and,
//     in a module with a computed import(), every relative module path it
//     spells out. Pi's extension loader resolves @mariozechner/pi-ai,
//     pi-tui, pi-agent-core, typebox and its own index this way, and
//     pi-ai loads its Bedrock provider through such a wrapper.
//
// Each shimmed module is an esbuild entry point, so extensions loaded at run
// time get the very module instances the bundle uses. Since every entry
// point splits the chunks further, the shimmed modules that the commands
// load eagerly anyway (reached through static imports) are re-exported
// through one facade entry; a module only loaded on demand keeps its own
// entry, so loading it stays lazy.
//
// Optional imports nothing installed (a provider SDK's optional peer
// @opentelemetry/api) are left external, as are Node builtins: Node decides
// at run time, as it did before.
//
// Bundling takes a few esbuild runs: each can reveal a package to keep
// external or a module to shim, which changes the next; the last run groups
// the facade.
//
// Known limits: code reading import.meta as a whole object (not
// import.meta.url), relative names built at run time and passed to
// require() (the package is then kept external, except the entry package,
// which is logged), and a module that dynamically imports itself by its
// package name (an esbuild splitting bug) are not handled.
package bundle
