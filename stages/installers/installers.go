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
	"os"
	"path/filepath"
	"strings"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/pinned"
	"piship.dev/piship/stages/stage/errcode"
)

// DirName is the cache directory of downloaded binaries, under the piship
// cache: <cache>/installers/<sha256>.
const DirName = "installers"

// MaxBinary bounds a binary's size (the installer is about 24 MB).
const MaxBinary = 256 << 20

// Client downloads binaries from an https:// source; tests swap it.
var Client = pinned.DefaultClient

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
	data, _, err := pinned.Fetch(ctx, pinned.File{
		URL: b.Source, SHA256: b.SHA256, Path: filepath.Join(cacheHome, DirName, b.SHA256), Max: MaxBinary,
		PinnedBy: "distribution.hcl's installers block", Fix: fixPin, Client: Client,
	})
	return data, err
}

// fixPin is what to do about a binary that is not its pin.
const fixPin = "it is not the binary pinned, and the release ships neither; rebuild it with make installers and paste bin/installers/installers.hcl into distribution.hcl (then piship lock), or restore the pinned file"

func check(b Binary, data []byte) error {
	if got := canon.SHA256Hex(data); got != b.SHA256 {
		return errcode.Newf(errcode.IntegrityFailed, "%s has sha256 %s, distribution.hcl's installers block pins %s: %s", b.Source, got, b.SHA256, fixPin)
	}
	return nil
}
