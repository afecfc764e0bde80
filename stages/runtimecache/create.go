package runtimecache

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"piship.dev/piship/cache"
)

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
func (r *Cache) Create(key string, fill func(dir string) error) (*Entry, error) {
	return r.CreateInputs(key, nil, fill)
}

// CreateInputs is Create recording the named inputs of key in the entry's
// manifest (see Inputs).
func (r *Cache) CreateInputs(key string, inputs cache.Inputs, fill func(dir string) error) (*Entry, error) {
	if err := cache.CheckRuntimeKey(key); err != nil {
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
			r.push(key)
			return &Entry{Key: key, Dir: filepath.Join(edir, runtimeTreeName), Digest: m.Digest, Dirs: dirs, Files: files, Inputs: inputs}, nil
		}
		if _, serr := os.Lstat(edir); serr != nil {
			return nil, fmt.Errorf("cache: creating runtime entry %s: %w", key, err)
		}
		// A concurrent Create won: keep its entry, unless it is damaged
		// (then Get removed it and ours takes its place).
		e, gerr := r.get(key, false, nil)
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
	size, sum, err := cache.HashReader(f)
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
