// Package noderuntime is the pinned Node.js a release ships (the node
// block of distribution.hcl): Fetch keeps each target's archive in
// <piship cache>/node/<digest>.<format> (digest sha512-<hex> of an npm
// package's integrity, sha256-<hex> of a URL's pin), checked against its
// pin while it is written, so a cache seeded with the archives serves a
// release offline; Binary streams the node executable out of an archive
// in npm's layout (package/bin/node, package/bin/node.exe) or
// nodejs.org's (node-v<version>-<target>/bin/node, .../node.exe); Place
// writes it into a payload at distribution.NodePayloadPath, checked
// against the binary digest piship lock pinned (PinBinaries).
//
// What a start does with it (runs it, checked by fingerprint) lives in
// stages/home/launch, which may import only the standard library.
package noderuntime

import (
	"archive/tar"
	"archive/zip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/stage/errcode"
)

// DirName is the cache directory of the archives, under the piship cache.
const DirName = "node"

// MaxArchive bounds an archive's size, and MaxBinary the node executable's
// (Node 22's archives are ~50 MB, its executable ~120 MB).
const (
	MaxArchive = 512 << 20
	MaxBinary  = 512 << 20
)

// Client fetches archives; tests swap it.
var Client = &http.Client{Timeout: 15 * time.Minute}

// URL is where target's archive a is fetched from: its url, or for an npm
// package the registry's tarball of it at version (registry ends in "/").
func URL(a distribution.NodeArchive, version, registry string) string {
	if a.NPM != "" {
		return registry + a.NPM + "/-/" + a.NPM + "-" + version + ".tgz"
	}
	return a.URL
}

// CachePath is where archive a lives in the cache.
func CachePath(cacheHome string, a distribution.NodeArchive) string {
	return filepath.Join(cacheHome, DirName, a.Digest()+"."+a.Format())
}

// newHash is the hash a's pin is over and the pin in hex.
func newHash(a distribution.NodeArchive) (hash.Hash, string) {
	alg, want, _ := strings.Cut(a.Digest(), "-")
	if alg == "sha512" {
		return sha512.New(), want
	}
	return sha256.New(), want
}

// Fetch returns the path of archive a in the cache, downloading it first
// (from URL(a, version, registry)) when it is not there. A cached file
// whose digest is not its pin is removed and fetched again; a download is
// checked against the pin before it is renamed into place, so the cache
// never holds a wrong archive. fromCache says whether it was there.
func Fetch(ctx context.Context, cacheHome string, a distribution.NodeArchive, version, registry string) (file string, fromCache bool, err error) {
	file = CachePath(cacheHome, a)
	h, want := newHash(a)
	if want == "" {
		return "", false, errcode.Newf(errcode.ConfigInvalid, "the Node archive %+v has no usable digest: check the node block and run piship lock", a)
	}
	if f, err := os.Open(file); err == nil {
		_, cerr := io.Copy(h, f)
		f.Close()
		if cerr == nil && hex.EncodeToString(h.Sum(nil)) == want {
			return file, true, nil
		}
		os.Remove(file)
		h.Reset()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, errcode.Newf(errcode.ConfigUnavailable, "cannot read %s: %v", file, err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", false, errcode.Newf(errcode.ConfigUnavailable, "cannot create %s: %v", filepath.Dir(file), err)
	}
	u := URL(a, version, registry)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", false, errcode.Newf(errcode.ConfigInvalid, "%s: %v", u, err)
	}
	resp, err := Client.Do(req)
	if err != nil {
		return "", false, errcode.Newf(errcode.NetworkDenied, "cannot download Node from %s: %v: put the archive (%s) at %s to release offline", u, err, a.Digest(), file)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", false, errcode.Newf(errcode.NetworkDenied, "%s answered %s: put the Node archive (%s) at %s to release offline", u, resp.Status, a.Digest(), file)
	}
	f, err := atomicfs.Create(file, 0o644, atomicfs.Options{})
	if err != nil {
		return "", false, errcode.Newf(errcode.ConfigUnavailable, "%v", err)
	}
	defer f.Abort()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(resp.Body, MaxArchive+1))
	if err != nil {
		return "", false, errcode.Newf(errcode.NetworkDenied, "downloading %s: %v", u, err)
	}
	if n > MaxArchive {
		return "", false, errcode.Newf(errcode.IntegrityFailed, "%s is larger than %d bytes: check the node block", u, MaxArchive)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return "", false, errcode.Newf(errcode.IntegrityFailed, "%s has digest %s, distribution.hcl pins %s: nothing was kept; check the archive, then update the node block's pin and run piship lock", u, got, want)
	}
	if err := f.Commit(); err != nil {
		return "", false, errcode.Newf(errcode.ConfigUnavailable, "%v", err)
	}
	return file, false, nil
}

// Binary finds the one regular file named exe (node, node.exe) at the
// archive's top, in its top directory or in a bin/ one level below that,
// and hands it to use. None, or more than one, is an error.
func Binary(file, format, exe string, use func(r io.Reader, size int64) error) error {
	var where []string
	match := func(p string) bool {
		p = strings.TrimPrefix(path.Clean("/"+p), "/")
		parts := strings.Split(p, "/")
		if parts[len(parts)-1] != exe {
			return false
		}
		switch len(parts) {
		case 1, 2:
			return true
		case 3:
			return parts[1] == "bin"
		}
		return false
	}
	found := false
	take := func(p string, r io.Reader, size int64) error {
		where = append(where, p)
		if found {
			return nil
		}
		found = true
		if size > MaxBinary {
			return fmt.Errorf("%s is larger than %d bytes", p, MaxBinary)
		}
		return use(io.LimitReader(r, MaxBinary), size)
	}
	switch format {
	case "zip":
		zr, err := zip.OpenReader(file)
		if err != nil {
			return fmt.Errorf("%s is not a zip archive: %v", file, err)
		}
		defer zr.Close()
		for _, zf := range zr.File {
			if !zf.Mode().IsRegular() || !match(zf.Name) {
				continue
			}
			rc, err := zf.Open()
			if err != nil {
				return err
			}
			err = take(zf.Name, rc, int64(zf.UncompressedSize64))
			rc.Close()
			if err != nil {
				return err
			}
		}
	default:
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("%s is not a .tar.gz archive: %v", file, err)
		}
		tr := tar.NewReader(zr)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: %v", file, err)
			}
			if hdr.Typeflag != tar.TypeReg || !match(hdr.Name) {
				continue
			}
			if err := take(hdr.Name, tr, hdr.Size); err != nil {
				return err
			}
		}
	}
	switch len(where) {
	case 0:
		return fmt.Errorf("the archive holds no %s at its top, in its top directory or in that directory's bin/", exe)
	case 1:
		return nil
	default:
		return fmt.Errorf("the archive holds %d files named %s (%s): which one is node is not clear", len(where), exe, strings.Join(where, ", "))
	}
}

// BinarySHA256 is the sha256 of the node executable in the cached archive
// of target.
func BinarySHA256(file string, a distribution.NodeArchive, target string) (string, error) {
	h := sha256.New()
	err := Binary(file, a.Format(), distribution.NodeExecutable(target), func(r io.Reader, _ int64) error {
		_, err := io.Copy(h, r)
		return err
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// PinBinaries fetches the archive of each of release targets of l's node
// block (once: the cache keeps them) and records the sha256 of its node
// executable in the lock: what piship lock adds. A lock without a node
// block is left as it is.
func PinBinaries(ctx context.Context, cacheHome, registry string, l *distribution.Lock, targets []string) error {
	if l.Node == nil {
		return nil
	}
	for _, target := range targets {
		a, ok := l.Node.Targets[target]
		if !ok {
			return errcode.Newf(errcode.ConfigInvalid, "the node block has no archive for %s, a release target: add it to node.targets", target)
		}
		file, _, err := Fetch(ctx, cacheHome, a, l.Node.Version, registry)
		if err != nil {
			return fmt.Errorf("node for %s: %w", target, err)
		}
		sum, err := BinarySHA256(file, a, target)
		if err != nil {
			return errcode.Newf(errcode.IntegrityFailed, "node for %s (%s): %v: check node.targets[%q]", target, file, err, target)
		}
		a.BinarySHA256 = sum
		l.Node.Targets[target] = a
	}
	// Targets that are not release targets keep no binary digest: nothing
	// builds them.
	for _, t := range slices.Sorted(maps.Keys(l.Node.Targets)) {
		if !slices.Contains(targets, t) {
			a := l.Node.Targets[t]
			a.BinarySHA256 = ""
			l.Node.Targets[t] = a
		}
	}
	return nil
}

// Place fetches target's Node (its lock pin a, version) and writes its
// executable to dest/<distribution.NodePayloadPath(target)> (mode 0755),
// checked against a.BinarySHA256 as it is written. It returns the bytes
// written and whether the archive came from the cache.
func Place(ctx context.Context, cacheHome, registry string, a distribution.NodeArchive, version, target, dest string) (int64, bool, error) {
	file, cached, err := Fetch(ctx, cacheHome, a, version, registry)
	if err != nil {
		return 0, false, fmt.Errorf("node for %s: %w", target, err)
	}
	out := filepath.Join(dest, filepath.FromSlash(distribution.NodePayloadPath(target)))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return 0, cached, errcode.Newf(errcode.ConfigUnavailable, "%v", err)
	}
	var n int64
	var got string
	err = Binary(file, a.Format(), distribution.NodeExecutable(target), func(r io.Reader, _ int64) error {
		f, err := atomicfs.Create(out, 0o755, atomicfs.Options{})
		if err != nil {
			return err
		}
		defer f.Abort()
		h := sha256.New()
		if n, err = io.Copy(io.MultiWriter(f, h), r); err != nil {
			return err
		}
		if got = hex.EncodeToString(h.Sum(nil)); got != a.BinarySHA256 {
			return fmt.Errorf("its node executable has sha256 %s, piship.lock pins %s", got, a.BinarySHA256)
		}
		return f.Commit()
	})
	if err != nil {
		return 0, cached, errcode.Newf(errcode.IntegrityFailed, "node for %s (%s): %v: nothing was placed; run piship lock if the node block changed", target, file, err)
	}
	return n, cached, nil
}
