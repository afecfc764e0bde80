// Package searchtools bundles Pi's search tools (fd, rg) from their pinned
// upstream release archives: Place keeps each archive in
// <piship cache>/search-tools/<sha256>.<format> (stages/pinned: checked
// against its pin before it is kept, so a cache seeded with the archives
// serves a release offline) and writes the tool's executable, which
// Executable takes out of an archive in upstream's layout
// (<name>-<version>-<target>/fd).
//
// What a launch does with the bundled executables (the copy into Pi's
// agent bin directory and its receipt) lives in stages/home/launch, which
// may import only the standard library.
package searchtools

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/pinned"
	"piship.dev/piship/stages/stage/errcode"
)

// DirName is the cache directory of the archives, under the piship cache.
const DirName = "search-tools"

// MaxArchive bounds an archive's size (fd and rg are a few MB).
const MaxArchive = 256 << 20

// CachePath is where the archive pinned to a lives in the cache.
func CachePath(cacheHome string, a distribution.SearchArchive) string {
	return filepath.Join(cacheHome, DirName, a.SHA256+"."+a.Format())
}

// Executable reads the one regular file named name (fd, rg.exe ...) out
// of the archive raw: at its top or in one directory below it, as
// upstream lays its assets out. None, or more than one, is an error.
func Executable(raw []byte, format, name string) ([]byte, error) {
	var found [][]byte
	var where []string
	keep := func(p string, r io.Reader, size int64) error {
		p = strings.TrimPrefix(path.Clean("/"+p), "/")
		if path.Base(p) != name || strings.Count(p, "/") > 1 {
			return nil
		}
		if size > MaxArchive {
			return fmt.Errorf("%s is larger than %d bytes", p, MaxArchive)
		}
		data, err := io.ReadAll(io.LimitReader(r, MaxArchive))
		if err != nil {
			return err
		}
		found, where = append(found, data), append(where, p)
		return nil
	}
	switch format {
	case "zip":
		zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
		if err != nil {
			return nil, fmt.Errorf("not a zip archive: %v", err)
		}
		for _, zf := range zr.File {
			if !zf.Mode().IsRegular() {
				continue
			}
			rc, err := zf.Open()
			if err != nil {
				return nil, err
			}
			err = keep(zf.Name, rc, int64(zf.UncompressedSize64))
			rc.Close()
			if err != nil {
				return nil, err
			}
		}
	default:
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("not a .tar.gz archive: %v", err)
		}
		tr := tar.NewReader(zr)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("reading the archive: %v", err)
			}
			if hdr.Typeflag != tar.TypeReg {
				continue
			}
			if err := keep(hdr.Name, tr, hdr.Size); err != nil {
				return nil, err
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("the archive holds no file %s at its top or one directory below it", name)
	case 1:
		return found[0], nil
	default:
		return nil, fmt.Errorf("the archive holds %d files named %s (%s): which one is the tool is not clear", len(found), name, strings.Join(where, ", "))
	}
}

// Place fetches tool t's archive for target and writes its executable to
// dest/tools/<executable> (mode 0755). It returns the bytes written and
// whether the archive came from the cache.
func Place(ctx context.Context, cacheHome string, t distribution.SearchTool, target, dest string) (int64, bool, error) {
	a, ok := t.Archives[target]
	if !ok {
		return 0, false, errcode.Newf(errcode.ConfigInvalid, "search_tools.%s has no archive for %s: add the upstream asset for it", t.Name, target)
	}
	raw, cached, err := pinned.Fetch(ctx, pinned.File{
		URL: a.URL, SHA256: a.SHA256, Path: CachePath(cacheHome, a), Max: MaxArchive,
		PinnedBy: "distribution.hcl", Fix: "check the asset, then update the pin and run piship lock",
	})
	if err != nil {
		return 0, false, fmt.Errorf("search tool %s: %w", t.Name, err)
	}
	exe := t.Executable(target)
	data, err := Executable(raw, a.Format(), exe)
	if err != nil {
		return 0, cached, errcode.Newf(errcode.IntegrityFailed, "search tool %s (%s): %v: check search_tools.%s.%s", t.Name, a.URL, err, t.Name, target)
	}
	if err := atomicfs.WriteFileAll(filepath.Join(dest, "tools", exe), data, 0o755); err != nil {
		return 0, cached, err
	}
	return int64(len(data)), cached, nil
}
