package delta

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/parallel"
	"piship.dev/piship/stages/archive"
)

// File is one regular file of a release directory.
type File struct {
	Path   string // slash path relative to the directory ("payload/a.js")
	Size   int64
	Exec   bool   // any execute bit set
	SHA256 string // lowercase hex
}

// Tree is a release directory's listing: every regular file and every
// directory (the root itself excluded), each list sorted by the bytes of
// its paths.
type Tree struct {
	Files []File
	Dirs  []string
}

// treeSchema opens the canonical encoding Digest hashes.
const treeSchema = "piship-tree/v1\n"

// Digest is the lowercase hex sha256 of the tree's canonical encoding:
// the line "piship-tree/v1", then one line per file in Files' order,
// "f <x|-> <sha256> <size> <path>" (x when executable, the size in
// decimal), then one line per directory in Dirs' order, "d <path>", every
// line ended by "\n". A path can hold neither "\n" nor any other control
// character (archive's path rules), so the encoding is unambiguous.
func (t Tree) Digest() string {
	h := sha256.New()
	io.WriteString(h, treeSchema)
	var line []byte
	for _, f := range t.Files {
		line = append(line[:0], "f "...)
		if f.Exec {
			line = append(line, 'x')
		} else {
			line = append(line, '-')
		}
		line = append(line, ' ')
		line = append(line, f.SHA256...)
		line = append(line, ' ')
		line = strconv.AppendInt(line, f.Size, 10)
		line = append(line, ' ')
		line = append(line, f.Path...)
		line = append(line, '\n')
		h.Write(line)
	}
	for _, d := range t.Dirs {
		line = append(append(append(line[:0], "d "...), d...), '\n')
		h.Write(line)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Bytes is the total size of the tree's files.
func (t Tree) Bytes() int64 {
	var n int64
	for _, f := range t.Files {
		n += f.Size
	}
	return n
}

// Executables are the paths of the executable files, sorted.
func (t Tree) Executables() []string {
	var out []string
	for _, f := range t.Files {
		if f.Exec {
			out = append(out, f.Path)
		}
	}
	return out
}

// walkTree lists dir without reading its files. It refuses
// (INTEGRITY_FAILED, ReasonTree) a symlink, a special file, and any path
// stages/archive's path rules refuse (archive.Names: what no archive may
// hold and no install would write), so a Tree is always one an archive
// could carry.
func walkTree(ctx context.Context, dir string, checkNames bool) (Tree, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return Tree{}, unavailable("cannot read the release directory: %w", err)
	}
	if !fi.IsDir() {
		return Tree{}, unavailable("%s is not a directory", dir)
	}
	var t Tree
	names := archive.NewNames()
	var visit func(abs, rel string) error
	visit = func(abs, rel string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		des, err := os.ReadDir(abs)
		if err != nil {
			return unavailable("cannot read %s: %w", abs, err)
		}
		for _, d := range des {
			name := rel + d.Name()
			if checkNames {
				if err := names.Check(name); err != nil {
					ae, _ := archive.IsIntegrity(err)
					return &Error{Reason: ReasonTree, Path: name, Rule: ae.Rule, Detail: fmt.Sprintf("%s, in %s", ae.Detail, dir)}
				}
			}
			p := filepath.Join(abs, d.Name())
			switch typ := d.Type(); {
			case typ.IsDir():
				t.Dirs = append(t.Dirs, name)
				if err := visit(p, name+"/"); err != nil {
					return err
				}
			case typ.IsRegular():
				info, err := d.Info()
				if err != nil {
					return unavailable("cannot read %s: %w", p, err)
				}
				if !info.Mode().IsRegular() {
					return &Error{Reason: ReasonTree, Path: name, Detail: fmt.Sprintf("%s is no longer a regular file", p)}
				}
				t.Files = append(t.Files, File{Path: name, Size: info.Size(), Exec: info.Mode().Perm()&0o111 != 0})
			case typ&fs.ModeSymlink != 0:
				return &Error{Reason: ReasonTree, Path: name, Detail: fmt.Sprintf("%s is a symlink: a release holds only regular files and directories", p)}
			default:
				return &Error{Reason: ReasonTree, Path: name, Detail: fmt.Sprintf("%s is %s: a release holds only regular files and directories", p, atomicfs.KindOf(typ))}
			}
		}
		return nil
	}
	if err := visit(dir, ""); err != nil {
		return Tree{}, err
	}
	slices.SortFunc(t.Files, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
	slices.Sort(t.Dirs)
	return t, nil
}

// ScanTree lists the tree in dir (walkTree's rules) and hashes every file
// on all cores. A file that changes size while it is hashed is an error.
func ScanTree(ctx context.Context, dir string) (Tree, error) {
	t, err := walkTree(ctx, dir, true)
	if err != nil {
		return Tree{}, err
	}
	err = parallel.ForEachWorker(ctx, len(t.Files), runtime.GOMAXPROCS(0), func() func(int) error {
		buf := make([]byte, 256<<10)
		return func(i int) error {
			f := &t.Files[i]
			sum, err := hashFile(filepath.Join(dir, filepath.FromSlash(f.Path)), f.Size, buf)
			if err != nil {
				return err
			}
			f.SHA256 = sum
			return nil
		}
	})
	if err != nil {
		return Tree{}, err
	}
	return t, nil
}

// hashFile hashes exactly size bytes of the regular file at p and fails
// if it has another size.
func hashFile(p string, size int64, buf []byte) (string, error) {
	f, err := atomicfs.OpenRegular(p)
	if err != nil {
		return "", unavailable("cannot read %s: %w", p, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, io.LimitReader(f, size), buf)
	if err != nil {
		return "", unavailable("cannot read %s: %w", p, err)
	}
	if m, _ := f.Read(buf[:1]); n != size || m != 0 {
		return "", unavailable("%s changed size while it was read", p)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
