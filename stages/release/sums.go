package release

// The release set: one SHA256SUMS file per version, <id>-<version>.SHA256SUMS
// in the releases directory, beside the archives it covers (GoReleaser's
// checksums file). Its lines are `<sha256>  <archive>`, sorted by name, as
// sha256sum writes and `sha256sum -c` checks: one per target's archive the
// release made. verify-release, repo add and install read a set through
// ReadSums and nothing else.

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/distribution"
)

// SumsSuffix ends a release set's file name: <id>-<version>.SHA256SUMS.
const SumsSuffix = ".SHA256SUMS"

// SumsName is the set file of version of distribution id.
func SumsName(id, version string) string { return id + "-" + version + SumsSuffix }

// IsSums says whether path names a release set file (by its name).
func IsSums(path string) bool { return strings.HasSuffix(path, SumsSuffix) }

// SumEntry is one archive of a release set.
type SumEntry struct {
	Archive string // the archive's file name, <id>-<version>-<target>.tar.zst (or .tar.gz, ParseArchiveName)
	SHA256  string
	Name    Identity
}

// Sums is a release set: its file and its archives in name order.
type Sums struct {
	Path    string // the SHA256SUMS file; the archives are beside it
	ID      string
	Version string
	Entries []SumEntry
}

// Dir is the directory the set's archives are in.
func (s *Sums) Dir() string { return filepath.Dir(s.Path) }

// For returns the entry of target, or false.
func (s *Sums) For(target string) (SumEntry, bool) {
	for _, e := range s.Entries {
		if e.Name.Target == target {
			return e, true
		}
	}
	return SumEntry{}, false
}

// Targets lists the set's targets in name order.
func (s *Sums) Targets() []string {
	var ts []string
	for _, e := range s.Entries {
		ts = append(ts, e.Name.Target)
	}
	return ts
}

// FormatSums is the file's bytes for entries (sorted by archive name).
func FormatSums(entries []SumEntry) []byte {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b SumEntry) int { return strings.Compare(a.Archive, b.Archive) })
	var b bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&b, "%s  %s\n", e.SHA256, e.Archive)
	}
	return b.Bytes()
}

// WriteSums writes the set file of id and version into dir atomically.
func WriteSums(dir, id, version string, entries []SumEntry) (string, error) {
	path := filepath.Join(dir, SumsName(id, version))
	return path, atomicfs.WriteFileAll(path, FormatSums(entries), 0o644)
}

// ReadSums reads and checks a release set file: its name is
// <id>-<version>.SHA256SUMS, every line `<64 hex>  <archive>` sorted by
// archive and no name twice, each archive a plain file name
// <id>-<version>-<target>.tar.zst (or .tar.gz) of that id and version (ParseArchiveName),
// one per target. It reads no archive: a consumer checks each digest
// when it reads the archive.
func ReadSums(path string) (*Sums, error) {
	base := filepath.Base(path)
	stem, ok := strings.CutSuffix(base, SumsSuffix)
	if !ok {
		return nil, fmt.Errorf("%s: a release set is <id>-<version>%s", path, SumsSuffix)
	}
	data, err := atomicfs.ReadRegular(path, 1<<20)
	if err != nil {
		return nil, err
	}
	s := &Sums{Path: path}
	seen := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		bad := func(why string) error {
			return fmt.Errorf("%s line %d: %s (each line is `<sha256>  <id>-<version>-<target>.tar.zst`, as the release wrote it)", path, i+1, why)
		}
		if !ok || !canon.IsSHA256Hex(sum) {
			return nil, bad("not `<sha256>  <archive>`")
		}
		if name != filepath.Base(name) || strings.ContainsAny(name, `/\`) {
			return nil, bad(fmt.Sprintf("%q is not a file name beside the set", name))
		}
		n, why := ParseArchiveName(name)
		if why != "" {
			return nil, bad(fmt.Sprintf("%s: %s", name, why))
		}
		if s.ID == "" {
			s.ID, s.Version = n.ID, n.Version
		}
		switch {
		case n.ID+"-"+n.Version != stem:
			return nil, bad(fmt.Sprintf("%s is not of %s", name, stem))
		case seen[n.Target]:
			return nil, bad(fmt.Sprintf("a second archive for %s", n.Target))
		case len(s.Entries) > 0 && name <= s.Entries[len(s.Entries)-1].Archive:
			return nil, bad("lines are not sorted by archive name")
		}
		seen[n.Target] = true
		s.Entries = append(s.Entries, SumEntry{Archive: name, SHA256: sum, Name: n})
	}
	if len(s.Entries) == 0 {
		return nil, fmt.Errorf("%s lists no archive", path)
	}
	return s, nil
}

// Archive is the path of entry e's archive beside the set file.
func (s *Sums) Archive(e SumEntry) string { return filepath.Join(s.Dir(), e.Archive) }

// WriteSet writes the release set of id and version into releases, where
// every entry's archive and release directory are published: the set file
// (WriteSums, read back through ReadSums, the one reader every consumer
// uses), then install.sh and install.ps1 beside them (WriteBootstrap),
// with the TUF root the first release's lock pins for updates (every
// target's lock is the same). The release pipeline's release_set stage and
// piship release --merge both write a set through it.
func WriteSet(releases, id, version string, entries []SumEntry) (*Sums, error) {
	if len(entries) == 0 {
		return nil, fmt.Errorf("no archive of %s %s to list", id, version)
	}
	path, err := WriteSums(releases, id, version, entries)
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %v", SumsName(id, version), err)
	}
	s, err := ReadSums(path)
	if err != nil {
		return nil, err
	}
	if err := writeBootstrapFor(releases, s.Entries[0]); err != nil {
		return nil, fmt.Errorf("cannot write %s beside the archives: %v", BootstrapShName, err)
	}
	return s, nil
}

// writeBootstrapFor writes install.sh (and install.ps1) beside the
// archives for e's version, with the TUF root e's lock pins.
func writeBootstrapFor(releases string, e SumEntry) error {
	name, _ := archive.TrimExt(e.Archive)
	l, _, err := distribution.ReadLock(filepath.Join(releases, name, "payload"))
	if err != nil {
		return err
	}
	root := ""
	if l.Updates != nil {
		if pin, msg := distribution.CheckRootPin(l.Updates.RootSHA256); msg == "" {
			root = pin // a lock from before TUF pins no root an install could hold it to
		}
	}
	return WriteBootstrap(releases, e.Name.ID, e.Name.Version, root)
}
