// Package searchtools bundles Pi's search tools (fd, rg) from their pinned
// upstream release archives: Fetch keeps each archive in
// <piship cache>/search-tools/<sha256>.<format>, checked against its pin
// while it is written, so a cache seeded with the archives serves a
// release offline; Executable takes the tool's executable out of an
// archive in upstream's layout (<name>-<version>-<target>/fd).
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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/stage/errcode"
)

// DirName is the cache directory of the archives, under the piship cache.
const DirName = "search-tools"

// MaxArchive bounds an archive's size (fd and rg are a few MB).
const MaxArchive = 256 << 20

// Client fetches archives; tests swap it.
var Client = &http.Client{Timeout: 5 * time.Minute}

// CachePath is where the archive pinned to a lives in the cache.
func CachePath(cacheHome string, a distribution.SearchArchive) string {
	return filepath.Join(cacheHome, DirName, a.SHA256+"."+a.Format())
}

// Fetch returns the path of the archive a in the cache, downloading it
// first when it is not there. A cached file whose digest is not its name's
// is removed and fetched again; a download is checked against the pin
// before it is renamed into place, so the cache never holds a wrong
// archive. fromCache says whether it was there.
func Fetch(ctx context.Context, cacheHome string, a distribution.SearchArchive) (file string, fromCache bool, err error) {
	file = CachePath(cacheHome, a)
	if sum, err := hashFile(file); err == nil {
		if sum == a.SHA256 {
			return file, true, nil
		}
		os.Remove(file)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, errcode.Newf(errcode.ConfigUnavailable, "cannot read %s: %v", file, err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", false, errcode.Newf(errcode.ConfigUnavailable, "cannot create %s: %v", filepath.Dir(file), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL, nil)
	if err != nil {
		return "", false, errcode.Newf(errcode.ConfigInvalid, "%s: %v", a.URL, err)
	}
	resp, err := Client.Do(req)
	if err != nil {
		return "", false, errcode.Newf(errcode.NetworkDenied, "cannot download %s: %v: put the archive (sha256 %s) at %s to release offline", a.URL, err, a.SHA256, file)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", false, errcode.Newf(errcode.NetworkDenied, "%s answered %s: put the archive (sha256 %s) at %s to release offline", a.URL, resp.Status, a.SHA256, file)
	}
	f, err := atomicfs.Create(file, 0o644, atomicfs.Options{})
	if err != nil {
		return "", false, errcode.Newf(errcode.ConfigUnavailable, "%v", err)
	}
	defer f.Abort()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(resp.Body, MaxArchive+1))
	if err != nil {
		return "", false, errcode.Newf(errcode.NetworkDenied, "downloading %s: %v", a.URL, err)
	}
	if n > MaxArchive {
		return "", false, errcode.Newf(errcode.IntegrityFailed, "%s is larger than %d bytes: check the URL", a.URL, MaxArchive)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != a.SHA256 {
		return "", false, errcode.Newf(errcode.IntegrityFailed, "%s has sha256 %s, distribution.hcl pins %s: nothing was kept; check the asset, then update the pin and run piship lock", a.URL, got, a.SHA256)
	}
	if err := f.Commit(); err != nil {
		return "", false, errcode.Newf(errcode.ConfigUnavailable, "%v", err)
	}
	return file, false, nil
}

// Executable reads the one regular file named name (fd, rg.exe ...) out
// of the archive at file: at its top or in one directory below it, as
// upstream lays its assets out. None, or more than one, is an error.
func Executable(file, format, name string) ([]byte, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
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
			return nil, fmt.Errorf("%s is not a zip archive: %v", file, err)
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
			return nil, fmt.Errorf("%s is not a .tar.gz archive: %v", file, err)
		}
		tr := tar.NewReader(zr)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %v", file, err)
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
	file, cached, err := Fetch(ctx, cacheHome, a)
	if err != nil {
		return 0, false, fmt.Errorf("search tool %s: %w", t.Name, err)
	}
	exe := t.Executable(target)
	data, err := Executable(file, a.Format(), exe)
	if err != nil {
		return 0, cached, errcode.Newf(errcode.IntegrityFailed, "search tool %s (%s): %v: check search_tools.%s.%s", t.Name, a.URL, err, t.Name, target)
	}
	if err := atomicfs.WriteFileAll(filepath.Join(dest, "tools", exe), data, 0o755); err != nil {
		return 0, cached, err
	}
	return int64(len(data)), cached, nil
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
