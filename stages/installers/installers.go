// Package installers obtains the end-user installer and launcher a
// distribution pins in its installers block (piship's own builds, `make
// installers`), for release_publish to ship in a release directory: read
// from a directory of the distribution, or downloaded from an https://
// base into <piship cache>/installers/<sha256> once; either way checked
// against the pin before a byte is used, so a release never carries a
// binary the distribution did not pin.
package installers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/stage/errcode"
)

// DirName is the cache directory of downloaded binaries, under the piship
// cache: <cache>/installers/<sha256>.
const DirName = "installers"

// MaxBinary bounds a binary's size (the installer is about 24 MB).
const MaxBinary = 256 << 20

// Client downloads binaries from an https:// source; tests swap it.
var Client = &http.Client{Timeout: 5 * time.Minute}

// Binary is one binary a release ships: what it is called in the release
// directory, where it comes from and its pin.
type Binary struct {
	Name   string // piship or piship-launch (.exe on win32)
	Source string // <source>/<target>/piship-install ...: a path or URL
	SHA256 string
}

// Pinned returns the two binaries in pins for target: the installer
// (shipped as piship) and the launcher. The source paths are
// <source>/<target>/<file>, a directory source resolved against distDir.
func Pinned(in *distribution.Installers, distDir, target string, pins distribution.InstallerPins, names [2]string) [2]Binary {
	inst, launch := distribution.InstallerSourceFiles(target)
	at := func(file string) string {
		if in.IsURL() {
			return strings.TrimSuffix(in.Source, "/") + "/" + target + "/" + file
		}
		return filepath.Join(distDir, filepath.FromSlash(in.Source), target, file)
	}
	return [2]Binary{
		{Name: names[0], Source: at(inst), SHA256: pins.Installer},
		{Name: names[1], Source: at(launch), SHA256: pins.Launcher},
	}
}

// Read returns b's bytes, checked against its pin: a directory source's
// file read as it is, a URL's from the cache under cacheHome, downloaded
// there first when missing. A mismatch is INTEGRITY_FAILED naming the file,
// both digests and what to do; nothing is kept.
func Read(ctx context.Context, cacheHome string, b Binary) ([]byte, error) {
	if !strings.HasPrefix(b.Source, "https://") {
		data, err := os.ReadFile(b.Source)
		if err != nil {
			return nil, errcode.Newf(errcode.ConfigUnavailable, "cannot read the pinned installer %s: %v: run make installers in piship's checkout and copy bin/installers to the installers block's source", b.Source, err)
		}
		return data, check(b, data)
	}
	file := filepath.Join(cacheHome, DirName, b.SHA256)
	if data, err := os.ReadFile(file); err == nil {
		if sum(data) == b.SHA256 {
			return data, nil
		}
		os.Remove(file) // not what its name says: fetched again
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, errcode.Newf(errcode.ConfigUnavailable, "cannot read %s: %v", file, err)
	}
	data, err := download(ctx, b)
	if err != nil {
		return nil, err
	}
	if err := check(b, data); err != nil {
		return nil, err
	}
	if err := atomicfs.WriteFileAll(file, data, 0o644); err != nil {
		return nil, errcode.Newf(errcode.ConfigUnavailable, "cannot keep %s in the cache: %v", b.Source, err)
	}
	return data, nil
}

func download(ctx context.Context, b Binary) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.Source, nil)
	if err != nil {
		return nil, errcode.Newf(errcode.ConfigInvalid, "%s: %v", b.Source, err)
	}
	offline := "put the file (sha256 " + b.SHA256 + ") in <piship cache>/" + DirName + "/" + b.SHA256 + " to release offline"
	resp, err := Client.Do(req)
	if err != nil {
		return nil, errcode.Newf(errcode.NetworkDenied, "cannot download %s: %v: %s", b.Source, err, offline)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errcode.Newf(errcode.NetworkDenied, "%s answered %s: %s", b.Source, resp.Status, offline)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBinary+1))
	if err != nil {
		return nil, errcode.Newf(errcode.NetworkDenied, "downloading %s: %v", b.Source, err)
	}
	if len(data) > MaxBinary {
		return nil, errcode.Newf(errcode.IntegrityFailed, "%s is larger than %d bytes: check the installers block's source", b.Source, MaxBinary)
	}
	return data, nil
}

func check(b Binary, data []byte) error {
	if got := sum(data); got != b.SHA256 {
		return errcode.Newf(errcode.IntegrityFailed, "%s has sha256 %s, distribution.hcl's installers block pins %s: it is not the binary pinned, and the release ships neither; rebuild it with make installers and paste bin/installers/installers.hcl into distribution.hcl (then piship lock), or restore the pinned file", b.Source, got, b.SHA256)
	}
	return nil
}

func sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}
