package home

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/delta"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/release/releasejson"
)

// source is what Install was given, identified.
type source struct {
	kind                 string // receipt.Source*
	path                 string
	id, version, target  string
	expectSHA, expectWhy string                                       // expected archive digest and where it came from
	expectKey            string                                       // a key fingerprint the release's lock must trust
	inventorySHA         string                                       // directory sources: digest of the source inventory
	size                 int64                                        // archive bytes, or total bytes of a directory
	tree                 *tree                                        // directory sources: what to copy
	delta                *delta.Header                                // a delta source's header (nil when it cannot be read: placing it fails and falls back)
	deltaBase            func() (*receipt.Release, delta.Tree, error) // a delta source's base, listed while identify reads the header
	archive              *archive.Reader                              // archives: opened by checkSpace (source.open), extracted by place
	file                 *os.File                                     // what archive reads
	warnings             []string
}

// ReleaseSchema is release.json's schema.
const ReleaseSchema = releasejson.Schema

const maxMeta = 4 << 20

func readSmall(path string) ([]byte, error) {
	return atomicfs.ReadRegular(path, maxMeta)
}

// readReleaseID reads the identity release.json claims; whether the
// release is valid is release.Check's to say once it is copied.
func readReleaseID(path string) (release.Identity, error) {
	data, err := readSmall(path)
	if err != nil {
		return release.Identity{}, err
	}
	var r releasejson.Metadata
	if err := json.Unmarshal(data, &r); err != nil {
		return release.Identity{}, fmt.Errorf("%s: %v", path, err)
	}
	if r.Schema != releasejson.Schema {
		return release.Identity{}, fmt.Errorf("%s: schema is %q, not %q", path, r.Schema, releasejson.Schema)
	}
	return release.Identity{ID: r.Distribution.ID, Version: r.Distribution.Version, Target: r.Target}, nil
}

func readTarget(path string) (string, error) {
	data, err := readSmall(path)
	if err != nil {
		return "", err
	}
	t, err := release.TargetOf(data)
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	return t, nil
}

// identify classifies o.Source and finds its id, version and target
// without reading any payload file.
func identify(o *InstallOptions) (*source, error) {
	if o.Delta != nil {
		return identifyDelta(o)
	}
	if o.Source == "" {
		return nil, receipt.Errorf(receipt.CodeConfigInvalid, "nothing to install: name a release archive, a release directory or a payload directory")
	}
	path, err := filepath.Abs(o.Source)
	if err != nil {
		return nil, receipt.Errorf(receipt.CodeConfigInvalid, "%s: %v", o.Source, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, receipt.Errorf(receipt.CodeConfigInvalid, "cannot install %s: %v", o.Source, err)
	}
	want := strings.ToLower(strings.TrimSpace(o.SHA256))
	if want != "" && !canon.IsSHA256Hex(want) {
		return nil, receipt.Errorf(receipt.CodeConfigInvalid, "--sha256 %q is not a SHA-256 (64 hex digits)", o.SHA256)
	}
	s := &source{path: path, expectKey: strings.ToLower(strings.TrimSpace(o.ExpectKey))}
	setName := ""
	if fi.Mode().IsRegular() && release.IsSums(fi.Name()) {
		// A release set: the host's archive, pinned by the set's digest.
		if want != "" {
			return nil, receipt.Errorf(receipt.CodeConfigInvalid, "--sha256 is the digest of an archive, and %s is a release set that pins each archive's digest itself", o.Source)
		}
		var arc string
		if arc, want, err = pickFromSet(path, o.HostTarget); err != nil {
			return nil, err
		}
		setName, path, s.path = fi.Name(), arc, arc
		if fi, err = os.Stat(path); err != nil {
			return nil, receipt.Errorf(receipt.CodeConfigInvalid, "cannot install %s: %v", o.Source, err)
		}
	}
	switch {
	case fi.Mode().IsRegular():
		if _, ok := archive.FormatOfName(fi.Name()); !ok {
			return nil, receipt.Errorf(receipt.CodeConfigInvalid, "%s is not a release archive (<id>-<version>-<target>.tar.zst, or .tar.gz), a release directory or a payload directory", o.Source)
		}
		s.kind, s.size = receipt.SourceArchive, fi.Size()
		if o.ID != "" || o.Version != "" {
			if o.ID == "" || o.Version == "" {
				return nil, receipt.Errorf(receipt.CodeConfigInvalid, "give both the id and the version of %s, or neither", o.Source)
			}
			s.id, s.version = o.ID, o.Version
			if _, _, t, err := parseArchiveName(fi.Name()); err == nil {
				s.target = t
			}
		} else if s.id, s.version, s.target, err = parseArchiveName(fi.Name()); err != nil {
			return nil, err
		}
		if want != "" {
			s.expectSHA, s.expectWhy = want, cmp.Or(setName, "--sha256")
		}
		if side, err := readSidecar(path); err != nil {
			return nil, err
		} else if side != "" {
			if s.expectSHA != "" && side != s.expectSHA {
				return nil, receipt.Errorf(receipt.CodeIntegrity, "%s.sha256 says %s and --sha256 says %s: nothing was installed", fi.Name(), side, s.expectSHA)
			}
			if s.expectSHA == "" {
				s.expectSHA, s.expectWhy = side, filepath.Base(path)+".sha256"
			}
		}
		if s.expectSHA == "" {
			s.warnings = append(s.warnings, fmt.Sprintf("%s has no %s.sha256 beside it and no --sha256 was given: its digest is not checked (every file is still checked against the inventory)", fi.Name(), fi.Name()))
		}
	case fi.IsDir():
		if want != "" {
			return nil, receipt.Errorf(receipt.CodeConfigInvalid, "--sha256 is the digest of an archive, and %s is a directory", o.Source)
		}
		if err := identifyDir(s); err != nil {
			return nil, err
		}
		if (o.ID != "" && o.ID != s.id) || (o.Version != "" && o.Version != s.version) {
			return nil, receipt.Errorf(receipt.CodeConfigInvalid, "%s is %s %s, not the %s %s asked for", o.Source, s.id, s.version, o.ID, o.Version)
		}
	default:
		return nil, receipt.Errorf(receipt.CodeConfigInvalid, "cannot install %s: %v", o.Source, &atomicfs.NotRegularError{Path: o.Source, Mode: fi.Mode()})
	}
	if err := receipt.CheckID(s.id); err != nil {
		return nil, err
	}
	if !receipt.ValidVersion(s.version) {
		return nil, receipt.Errorf(receipt.CodeConfigInvalid, "%q is not a semantic version", s.version)
	}
	return s, nil
}

// identifyDir reads a release directory's release.json or a payload
// directory's piship.lock and target.json, and plans the copy.
func identifyDir(s *source) error {
	payloadDir := s.path
	if _, err := os.Stat(filepath.Join(s.path, "release.json")); err == nil {
		s.kind = receipt.SourceRelease
		rel, err := readReleaseID(filepath.Join(s.path, "release.json"))
		if err != nil {
			return receipt.Errorf(receipt.CodeConfigInvalid, "%s is not a readable release directory: %v", s.path, err)
		}
		s.id, s.version, s.target = rel.ID, rel.Version, rel.Target
		payloadDir = filepath.Join(s.path, "payload")
	} else if _, err := os.Stat(filepath.Join(s.path, filepath.FromSlash(inventoryName))); err == nil {
		s.kind = receipt.SourcePayload
		raw, err := readSmall(filepath.Join(s.path, distribution.LockFileName))
		if err != nil {
			return receipt.Errorf(receipt.CodeConfigInvalid, "%s is not a readable payload directory: %v", s.path, err)
		}
		l, err := distribution.ParseLock(raw)
		if err != nil {
			return receipt.Errorf(receipt.CodeConfigInvalid, "%s/%s: %v", s.path, distribution.LockFileName, err)
		}
		s.id, s.version = l.Distribution.ID, l.Distribution.Version
		if s.target, err = readTarget(filepath.Join(s.path, "metadata", "target.json")); err != nil {
			return receipt.Errorf(receipt.CodeConfigInvalid, "%v", err)
		}
		marker := filepath.Join(filepath.Dir(s.path), filepath.Base(s.path)+".piship-qualification.json")
		if q, err := atomicfs.ReadRegular(marker, 0); err == nil && strings.Contains(string(q), "unqualified-local") {
			s.warnings = append(s.warnings, fmt.Sprintf("%s is an unqualified local build (piship build): install it for local testing only; ship what piship release produced", s.path))
		}
	} else {
		if _, err := os.Stat(filepath.Join(s.path, distribution.FileName)); err == nil {
			// The most likely mistake: the distribution's own directory.
			return receipt.Errorf(receipt.CodeConfigInvalid, "%s is a distribution (it holds %s), not a release or a payload: run `piship release %s` (or `piship build %s`) and install the release directory or payload it prints",
				s.path, distribution.FileName, s.path, s.path)
		}
		return receipt.Errorf(receipt.CodeConfigInvalid, "%s is neither a release directory (release.json) nor a payload directory (%s)", s.path, inventoryName)
	}
	inv, err := readSmallHash(filepath.Join(payloadDir, filepath.FromSlash(inventoryName)))
	if err != nil {
		return receipt.Errorf(receipt.CodeConfigInvalid, "%s has no readable inventory: %v", payloadDir, err)
	}
	s.inventorySHA = inv
	t, err := planTree(s.path)
	if err != nil {
		return err
	}
	if s.kind == receipt.SourceRelease {
		// The piship binaries a release directory ships for install.sh are
		// tools of the installer, and notes.md is the publisher's: neither
		// is part of the installed version (the archive holds neither).
		t.files = slices.DeleteFunc(t.files, func(f treeFile) bool {
			if release.OutsideArchive(f.rel) {
				t.bytes -= f.size
				return true
			}
			return false
		})
	}
	s.tree, s.size = t, t.bytes
	return nil
}

func readSmallHash(path string) (string, error) {
	data, err := atomicfs.ReadRegular(path, 0)
	if err != nil {
		return "", err
	}
	return canon.SHA256Hex(data), nil
}

// readSidecar returns the digest of <archive>.sha256 ("" when absent): one
// sha256sum line, "<hex>  <file>".
func readSidecar(archivePath string) (string, error) {
	data, err := atomicfs.ReadRegular(archivePath+".sha256", 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", receipt.Errorf(receipt.CodeUnavailable, "cannot read %s.sha256: %w", archivePath, err)
	}
	sum, err := release.ParseSidecar(data, filepath.Base(archivePath))
	if err != nil {
		return "", receipt.Errorf(receipt.CodeIntegrity, "%v: fix or remove it", err)
	}
	return sum, nil
}

// parseArchiveName splits <id>-<version>-<target>.tar.zst or .tar.gz
// (release.ParseArchiveName).
// pickFromSet reads a release set (release.ReadSums) and returns the
// archive of host's target beside it and its digest; a set without one
// is refused naming the host's target and the set's.
func pickFromSet(path, host string) (archive, sha256 string, err error) {
	set, err := release.ReadSums(path)
	if err != nil {
		return "", "", receipt.Errorf(receipt.CodeConfigInvalid, "%v", err)
	}
	e, ok := set.For(host)
	if !ok {
		return "", "", receipt.Errorf(receipt.CodeConfigInvalid, "%s %s has no archive for %s, this machine's target (its release set %s has %s): release it for %s, or install on one of those", set.ID, set.Version, host, filepath.Base(path), strings.Join(set.Targets(), ", "), host)
	}
	return set.Archive(e), e.SHA256, nil
}

func parseArchiveName(base string) (id, version, target string, err error) {
	n, why := release.ParseArchiveName(base)
	if why != "" {
		return "", "", "", receipt.Errorf(receipt.CodeConfigInvalid, "cannot tell the distribution and version from the archive name %q (%s): install takes a release archive under the name piship release gave it, <id>-<version>-<target>.tar.zst (e.g. hello-1.0.0-linux-x64.tar.zst; .tar.gz from an earlier piship): rename it back, or install the release directory piship release wrote beside it", base, why)
	}
	return n.ID, n.Version, n.Target, nil
}
