// Package runtimecache is the build's runtime cache. It keeps installed
// dependency trees (the result of `npm ci` for a distribution's runtime
// lock or a vendored Pi package's project) and bundles made from them, so
// that a release whose runtime inputs did not change places a tree it
// already has instead of installing it again.
//
// # Layout
//
// The runtime cache lives in <home>/runtime (home from cache.Home):
//
//	runtime/
//	  i-<20 hex>/             an installed dependency tree (InstallKey.Key)
//	    manifest.json         schema, key, created, dirs, files, digest
//	    tree/...              the tree itself: directories, regular files
//	                          (mode 0644 or 0755), symbolic links
//	  b-<20 hex>/             a bundle made from an i- tree (BundleKey),
//	    manifest.json         same layout
//	    tree/...
//	  .tmp-<key>-<random>/    an entry being built (fill runs in its tree/)
//	  .del-<name>-<random>/   an entry set aside by one rename, being deleted
//
// An entry is built whole in a temporary directory inside the root and
// renamed into place, and is never written again: Place hardlinks its files
// into payloads, so a payload file and the cached file can be the same
// inode. Whoever receives a placed tree must therefore replace or delete
// files, never write into them (see Entry.Place). The only thing that
// changes after the rename is the entry directory's mtime, which records
// last use (Create sets it, every Get hit refreshes it) for Evict.
//
// manifest.json lists every directory and every file with its size, mode
// and sha256 (or, for a symbolic link, its target), sorted by path, and a
// digest over that list (Entry.Digest: the identity of the tree's content,
// independent of the key and of when the entry was made). Get trusts an
// entry when the manifest is well formed, its digest matches and the tree on
// disk has exactly the listed directories and files with the listed sizes,
// modes and link targets; with verifyContent it also re-hashes every file.
// Anything else is damage: the entry is set aside by one rename, deleted,
// and reported as a *cache.DamagedError so the caller logs it and rebuilds.
//
// Removal (damage, eviction) always renames the entry aside first, so a
// reader sees a complete entry or none; what a time budget leaves of a
// set-aside directory is deleted by the next Evict.
//
// The files: runtimecache.go the keys and the records, create.go Create,
// get.go Get and its checks, place.go Place, evict.go removal and Evict.
// The cache home, the hashing, the key encoding, the explain area and
// DamagedError are package cache's, shared with the action cache; errors
// still begin "cache: ", as the user has always read them.
package runtimecache

import (
	"context"
	"path/filepath"
	"time"

	"piship.dev/piship/cache"
)

const (
	runtimeSchemaV1     = "piship-runtime/v1"
	runtimeManifestName = "manifest.json"
	runtimeTreeName     = "tree"
	runtimeTmpPrefix    = ".tmp-"
	runtimeDelPrefix    = ".del-"
	// runtimeStaleTemp is how old a temporary directory must be before
	// Evict assumes its writer was killed.
	runtimeStaleTemp = time.Hour
)

// Cache is the runtime cache rooted at <home>/runtime. It holds no state
// besides its root, so any number of Cache values, in any number of
// processes, may use one root at once.
type Cache struct {
	root string
	now  func() time.Time
	// remote and ctx: the run's remote cache (WithRemote), or nil.
	remote *cache.RemoteSession
	ctx    context.Context
}

// Open returns the runtime cache under home (see cache.Home). Nothing is
// created until the first Create.
func Open(home string) *Cache {
	return &Cache{root: filepath.Join(home, "runtime"), now: time.Now}
}

// Root returns the cache's root directory, <home>/runtime.
func (r *Cache) Root() string { return r.root }

// Explain returns the explain area of the same cache home (cache/explain.go).
func (r *Cache) Explain() *cache.Explain { return cache.OpenExplain(filepath.Dir(r.root)) }

// InstallKey is everything that decides an installed dependency tree.
type InstallKey struct {
	// ToolDigest identifies the piship build (see cache.ToolDigest).
	ToolDigest string
	// Lock is the runtime section of the lock: the canonical bytes of the
	// package.json and package-lock.json that npm ci installs from. The
	// caller decides the encoding; it must be deterministic.
	Lock []byte
	// Platform and Arch are node-style ("linux", "darwin", "win32"; "x64",
	// "arm64"); Libc is "glibc" or "musl" on Linux and "" elsewhere.
	Platform, Arch, Libc string
	// Node and Npm are the major.minor versions of node and npm.
	Node, Npm string
}

// Key returns "i-" and the first 20 hex digits of the sha256 of an
// unambiguous, length-prefixed encoding of every field.
func (k InstallKey) Key() string {
	w := cache.NewKeyHash()
	w.Str("piship-runtime-key/v1")
	w.Str(k.ToolDigest)
	w.Bytes(k.Lock)
	w.Str(k.Platform)
	w.Str(k.Arch)
	w.Str(k.Libc)
	w.Str(k.Node)
	w.Str(k.Npm)
	return "i-" + w.Sum()[:cache.RuntimeKeyHex]
}

// BundleKey returns the key of a bundle made from the installed tree with
// key runtimeKey: "b-" and 20 hex digits over the runtime key, whether the
// tree was stripped, and the bundler's version.
func BundleKey(runtimeKey string, strip bool, esbuildVersion string) string {
	w := cache.NewKeyHash()
	w.Str("piship-bundle-key/v1")
	w.Str(runtimeKey)
	if strip {
		w.Uint(1)
	} else {
		w.Uint(0)
	}
	w.Str(esbuildVersion)
	return "b-" + w.Sum()[:cache.RuntimeKeyHex]
}

// FileRecord describes one file of an entry's tree.
type FileRecord struct {
	// Path is slash-separated and relative to the tree.
	Path string `json:"path"`
	// Size is the file's size in bytes (0 for a symbolic link).
	Size int64 `json:"size"`
	// Mode is 0644 or 0755 for a regular file, 0 for a symbolic link.
	Mode uint32 `json:"mode"`
	// SHA256 is the lowercase hex digest of a regular file's content.
	SHA256 string `json:"sha256,omitempty"`
	// Link is the target of a symbolic link ("" for a regular file).
	Link string `json:"link,omitempty"`
}

// Entry is a runtime cache entry.
type Entry struct {
	Key string
	// Dir is the tree: <root>/<key>/tree. Never write into it.
	Dir string
	// Digest is the sha256 hex over the canonical list of Dirs and Files:
	// the identity of the tree's content (for build provenance).
	Digest string
	// Dirs lists every directory below the tree (not the tree itself),
	// slash-separated, sorted.
	Dirs []string
	// Files lists every regular file and symbolic link, sorted by Path.
	Files []FileRecord
	// Inputs are the named inputs the manifest recorded (nil for older
	// entries).
	Inputs cache.Inputs

	// noLink makes Place copy every file (tests and benchmarks).
	noLink bool
}

// runtimeManifest is the on-disk form of manifest.json.
type runtimeManifest struct {
	Schema  string       `json:"schema"`
	Key     string       `json:"key"`
	Created string       `json:"created"`
	Dirs    []string     `json:"dirs"`
	Files   []FileRecord `json:"files"`
	Digest  string       `json:"digest"`
	// Inputs are the named inputs of the key (informational: not part of
	// the tree digest; entries made before they were recorded have none).
	Inputs cache.Inputs `json:"inputs,omitempty"`
}

// treeDigest is the canonical digest of a tree listing.
func treeDigest(dirs []string, files []FileRecord) string {
	w := cache.NewKeyHash()
	w.Str("piship-runtime-tree/v1")
	w.Uint(uint64(len(dirs)))
	for _, d := range dirs {
		w.Str(d)
	}
	w.Uint(uint64(len(files)))
	for _, f := range files {
		w.Str(f.Path)
		w.Uint(uint64(f.Size))
		w.Uint(uint64(f.Mode))
		w.Str(f.SHA256)
		w.Str(f.Link)
	}
	return w.Sum()
}

func (r *Cache) entryDir(key string) string { return filepath.Join(r.root, key) }
