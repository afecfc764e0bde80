// Package payload holds the file-level work of assembling a distribution
// payload: stripping, pruning by platform, hashing the inventory, writing the
// launch shims, and the staging directory that is renamed into place only
// when complete.
//
// Rule for everything here: files in a payload under construction may be
// hardlinks into the immutable runtime cache, so existing files are only
// ever deleted or replaced by rename, never opened for writing.
package payload

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	par "piship.dev/piship/cache/parallel"
	"piship.dev/piship/stages/stage/errcode"
)

// File is one regular file of a payload.
type File struct {
	Path string // slash-separated, relative to the payload root
	Size int64
}

// Walk lists the regular files under root, sorted by path. Symlinks and
// special files are refused: a payload is plain files and directories.
func Walk(root string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if !d.Type().IsRegular() {
			return errcode.Newf(errcode.ConfigInvalid, "payload file %s is a %s, not a regular file: payloads hold only files and directories", rel, kindOf(d.Type()))
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, File{Path: rel, Size: info.Size()})
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, err
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// Known is a digest recorded elsewhere (the runtime cache manifest, the
// previous inventory) for a file that was placed unchanged; Inventory
// trusts it when the size matches (Size -1: not recorded, not checked).
type Known struct {
	Size   int64
	SHA256 string
}

// InventoryName is the inventory's path inside a payload.
const InventoryName = "metadata/inventory.json"

// Stats describes an inventory run.
type Stats struct {
	Files  int
	Bytes  int64
	Hashed int // files read and hashed; the rest came from known digests
}

// Inventory returns path -> sha256 for every regular file under root except
// the inventory itself, hashing with parallel readers. Files listed in known
// with the same size take the recorded digest instead of being read again.
func Inventory(ctx context.Context, root string, known map[string]Known) (map[string]string, Stats, error) {
	files, err := Walk(root)
	if err != nil {
		return nil, Stats{}, err
	}
	inv := make(map[string]string, len(files))
	var st Stats
	var todo []File
	for _, f := range files {
		if f.Path == InventoryName {
			continue
		}
		st.Files++
		st.Bytes += f.Size
		if k, ok := known[f.Path]; ok && (k.Size == f.Size || k.Size < 0) && k.SHA256 != "" {
			inv[f.Path] = k.SHA256
			continue
		}
		todo = append(todo, f)
	}
	st.Hashed = len(todo)
	paths := make([]string, len(todo))
	for i, f := range todo {
		paths[i] = f.Path
	}
	sums, err := HashFiles(ctx, root, paths)
	if err != nil {
		return nil, st, err
	}
	for i, f := range todo {
		inv[f.Path] = sums[i]
	}
	return inv, st, nil
}

// InventoryDigest is the sha256 of the inventory file's bytes.
func InventoryDigest(data []byte) string { return canon.SHA256Hex(data) }

// HashFiles returns the sha256 of each file (slash paths relative to
// dir), read by parallel workers; sums[i] belongs to files[i].
func HashFiles(ctx context.Context, dir string, files []string) ([]string, error) {
	sums := make([]string, len(files))
	err := parallel(ctx, len(files), func(i int) error {
		s, err := cache.HashFile(filepath.Join(dir, filepath.FromSlash(files[i])))
		sums[i] = s
		return err
	})
	return sums, err
}

// parallel runs fn for 0..n-1 on up to 8 workers, stopping at the first
// error or when ctx is cancelled.
func parallel(ctx context.Context, n int, fn func(i int) error) error {
	return par.ForEach(ctx, n, min(8, max(2, runtime.NumCPU()*2)), fn)
}

// stripSuffixes are what a running Node process never reads.
var stripSuffixes = []string{".map", ".d.ts", ".d.mts", ".d.cts"}

// Strip removes source maps and TypeScript declarations below dir and
// returns how many files and bytes went. Everything else stays (Markdown
// included: Pi embeds prompt templates).
func Strip(ctx context.Context, dir string) (removed int, bytes int64, err error) {
	var victims []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strippable(d.Name()) {
			info, err := d.Info()
			if err != nil {
				return err
			}
			bytes += info.Size()
			victims = append(victims, p)
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	err = parallel(ctx, len(victims), func(i int) error { return os.Remove(victims[i]) })
	return len(victims), bytes, err
}

func strippable(name string) bool {
	for _, s := range stripSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// Shim writes bin/<command>, a POSIX sh launcher that runs node on the
// entry (relative to the payload root) with the user's arguments, and for a
// win32 target also bin/<command>.cmd. Each of extensions (a vendored Pi
// package's directory, relative to the root) is handed to the program
// before the user's arguments as -e <dir>, as the installed launcher does.
func Shim(root, command, entry, platform string, extensions ...string) ([]string, error) {
	return ShimNode(root, command, entry, platform, "", extensions...)
}

// ShimNode is Shim for a payload that ships its own Node (the node block):
// node is its path relative to the root (node/bin/node, node/node.exe),
// which the shims run instead of the node on PATH; "" is Shim.
func ShimNode(root, command, entry, platform, node string, extensions ...string) ([]string, error) {
	run, runCmd := "node", "node"
	if node != "" {
		run = fmt.Sprintf(`"$root/%s"`, node)
		runCmd = fmt.Sprintf(`"%%~dp0..\%s"`, strings.ReplaceAll(node, "/", "\\"))
	}
	ext, extCmd := "", ""
	for _, e := range extensions {
		ext += fmt.Sprintf(` -e "$root/%s"`, e)
		extCmd += fmt.Sprintf(` -e "%%~dp0..\%s"`, strings.ReplaceAll(e, "/", "\\"))
	}
	sh := fmt.Sprintf(`#!/bin/sh
# piship launcher: runs the payload's entry with node.
self=$0
while [ -h "$self" ]; do
  link=$(readlink "$self")
  case $link in /*) self=$link ;; *) self=$(dirname -- "$self")/$link ;; esac
done
root=$(CDPATH= cd -- "$(dirname -- "$self")/.." && pwd) || exit 1
exec %s "$root/%s"%s "$@"
`, run, entry, ext)
	written := []string{"bin/" + command}
	if err := atomicfs.WriteFileAll(filepath.Join(root, "bin", command), []byte(sh), 0o755); err != nil {
		return nil, err
	}
	if platform == "win32" {
		cmd := fmt.Sprintf("@echo off\r\n%s \"%%~dp0..\\%s\"%s %%*\r\n", runCmd, strings.ReplaceAll(entry, "/", "\\"), extCmd)
		if err := atomicfs.WriteFileAll(filepath.Join(root, "bin", command+".cmd"), []byte(cmd), 0o644); err != nil {
			return nil, err
		}
		written = append(written, "bin/"+command+".cmd")
	}
	return written, nil
}

// ErrNotEmpty is returned when a destination that must be new exists.
var ErrNotEmpty = errors.New("destination exists and is not empty")

// Verify checks a payload against its inventory: the same set of regular
// files, each with the recorded sha256. It names the first few differences.
func Verify(ctx context.Context, root string) error {
	var want map[string]string
	if err := canon.ReadJSON(filepath.Join(root, filepath.FromSlash(InventoryName)), &want); err != nil {
		return errcode.Newf(errcode.IntegrityFailed, "%s has no readable inventory: %v", root, err)
	}
	got, _, err := Inventory(ctx, root, nil)
	if err != nil {
		return errcode.Newf(errcode.IntegrityFailed, "%v", err)
	}
	var diffs []string
	for p, sum := range want {
		if g, ok := got[p]; !ok {
			diffs = append(diffs, "missing "+p)
		} else if g != sum {
			diffs = append(diffs, "changed "+p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, "unexpected "+p)
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	sort.Strings(diffs)
	if len(diffs) > 5 {
		diffs = append(diffs[:5], fmt.Sprintf("and %d more", len(diffs)-5))
	}
	return errcode.Newf(errcode.IntegrityFailed, "%s does not match its inventory: %s", root, strings.Join(diffs, ", "))
}
