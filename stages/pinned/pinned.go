// Package pinned is piship's one way of downloading a file a
// distribution pins by sha256 (Pi's search-tool archives, the installers
// block's binaries, a tools entry with an https:// source): kept in the
// piship cache under its digest, served from there while its bytes are
// that digest (a cached file that is not is removed and fetched again),
// and otherwise downloaded with a size bound, hashed while it is written,
// and renamed into place only when it is the pin. The cache never holds a
// wrong file, and a cache seeded with the pinned files serves a release
// offline.
package pinned

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/stage/errcode"
)

// DefaultClient downloads for a File without a Client: no redirect limit
// beyond net/http's, five minutes for the whole download.
var DefaultClient = &http.Client{Timeout: 5 * time.Minute}

// File is one pinned download and the words its errors use.
type File struct {
	URL    string
	SHA256 string // lowercase hex
	Path   string // where it lives in the cache: <cache>/<dir>/<sha256>[.<ext>]
	Max    int64  // the most bytes it may have

	PinnedBy string // who pins it, for a mismatch: "distribution.hcl", "distribution.hcl's installers block"
	Fix      string // what to do about a mismatch
	Client   *http.Client
}

// Fetch returns f.Path holding f's pinned bytes, downloading them first
// unless the cache already has them; fromCache says which. Errors carry
// their code: NETWORK_DENIED for a download that failed (saying where to
// put the file to work offline), INTEGRITY_FAILED for bytes that are not
// the pin or too many, CONFIG_UNAVAILABLE for a cache it cannot use.
func Fetch(ctx context.Context, f File) (path string, fromCache bool, err error) {
	if sum, err := hashFile(f.Path); err == nil {
		if sum == f.SHA256 {
			return f.Path, true, nil
		}
		os.Remove(f.Path) // not what its name says: fetched again
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, errcode.Newf(errcode.ConfigUnavailable, "cannot read %s: %v", f.Path, err)
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return "", false, errcode.Newf(errcode.ConfigUnavailable, "cannot create %s: %v", filepath.Dir(f.Path), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL, nil)
	if err != nil {
		return "", false, errcode.Newf(errcode.ConfigInvalid, "%s: %v", f.URL, err)
	}
	offline := fmt.Sprintf("put the file (sha256 %s) at %s to release offline", f.SHA256, f.Path)
	client := f.Client
	if client == nil {
		client = DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", false, errcode.Newf(errcode.NetworkDenied, "cannot download %s: %v: %s", f.URL, err, offline)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", false, errcode.Newf(errcode.NetworkDenied, "%s answered %s: %s", f.URL, resp.Status, offline)
	}
	out, err := atomicfs.Create(f.Path, 0o644, atomicfs.Options{})
	if err != nil {
		return "", false, errcode.Newf(errcode.ConfigUnavailable, "%v", err)
	}
	defer out.Abort()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(resp.Body, f.Max+1))
	if err != nil {
		return "", false, errcode.Newf(errcode.NetworkDenied, "downloading %s: %v", f.URL, err)
	}
	if n > f.Max {
		return "", false, errcode.Newf(errcode.IntegrityFailed, "%s is larger than %d bytes, more than %s pins can be: nothing was kept; check the URL", f.URL, f.Max, f.PinnedBy)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return "", false, errcode.Newf(errcode.IntegrityFailed, "%s has sha256 %s, %s pins %s: nothing was kept; %s", f.URL, got, f.PinnedBy, f.SHA256, f.Fix)
	}
	if err := out.Commit(); err != nil {
		return "", false, errcode.Newf(errcode.ConfigUnavailable, "%v", err)
	}
	return f.Path, false, nil
}

func hashFile(p string) (string, error) {
	f, err := atomicfs.OpenRegular(p)
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
