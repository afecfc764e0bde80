// Package pinned is piship's one way of downloading a file a
// distribution pins by sha256 (Pi's search-tool archives, the installers
// block's binaries, a tools entry with an https:// source): kept in the
// piship cache under its digest, served from there while its bytes are
// that digest (a cached file that is not is removed and fetched again),
// and otherwise downloaded with a size bound, hashed, and written into
// place (whole, atomically) only when it is the pin. The cache never holds a
// wrong file, and a cache seeded with the pinned files serves a release
// offline.
package pinned

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
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

// Fetch returns f's pinned bytes: the cache's copy at f.Path while it is
// the pin (one that is not is removed and fetched again), else a download
// of at most f.Max bytes, kept at f.Path once it is the pin; fromCache
// says which. The bytes returned are the bytes hashed, so a caller checks
// nothing again. Errors carry their code: NETWORK_DENIED for a download
// that failed (saying where to put the file to release offline),
// INTEGRITY_FAILED for bytes that are not the pin or too many,
// CONFIG_UNAVAILABLE for a cache it cannot use.
func Fetch(ctx context.Context, f File) (data []byte, fromCache bool, err error) {
	switch data, err := atomicfs.ReadRegular(f.Path, f.Max); {
	case err == nil && canon.SHA256Hex(data) == f.SHA256:
		return data, true, nil
	case err == nil:
		os.Remove(f.Path) // not what its name says: fetched again
	case !errors.Is(err, fs.ErrNotExist):
		return nil, false, errcode.Newf(errcode.ConfigUnavailable, "cannot read %s: %v: remove it, and it is fetched again", f.Path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL, nil)
	if err != nil {
		return nil, false, errcode.Newf(errcode.ConfigInvalid, "%s: %v", f.URL, err)
	}
	offline := fmt.Sprintf("put the file (sha256 %s) at %s to release offline", f.SHA256, f.Path)
	client := f.Client
	if client == nil {
		client = DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, false, errcode.Newf(errcode.NetworkDenied, "cannot download %s: %v: %s", f.URL, err, offline)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, false, errcode.Newf(errcode.NetworkDenied, "%s answered %s: %s", f.URL, resp.Status, offline)
	}
	data, err = io.ReadAll(io.LimitReader(resp.Body, f.Max+1))
	if err != nil {
		return nil, false, errcode.Newf(errcode.NetworkDenied, "downloading %s: %v", f.URL, err)
	}
	if int64(len(data)) > f.Max {
		return nil, false, errcode.Newf(errcode.IntegrityFailed, "%s is larger than %d bytes, more than %s pins can be: nothing was kept; check the URL", f.URL, f.Max, f.PinnedBy)
	}
	if got := canon.SHA256Hex(data); got != f.SHA256 {
		return nil, false, errcode.Newf(errcode.IntegrityFailed, "%s has sha256 %s, %s pins %s: nothing was kept; %s", f.URL, got, f.PinnedBy, f.SHA256, f.Fix)
	}
	if err := atomicfs.WriteFileAll(f.Path, data, 0o644); err != nil {
		return nil, false, errcode.Newf(errcode.ConfigUnavailable, "cannot keep %s in the cache: %v", f.URL, err)
	}
	return data, false, nil
}
