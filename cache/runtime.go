package cache

// The runtime cache keeps installed dependency trees (the result of `npm ci`
// for a distribution's runtime lock) and bundles made from them, so that a
// release whose runtime inputs did not change places a tree it already has
// instead of installing it again.
//
// # Layout
//
// The runtime cache lives in <home>/runtime (home from Home):
//
//	runtime/
//	  i-<20 hex>/             an installed dependency tree (RuntimeKey.Key)
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
// and reported as a *DamagedError so the caller logs it and rebuilds.
//
// Removal (damage, eviction) always renames the entry aside first, so a
// reader sees a complete entry or none; what a time budget leaves of a
// set-aside directory is deleted by the next Evict.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
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
	// runtimeKeyHex is how many hex digits of a sha256 a runtime key keeps.
	runtimeKeyHex = 20
)

// Runtime is the runtime cache rooted at <home>/runtime. It holds no state
// besides its root, so any number of Runtime values, in any number of
// processes, may use one root at once.
type Runtime struct {
	root string
	now  func() time.Time
}

// OpenRuntime returns the runtime cache under home (see Home). Nothing is
// created until the first Create.
func OpenRuntime(home string) *Runtime {
	return &Runtime{root: filepath.Join(home, "runtime"), now: time.Now}
}

// Root returns the cache's root directory, <home>/runtime.
func (r *Runtime) Root() string { return r.root }

// Explain returns the explain area of the same cache home (explain.go).
func (r *Runtime) Explain() *Explain { return OpenExplain(filepath.Dir(r.root)) }

// RuntimeKey is everything that decides an installed dependency tree.
type RuntimeKey struct {
	// ToolDigest identifies the piship build (see ToolDigest).
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
func (k RuntimeKey) Key() string {
	w := newLPWriter()
	w.str("piship-runtime-key/v1")
	w.str(k.ToolDigest)
	w.bytes(k.Lock)
	w.str(k.Platform)
	w.str(k.Arch)
	w.str(k.Libc)
	w.str(k.Node)
	w.str(k.Npm)
	return "i-" + w.sum()[:runtimeKeyHex]
}

// BundleKey returns the key of a bundle made from the installed tree with
// key runtimeKey: "b-" and 20 hex digits over the runtime key, whether the
// tree was stripped, and the bundler's version.
func BundleKey(runtimeKey string, strip bool, esbuildVersion string) string {
	w := newLPWriter()
	w.str("piship-bundle-key/v1")
	w.str(runtimeKey)
	if strip {
		w.uint(1)
	} else {
		w.uint(0)
	}
	w.str(esbuildVersion)
	return "b-" + w.sum()[:runtimeKeyHex]
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
	Inputs Inputs

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
	Inputs Inputs `json:"inputs,omitempty"`
}

// treeDigest is the canonical digest of a tree listing.
func treeDigest(dirs []string, files []FileRecord) string {
	w := newLPWriter()
	w.str("piship-runtime-tree/v1")
	w.uint(uint64(len(dirs)))
	for _, d := range dirs {
		w.str(d)
	}
	w.uint(uint64(len(files)))
	for _, f := range files {
		w.str(f.Path)
		w.uint(uint64(f.Size))
		w.uint(uint64(f.Mode))
		w.str(f.SHA256)
		w.str(f.Link)
	}
	return w.sum()
}

// isRuntimeKey reports whether s is a runtime cache key: a lowercase
// letter, '-', and 20 lowercase hex digits.
func isRuntimeKey(s string) bool {
	if len(s) != 2+runtimeKeyHex || s[0] < 'a' || s[0] > 'z' || s[1] != '-' {
		return false
	}
	return isDigest(s[2:] + strings.Repeat("0", 64-runtimeKeyHex))
}

func checkRuntimeKey(key string) error {
	if !isRuntimeKey(key) {
		return fmt.Errorf("cache: invalid runtime cache key %q: want a letter, '-' and 20 lowercase hex digits (e.g. from RuntimeKey.Key)", key)
	}
	return nil
}

func (r *Runtime) entryDir(key string) string { return filepath.Join(r.root, key) }

// Create builds the entry for key. fill populates a fresh, empty directory
// (<root>/.tmp-<key>-*/tree: inside the cache root, so on the cache's
// filesystem) — typically by running npm ci there. Then every file is
// walked and hashed, regular files are given mode 0644 or 0755 (0755 when
// any execute bit was set), a manifest is written, and the directory is
// renamed into place as <root>/<key>.
//
// The tree may hold directories, regular files and symbolic links whose
// target is relative, clean and inside the tree (an entry must be
// self-contained: it is placed elsewhere). Anything else — a device, a
// socket, an absolute link, a link leaving the tree such as the link npm
// makes for a `file:` dependency on a directory outside it — fails Create.
//
// If fill fails, its error is returned wrapped (errors.Is sees it) and
// nothing is kept. If an entry for key appeared meanwhile (a concurrent
// Create won), the existing one is kept and returned.
func (r *Runtime) Create(key string, fill func(dir string) error) (*Entry, error) {
	return r.CreateInputs(key, nil, fill)
}

// CreateInputs is Create recording the named inputs of key in the entry's
// manifest (see Inputs).
func (r *Runtime) CreateInputs(key string, inputs Inputs, fill func(dir string) error) (*Entry, error) {
	if err := checkRuntimeKey(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.root, 0o777); err != nil {
		return nil, fmt.Errorf("cache: creating runtime cache directory: %w", err)
	}
	tmp, err := os.MkdirTemp(r.root, runtimeTmpPrefix+key+"-")
	if err != nil {
		return nil, fmt.Errorf("cache: creating runtime entry %s: %w", key, err)
	}
	defer func() {
		if tmp != "" {
			removeAside(r.root, tmp)
		}
	}()
	tree := filepath.Join(tmp, runtimeTreeName)
	if err := os.Mkdir(tree, 0o777); err != nil {
		return nil, fmt.Errorf("cache: creating runtime entry %s: %w", key, err)
	}
	if err := fill(tree); err != nil {
		return nil, fmt.Errorf("cache: creating runtime entry %s: %w", key, err)
	}
	dirs, files, err := recordTree(tree)
	if err != nil {
		return nil, fmt.Errorf("cache: creating runtime entry %s: %w", key, err)
	}
	m := runtimeManifest{
		Schema:  runtimeSchemaV1,
		Key:     key,
		Created: r.now().UTC().Format(time.RFC3339Nano),
		Dirs:    dirs,
		Files:   files,
		Digest:  treeDigest(dirs, files),
		Inputs:  inputs,
	}
	data, err := json.Marshal(&m)
	if err != nil {
		return nil, fmt.Errorf("cache: creating runtime entry %s: %w", key, err)
	}
	data = append(data, '\n')
	if err := os.WriteFile(filepath.Join(tmp, runtimeManifestName), data, 0o666); err != nil {
		return nil, fmt.Errorf("cache: creating runtime entry %s: %w", key, err)
	}

	edir := r.entryDir(key)
	for attempt := 0; ; attempt++ {
		err := renameRetry(tmp, edir)
		if err == nil {
			tmp = ""
			now := r.now()
			_ = os.Chtimes(edir, now, now) // best effort: eviction order
			return &Entry{Key: key, Dir: filepath.Join(edir, runtimeTreeName), Digest: m.Digest, Dirs: dirs, Files: files, Inputs: inputs}, nil
		}
		if _, serr := os.Lstat(edir); serr != nil {
			return nil, fmt.Errorf("cache: creating runtime entry %s: %w", key, err)
		}
		// A concurrent Create won: keep its entry, unless it is damaged
		// (then Get removed it and ours takes its place).
		e, gerr := r.Get(key, false)
		if e != nil {
			return e, nil
		}
		if attempt >= 2 {
			if gerr == nil {
				gerr = err
			}
			return nil, fmt.Errorf("cache: creating runtime entry %s: %w", key, gerr)
		}
	}
}

// recordTree walks a freshly filled tree, normalises modes and returns its
// sorted listing with every regular file hashed.
func recordTree(tree string) (dirs []string, files []FileRecord, err error) {
	var regular []int // indexes into files that need hashing
	err = filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == tree {
			return nil
		}
		rel, err := filepath.Rel(tree, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch t := d.Type(); {
		case t.IsDir():
			if err := normaliseDirMode(p, d); err != nil {
				return err
			}
			dirs = append(dirs, rel)
		case t.IsRegular():
			regular = append(regular, len(files))
			files = append(files, FileRecord{Path: rel})
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := checkLinkTarget(rel, target); err != nil {
				return err
			}
			files = append(files, FileRecord{Path: rel, Link: target})
		default:
			return fmt.Errorf("%s is not a regular file, directory or symbolic link (mode %s)", rel, t)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	err = parallel(len(regular), func(i int) error {
		f := &files[regular[i]]
		p := filepath.Join(tree, filepath.FromSlash(f.Path))
		size, sum, mode, err := hashRegular(p)
		if err != nil {
			return err
		}
		f.Size, f.SHA256, f.Mode = size, sum, mode
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(dirs)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return dirs, files, nil
}

// normaliseDirMode makes a directory of the tree 0755 (so that it can be
// walked and, later, deleted).
func normaliseDirMode(p string, d fs.DirEntry) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	info, err := d.Info()
	if err != nil {
		return err
	}
	if info.Mode().Perm() != 0o755 {
		return os.Chmod(p, 0o755)
	}
	return nil
}

// hashRegular hashes a regular file of a tree being recorded, gives it the
// normalised mode (0755 if any execute bit is set, else 0644) and returns
// its size, sha256 and that mode.
func hashRegular(p string) (int64, string, uint32, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, "", 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, "", 0, err
	}
	if !info.Mode().IsRegular() {
		return 0, "", 0, fmt.Errorf("%s changed while it was recorded", p)
	}
	mode := normalMode(info.Mode())
	if runtime.GOOS != "windows" && uint32(info.Mode().Perm()) != mode {
		if err := f.Chmod(fs.FileMode(mode)); err != nil {
			return 0, "", 0, err
		}
	}
	size, sum, err := hashReader(f)
	if err != nil {
		return 0, "", 0, fmt.Errorf("hashing %s: %w", p, err)
	}
	return size, sum, mode, nil
}

// normalMode is the recorded mode of a regular file with mode m.
func normalMode(m fs.FileMode) uint32 {
	if m.Perm()&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// checkLinkTarget accepts a symbolic link at rel (slash-separated, relative
// to the tree) only if its target is relative, clean and, resolved from the
// link's directory, inside the tree. Clean targets have ".." only as
// leading elements, which resolve from the link's physical directory just
// as they do lexically, so a tree whose every link passes stays
// self-contained however links chain.
func checkLinkTarget(rel, target string) error {
	t := filepath.ToSlash(target)
	bad := func(why string) error {
		return fmt.Errorf("symbolic link %s -> %s %s: a cached tree must be self-contained "+
			"(a `file:` dependency on a directory outside the project is installed as such a link; depend on a tarball made with `npm pack` instead)", rel, target, why)
	}
	switch {
	case t == "" || path.IsAbs(t) || filepath.IsAbs(target) || filepath.VolumeName(target) != "":
		return bad("is absolute or empty")
	case path.Clean(t) != t:
		return bad("is not clean")
	}
	resolved := path.Join(path.Dir(rel), t)
	if resolved == ".." || strings.HasPrefix(resolved, "../") {
		return bad("leaves the tree")
	}
	return nil
}

// Get returns the entry for key if it exists and is trustworthy, refreshing
// its mtime (eviction order).
//
// Verification is cheap on purpose: the manifest must parse and its digest
// match, and the tree on disk must hold exactly the listed directories and
// files, each with the listed size and mode (symbolic links: target). With
// verifyContent (bundle entries) every regular file is also re-hashed.
//
// A missing entry is (nil, nil). A damaged one is removed (renamed aside,
// then deleted) and reported as (nil, *DamagedError): log it and rebuild.
// An entry that disappears while it is being checked (a concurrent Evict)
// is a plain miss.
func (r *Runtime) Get(key string, verifyContent bool) (*Entry, error) {
	if err := checkRuntimeKey(key); err != nil {
		return nil, err
	}
	edir := r.entryDir(key)
	info, err := os.Lstat(edir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cache: looking up runtime entry %s: %w", key, err)
	}
	if !info.IsDir() {
		return r.damaged(key, edir, info, &DamagedError{Reason: "not a directory"})
	}
	m, d := readRuntimeManifest(key, edir)
	if d != nil {
		return r.damaged(key, edir, info, d)
	}
	e := &Entry{Key: key, Dir: filepath.Join(edir, runtimeTreeName), Digest: m.Digest, Dirs: m.Dirs, Files: m.Files, Inputs: m.Inputs}
	if d := e.checkTree(); d != nil {
		return r.damaged(key, edir, info, d)
	}
	if verifyContent {
		if d := e.checkContent(); d != nil {
			return r.damaged(key, edir, info, d)
		}
	}
	now := r.now()
	_ = os.Chtimes(edir, now, now) // best effort: only affects eviction order
	return e, nil
}

// damaged removes a damaged entry and reports it; if the entry vanished or
// was replaced while it was checked, that is a miss.
func (r *Runtime) damaged(key, edir string, seen fs.FileInfo, d *DamagedError) (*Entry, error) {
	if now, err := os.Lstat(edir); err != nil || !os.SameFile(seen, now) {
		return nil, nil
	}
	d.Key, d.Dir = key, edir
	d.RemoveErr = removeAside(r.root, edir)
	return nil, d
}

// removeAside removes dir (a direct child of root) by renaming it to a
// .del- name first, so that nobody sees it half deleted. A dir that is
// already gone is not an error.
func removeAside(root, dir string) error {
	trash := filepath.Join(root, runtimeDelPrefix+filepath.Base(dir)+"-"+randomHex())
	if err := renameRetry(dir, trash); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		trash = dir // could not move it aside: delete in place
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("cache: removing %s: %w", dir, err)
	}
	return nil
}

// readRuntimeManifest reads and checks an entry's manifest.json.
func readRuntimeManifest(key, edir string) (*runtimeManifest, *DamagedError) {
	data, err := os.ReadFile(filepath.Join(edir, runtimeManifestName))
	if err != nil {
		return nil, &DamagedError{Reason: "reading " + runtimeManifestName, Err: err}
	}
	var m runtimeManifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, &DamagedError{Reason: "malformed " + runtimeManifestName, Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &DamagedError{Reason: "malformed " + runtimeManifestName + ": trailing data"}
	}
	bad := func(format string, args ...any) (*runtimeManifest, *DamagedError) {
		return nil, &DamagedError{Reason: runtimeManifestName + ": " + fmt.Sprintf(format, args...)}
	}
	if m.Schema != runtimeSchemaV1 {
		return bad("unknown schema %q (want %q)", m.Schema, runtimeSchemaV1)
	}
	if m.Key != key {
		return bad("written for key %q", m.Key)
	}
	if _, err := time.Parse(time.RFC3339Nano, m.Created); err != nil {
		return bad("malformed created time %q", m.Created)
	}
	if sum := treeDigest(m.Dirs, m.Files); sum != m.Digest {
		return bad("digest mismatch (recorded %q, computed %s)", m.Digest, sum)
	}
	dirSet := make(map[string]bool, len(m.Dirs))
	for i, d := range m.Dirs {
		if checkOutputPath(d) != nil || i > 0 && m.Dirs[i-1] >= d {
			return bad("invalid or unsorted directory %q", d)
		}
		if p := path.Dir(d); p != "." && !dirSet[p] {
			return bad("directory %q without its parent", d)
		}
		dirSet[d] = true
	}
	for i, f := range m.Files {
		if checkOutputPath(f.Path) != nil || i > 0 && m.Files[i-1].Path >= f.Path {
			return bad("invalid or unsorted file %q", f.Path)
		}
		if p := path.Dir(f.Path); p != "." && !dirSet[p] || dirSet[f.Path] {
			return bad("file %q outside the listed directories", f.Path)
		}
		if f.Link != "" {
			if f.Size != 0 || f.Mode != 0 || f.SHA256 != "" || checkLinkTarget(f.Path, f.Link) != nil {
				return bad("invalid symbolic link record %q", f.Path)
			}
		} else if f.Size < 0 || f.Mode != 0o644 && f.Mode != 0o755 || !isDigest(f.SHA256) {
			return bad("invalid file record %q", f.Path)
		}
	}
	return &m, nil
}

// checkTree compares the tree on disk with the listing: same directories,
// same files, each with the listed type, size, mode and link target. The
// directories are read in parallel.
func (e *Entry) checkTree() *DamagedError {
	dirSet := make(map[string]bool, len(e.Dirs))
	for _, d := range e.Dirs {
		dirSet[d] = true
	}
	fileIdx := make(map[string]int, len(e.Files))
	for i, f := range e.Files {
		fileIdx[f.Path] = i
	}
	var found atomic.Int64
	dirs := append([]string{"."}, e.Dirs...)
	err := parallel(len(dirs), func(i int) error {
		rel := dirs[i]
		f, err := os.Open(filepath.Join(e.Dir, filepath.FromSlash(rel)))
		if err != nil {
			return &DamagedError{Reason: fmt.Sprintf("reading directory %q", rel), Err: err}
		}
		infos, err := f.Readdir(-1)
		f.Close()
		if err != nil {
			return &DamagedError{Reason: fmt.Sprintf("reading directory %q", rel), Err: err}
		}
		for _, info := range infos {
			p := info.Name()
			if rel != "." {
				p = rel + "/" + p
			}
			if info.IsDir() {
				if !dirSet[p] {
					return &DamagedError{Reason: fmt.Sprintf("unlisted directory %q in the tree", p)}
				}
				continue
			}
			idx, ok := fileIdx[p]
			if !ok {
				return &DamagedError{Reason: fmt.Sprintf("unlisted file %q in the tree", p)}
			}
			if d := checkFile(e.Dir, &e.Files[idx], info); d != nil {
				return d
			}
			found.Add(1)
		}
		return nil
	})
	if err != nil {
		return err.(*DamagedError)
	}
	if n := found.Load(); n != int64(len(e.Files)) {
		return &DamagedError{Reason: fmt.Sprintf("%s %s missing from the tree", canon.Of(int64(len(e.Files))-n, int64(len(e.Files)), "listed file"), canon.Verb(int64(len(e.Files))-n, "is", "are"))}
	}
	return nil
}

// checkFile compares one file on disk (info from Lstat) with its record.
func checkFile(tree string, f *FileRecord, info fs.FileInfo) *DamagedError {
	if f.Link != "" {
		if info.Mode()&fs.ModeSymlink == 0 {
			return &DamagedError{Reason: fmt.Sprintf("%q is listed as a symbolic link but is not one", f.Path)}
		}
		target, err := os.Readlink(filepath.Join(tree, filepath.FromSlash(f.Path)))
		if err != nil {
			return &DamagedError{Reason: fmt.Sprintf("reading symbolic link %q", f.Path), Err: err}
		}
		if target != f.Link {
			return &DamagedError{Reason: fmt.Sprintf("symbolic link %q points to %q, listed %q", f.Path, target, f.Link)}
		}
		return nil
	}
	if !info.Mode().IsRegular() {
		return &DamagedError{Reason: fmt.Sprintf("%q is listed as a regular file but has mode %s", f.Path, info.Mode())}
	}
	if info.Size() != f.Size {
		return &DamagedError{Reason: fmt.Sprintf("%q has %d bytes, listed %d", f.Path, info.Size(), f.Size)}
	}
	if runtime.GOOS != "windows" && uint32(info.Mode().Perm()) != f.Mode {
		return &DamagedError{Reason: fmt.Sprintf("%q has mode %#o, listed %#o", f.Path, info.Mode().Perm(), f.Mode)}
	}
	return nil
}

// checkContent re-hashes every regular file of the tree, in parallel.
func (e *Entry) checkContent() *DamagedError {
	err := parallel(len(e.Files), func(i int) error {
		f := &e.Files[i]
		if f.Link != "" {
			return nil
		}
		in, err := os.Open(filepath.Join(e.Dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return &DamagedError{Reason: fmt.Sprintf("reading %q", f.Path), Err: err}
		}
		size, sum, err := hashReader(in)
		in.Close()
		if err != nil {
			return &DamagedError{Reason: fmt.Sprintf("reading %q", f.Path), Err: err}
		}
		if size != f.Size || sum != f.SHA256 {
			return &DamagedError{Reason: fmt.Sprintf("%q has sha256 %s (%d bytes), listed %s (%d bytes)", f.Path, sum, size, f.SHA256, f.Size)}
		}
		return nil
	})
	if err != nil {
		return err.(*DamagedError)
	}
	return nil
}

// Evict keeps the newest keep entries whose key starts with prefix ("i-":
// 3, "b-": 6), newest by entry mtime (Create sets it, a Get hit refreshes
// it), and removes the others: each is first set aside with one rename (so
// it is gone from the cache at once), then deleted. Deleting stops when
// budget is spent, checked every 64 unlinks; what is left is deleted by the
// next Evict. A budget <= 0 means no limit. Evict also sweeps temporary
// directories whose newest file is more than an hour old (killed writers).
//
// Evict never needs to fail a build: its errors are for logging only.
// An entry evicted while another process is placing it makes that Place
// fail (its files vanish); with keep >= 1 that needs more concurrent builds
// with distinct keys than keep.
func (r *Runtime) Evict(prefix string, keep int, budget time.Duration) error {
	if keep < 0 {
		return fmt.Errorf("cache: evict: negative keep %d", keep)
	}
	start := time.Now()
	des, err := os.ReadDir(r.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cache: evict: %w", err)
	}
	type item struct {
		name  string
		mtime time.Time
	}
	var (
		items []item
		trash []string
		errs  []error
	)
	setAside := func(name string) {
		p := filepath.Join(r.root, name)
		t := filepath.Join(r.root, runtimeDelPrefix+name+"-"+randomHex())
		if err := renameRetry(p, t); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("cache: evict: %w", err))
			}
			return
		}
		trash = append(trash, t)
	}
	now := r.now()
	for _, de := range des {
		name := de.Name()
		switch {
		case strings.HasPrefix(name, runtimeDelPrefix):
			trash = append(trash, filepath.Join(r.root, name))
		case strings.HasPrefix(name, runtimeTmpPrefix):
			info, err := de.Info()
			if err != nil || now.Sub(info.ModTime()) <= runtimeStaleTemp {
				continue
			}
			if latest, ok := newestMtime(filepath.Join(r.root, name)); ok && now.Sub(latest) > runtimeStaleTemp {
				setAside(name)
			}
		case strings.HasPrefix(name, prefix) && isRuntimeKey(name) && de.IsDir():
			info, err := de.Info()
			if err != nil {
				continue // removed meanwhile
			}
			items = append(items, item{name, info.ModTime()})
		}
	}
	sort.Slice(items, func(i, j int) bool {
		if !items[i].mtime.Equal(items[j].mtime) {
			return items[i].mtime.After(items[j].mtime)
		}
		return items[i].name > items[j].name
	})
	for i := keep; i < len(items); i++ {
		setAside(items[i].name)
	}
	rm := budgetRemover{}
	if budget > 0 {
		rm.deadline = start.Add(budget)
	}
	for _, t := range trash {
		done, err := rm.removeAll(t)
		if err != nil {
			errs = append(errs, fmt.Errorf("cache: evict: %w", err))
		}
		if !done {
			break
		}
	}
	return errors.Join(errs...)
}

// budgetRemover deletes trees, checking its deadline every 64 unlinks.
type budgetRemover struct {
	deadline time.Time // zero: no deadline
	unlinks  int
}

// unlinked counts one unlink and reports whether the budget allows more.
func (b *budgetRemover) unlinked() bool {
	b.unlinks++
	return b.unlinks%64 != 0 || b.deadline.IsZero() || time.Now().Before(b.deadline)
}

// removeAll deletes p and everything below it; done is false if the budget
// ran out first. What vanished meanwhile is not an error.
func (b *budgetRemover) removeAll(p string) (done bool, err error) {
	des, err := os.ReadDir(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		// Not a directory (or unreadable): try to remove it as it is.
		if rerr := os.Remove(p); rerr == nil || errors.Is(rerr, fs.ErrNotExist) {
			return b.unlinked(), nil
		}
		return true, err
	}
	for _, de := range des {
		c := filepath.Join(p, de.Name())
		if de.IsDir() {
			done, err := b.removeAll(c)
			if err != nil || !done {
				return done, err
			}
			continue
		}
		if err := os.Remove(c); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return true, err
		}
		if !b.unlinked() {
			return false, nil
		}
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, err
	}
	return b.unlinked(), nil
}

// renameRetry renames; on Windows it retries for about 4.5 s
// (atomicfs.CacheDelays) while the rename fails as a scanner or indexer
// holding a handle makes it fail (access denied, sharing violation),
// unless the destination exists. Elsewhere it fails at once.
func renameRetry(from, to string) error {
	r := atomicfs.DefaultRenamer(atomicfs.CacheDelays)
	r.StopIfExists = true
	return r.Do(from, to)
}
