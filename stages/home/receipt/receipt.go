package receipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
)

// Schema identifies the receipt format.
const Schema = "piship-install/v1"

// maxReceipt bounds what Read accepts.
const maxReceipt = 4 << 20

// Source kinds of a release record.
const (
	SourceArchive = "archive" // a release archive <id>-<version>-<target>.tar.zst
	SourceRelease = "release" // a release directory
	SourcePayload = "payload" // a payload directory (piship build output)
)

// Release is the record of one installed release directory.
type Release struct {
	Version string `json:"version"`
	// Dir is the absolute directory holding the release: apps/<id>/<version>,
	// or a .retained-* directory a release was set aside into.
	Dir string `json:"dir"`
	// Payload is the absolute payload directory: Dir/payload.
	Payload     string    `json:"payload"`
	InstalledAt time.Time `json:"installedAt"`
	// LockSHA256 is the digest of payload/piship.lock that every launch
	// compares; "" skips the comparison (an older receipt).
	LockSHA256 string `json:"lockSha256"`
	// ArchiveSHA256 is the digest of the archive installed ("" for a
	// directory install); InventorySHA256 that of the payload inventory
	// (payload/metadata/inventory.json, every install); ReleaseSHA256 that
	// of release.json ("" for a payload-directory install, which has none,
	// and in an older receipt). Doctor compares the files with them.
	ArchiveSHA256   string `json:"archiveSha256"`
	InventorySHA256 string `json:"inventorySha256"`
	ReleaseSHA256   string `json:"releaseSha256"`
	// TreeSHA256 is the digest of Dir's tree as installed (every file's
	// path, exec bit, size and sha256, every directory: stages/delta's
	// Tree.Digest): an update downloads a delta only from this tree. ""
	// in a receipt an older piship wrote (its updates take the archive).
	TreeSHA256 string `json:"treeSha256,omitempty"`
	Target     string `json:"target"`
	Channel    string `json:"channel"`
	// Command is the shim's name in the bin home; Entry the file node runs,
	// relative to Payload, slash-separated.
	Command string `json:"command"`
	Entry   string `json:"entry"`
	// VerifyAtLaunch is runtime.verifyAtLaunch of the lock: every launch
	// runs the full inventory check.
	VerifyAtLaunch bool   `json:"verifyAtLaunch"`
	Source         string `json:"source"`
	// SearchTools are the bundled search tools (the lock's searchTools)
	// as install verified them in the payload: each launch copies them
	// into Pi's agent bin directory and checks them against these digests.
	// Empty when the release bundles none (or an older piship installed it).
	SearchTools []SearchTool `json:"searchTools,omitempty"`
	// Node is the payload's own Node (the lock's node block) as install
	// verified it: launches run it instead of the node on PATH, checked by
	// fingerprint. nil when the release ships none (or an older piship
	// installed it).
	Node *Node `json:"node,omitempty"`
	// Executables are the files of Dir install wrote executable (0755
	// less the umask; every other file 0644, every directory 0755), as
	// release-relative slash paths, sorted: what repair restores modes
	// from and doctor holds the executable bits to. nil in a receipt an
	// older piship wrote (modes not recorded: only the unsafe bits are
	// checked and cleared); an empty list when none is.
	Executables *[]string `json:"executables,omitempty"`
}

// SearchTool is one bundled search tool of a release: its executable's
// payload path (tools/fd, slash-separated), sha256 and size.
type SearchTool struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Node is the pinned Node of a release: its executable's payload path
// (node/bin/node, node/node.exe on win32), sha256 and size.
type Node struct {
	Version string `json:"version"`
	Path    string `json:"path"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
}

// Receipt is receipts/<id>.json: the only thing that makes a version active.
type Receipt struct {
	Schema string `json:"schema"`
	App    string `json:"app"`
	// Active is the version launches run; Previous the rollback target
	// ("" after a rollback, so a second one is refused, or before a second
	// version was installed). RolledBackFrom is the version a rollback left.
	Active         string `json:"active"`
	Previous       string `json:"previous"`
	RolledBackFrom string `json:"rolledBackFrom,omitempty"`
	// Releases holds one record per version whose directory is installed
	// (active, previous and any not yet reclaimed), at most one per version.
	Releases []Release `json:"releases"`
	// Retained holds records of directories set aside (a version replaced
	// by different bytes of the same version), for reuse when an install
	// brings the same archive again. Doctor reclaims them.
	Retained []Release `json:"retained,omitempty"`
	// A receipt written before TUF also holds "sequences" (the
	// piship-channel/v1 replay floor per channel): it is ignored on read
	// and dropped on the next write, TUF's trusted metadata in trust/<id>/
	// being the floor now.
	UpdatedAt time.Time `json:"updatedAt"`
}

// Find returns the record of version in Releases, or nil.
func (r *Receipt) Find(version string) *Release {
	if version == "" {
		return nil
	}
	for i := range r.Releases {
		if r.Releases[i].Version == version {
			return &r.Releases[i]
		}
	}
	return nil
}

// ActiveRelease returns the active record or an error naming the receipt.
func (r *Receipt) ActiveRelease() (*Release, error) {
	rel := r.Find(r.Active)
	if rel == nil {
		return nil, Errorf(CodeUnavailable, "%s has no active release", r.App)
	}
	return rel, nil
}

// Put replaces the record of rel.Version in Releases, or adds it.
func (r *Receipt) Put(rel Release) {
	if old := r.Find(rel.Version); old != nil {
		*old = rel
		return
	}
	r.Releases = append(r.Releases, rel)
}

// New returns an empty receipt for id.
func New(id string) *Receipt {
	return &Receipt{Schema: Schema, App: id, Releases: []Release{}}
}

// ErrNotInstalled is wrapped by Read when there is no receipt.
var ErrNotInstalled = errors.New("not installed")

// Read reads and checks receipts/<id>.json. A missing receipt is a
// CONFIG_UNAVAILABLE error wrapping ErrNotInstalled (and fs.ErrNotExist);
// a malformed one is CONFIG_INVALID.
func Read(installHome, id string) (*Receipt, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	path := ReceiptPath(installHome, id)
	f, err := atomicfs.OpenRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{Code: CodeUnavailable, Msg: fmt.Sprintf("%s is not installed in %s (no receipt %s): run piship install", id, installHome, path),
			Err: errors.Join(ErrNotInstalled, fs.ErrNotExist)}
	}
	if err != nil {
		return nil, Errorf(CodeUnavailable, "cannot read the receipt of %s: %w", id, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxReceipt+1))
	if err != nil {
		return nil, Errorf(CodeUnavailable, "cannot read the receipt of %s: %w", id, err)
	}
	if len(data) > maxReceipt {
		return nil, Errorf(CodeConfigInvalid, "receipt %s is larger than %d bytes", path, maxReceipt)
	}
	r, err := Parse(data)
	if err != nil {
		return nil, Errorf(CodeConfigInvalid, "receipt %s: %v", path, err)
	}
	if r.App != id {
		return nil, Errorf(CodeConfigInvalid, "receipt %s is the receipt of %q, not %q", path, r.App, id)
	}
	return r, nil
}

// Parse decodes and checks receipt bytes.
func Parse(data []byte) (*Receipt, error) {
	var r Receipt
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("schema is %q, not %q", r.Schema, Schema)
	}
	if !ValidName(r.App) {
		return nil, fmt.Errorf("app %q is not a distribution id", r.App)
	}
	seen := map[string]bool{}
	for _, rel := range append(append([]Release(nil), r.Releases...), r.Retained...) {
		if !ValidVersion(rel.Version) {
			return nil, fmt.Errorf("release version %q is not a semantic version", rel.Version)
		}
		if !filepath.IsAbs(rel.Dir) || !filepath.IsAbs(rel.Payload) {
			return nil, fmt.Errorf("release %s: dir and payload must be absolute paths", rel.Version)
		}
	}
	for _, rel := range r.Releases {
		if seen[rel.Version] {
			return nil, fmt.Errorf("release %s is recorded twice", rel.Version)
		}
		seen[rel.Version] = true
	}
	if r.Active != "" && !seen[r.Active] {
		return nil, fmt.Errorf("active version %s has no release record", r.Active)
	}
	if r.Previous != "" && !seen[r.Previous] {
		return nil, fmt.Errorf("previous version %s has no release record", r.Previous)
	}
	if r.Releases == nil {
		r.Releases = []Release{}
	}
	return &r, nil
}

// Marshal returns the receipt's bytes: two-space indented JSON and a
// trailing newline.
func (r *Receipt) Marshal() ([]byte, error) {
	c := *r
	if c.Releases == nil {
		c.Releases = []Release{}
	}
	return canon.JSON(&c)
}

// Write replaces receipts/<id>.json atomically with DefaultRenamer.
func Write(installHome string, r *Receipt) error {
	return WriteWith(installHome, r, atomicfs.DefaultRenamer(atomicfs.InstallDelays))
}

// WriteWith writes r to a temporary sibling, flushes it, renames it over
// the receipt with rn and flushes the directory. On any error the previous
// receipt is untouched and the temporary file is removed.
func WriteWith(installHome string, r *Receipt, rn atomicfs.Renamer) error {
	if err := CheckID(r.App); err != nil {
		return err
	}
	if r.Schema == "" {
		r.Schema = Schema
	}
	data, err := r.Marshal()
	if err != nil {
		return Errorf(CodeUnavailable, "cannot encode the receipt of %s: %v", r.App, err)
	}
	if _, err := Parse(data); err != nil {
		return Errorf(CodeConfigInvalid, "refusing to write an invalid receipt for %s: %v", r.App, err)
	}
	path := ReceiptPath(installHome, r.App)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Errorf(CodeUnavailable, "cannot create %s: %w", dir, err)
	}
	f, err := atomicfs.Create(path, 0o644, atomicfs.Options{Pattern: tempPattern(r.App), Sync: true, SyncDir: true, Renamer: rn})
	if err != nil {
		return Errorf(CodeUnavailable, "cannot write the receipt of %s: %w", r.App, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return Errorf(CodeUnavailable, "cannot write the receipt %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return Errorf(CodeUnavailable, "cannot write the receipt %s: %w", path, err)
	}
	return nil
}

// tempPattern names WriteWith's temporary sibling of receipts/<id>.json.
func tempPattern(id string) string { return "." + id + ".json.tmp-*" }

// TempReceipts lists receipts/.<id>.json.tmp-*: what a Write killed
// before its rename left. Every writer of a receipt holds the maintenance
// lock, so to a holder of that lock each of them is stale (doctor removes
// them).
func TempReceipts(installHome, id string) ([]string, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	return filepath.Glob(filepath.Join(installHome, "receipts", tempPattern(id)))
}
