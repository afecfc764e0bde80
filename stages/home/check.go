package home

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/home/receipt"
)

// installed is what the checks of a freshly written version learned.
type installed struct {
	lockSHA, inventorySHA string
	releaseSHA            string // "" for a payload directory
	command, entry        string
	channel               string
	verifyAtLaunch        bool
	files                 int
}

func integrityf(format string, args ...any) error {
	return receipt.Errorf(receipt.CodeIntegrity, format, args...)
}

// checkInstalled compares what was written into dir (digests: slash path
// relative to dir -> SHA-256, computed while writing) with what the
// release binds. Only the small metadata files are read back; each one's
// bytes are checked against the digest computed while it was written.
func checkInstalled(dir string, s *source, digests map[string]string, archiveSHA string) (*installed, error) {
	if s.kind == receipt.SourceArchive && s.expectSHA != "" && archiveSHA != s.expectSHA {
		return nil, integrityf("the archive %s has SHA-256 %s, and %s says %s", filepath.Base(s.path), archiveSHA, s.expectWhy, s.expectSHA)
	}
	read := func(rel string) ([]byte, error) {
		want, ok := digests[rel]
		if !ok {
			return nil, integrityf("%s %s has no %s", s.id, s.version, rel)
		}
		data, err := readSmall(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, integrityf("%s %s: %v", s.id, s.version, err)
		}
		if canon.SHA256Hex(data) != want {
			return nil, integrityf("%s changed while %s %s was being installed", rel, s.id, s.version)
		}
		return data, nil
	}
	var in installed

	// The payload against its inventory: the exact set, every digest.
	const pfx = "payload/"
	invRaw, err := read(pfx + inventoryName)
	if err != nil {
		return nil, err
	}
	var inv map[string]string
	if err := json.Unmarshal(invRaw, &inv); err != nil {
		return nil, integrityf("%s %s: payload/%s: %v", s.id, s.version, inventoryName, err)
	}
	var diffs []string
	for p, sum := range inv {
		if got, ok := digests[pfx+p]; !ok {
			diffs = append(diffs, "missing "+p)
		} else if got != strings.ToLower(sum) {
			diffs = append(diffs, "changed "+p)
		}
	}
	for p := range digests {
		if rel, ok := strings.CutPrefix(p, pfx); ok && rel != inventoryName {
			if _, listed := inv[rel]; !listed {
				diffs = append(diffs, "unexpected "+rel)
			}
			in.files++
		}
	}
	in.files++ // the inventory
	if len(diffs) > 0 {
		sort.Strings(diffs)
		if len(diffs) > 5 {
			diffs = append(diffs[:5], fmt.Sprintf("and %d more", len(diffs)-5))
		}
		return nil, integrityf("the payload of %s %s does not match its inventory: %s", s.id, s.version, strings.Join(diffs, ", "))
	}
	in.inventorySHA = digests[pfx+inventoryName]
	in.lockSHA = digests[pfx+distribution.LockFileName]

	// release.json binds the inventory and the lock; checksums.txt every
	// other release file.
	if s.kind != receipt.SourcePayload {
		raw, err := read("release.json")
		if err != nil {
			return nil, err
		}
		var rel releaseJSON
		if err := json.Unmarshal(raw, &rel); err != nil || rel.Schema != ReleaseSchema {
			return nil, integrityf("%s %s: release.json is not a %s document", s.id, s.version, ReleaseSchema)
		}
		switch {
		case rel.Distribution.ID != s.id || rel.Distribution.Version != s.version:
			return nil, integrityf("release.json is %s %s, and the archive was taken for %s %s", rel.Distribution.ID, rel.Distribution.Version, s.id, s.version)
		case s.target != "" && rel.Target != s.target:
			return nil, integrityf("release.json is for %s, and the archive is named for %s", rel.Target, s.target)
		case rel.Payload.Path != "payload":
			return nil, integrityf("release.json puts the payload at %q, not payload", rel.Payload.Path)
		case !strings.EqualFold(rel.Payload.InventorySHA256, in.inventorySHA):
			return nil, integrityf("payload/%s has SHA-256 %s, and release.json binds %s", inventoryName, in.inventorySHA, rel.Payload.InventorySHA256)
		case !strings.EqualFold(rel.LockSHA256, in.lockSHA):
			return nil, integrityf("payload/piship.lock has SHA-256 %s, and release.json binds %s", in.lockSHA, rel.LockSHA256)
		}
		s.target = rel.Target
		in.channel = rel.Channel
		in.releaseSHA = digests["release.json"]
		if _, ok := digests["checksums.txt"]; ok {
			raw, err := read("checksums.txt")
			if err != nil {
				return nil, err
			}
			if err := checkChecksums(raw, digests); err != nil {
				return nil, err
			}
		}
	}

	// The target and the lock.
	traw, err := read(pfx + "metadata/target.json")
	if err != nil {
		return nil, err
	}
	var t struct{ Platform, Arch string }
	if err := json.Unmarshal(traw, &t); err != nil {
		return nil, integrityf("payload/metadata/target.json: %v", err)
	}
	if got := t.Platform + "-" + t.Arch; got != s.target {
		return nil, integrityf("payload/metadata/target.json says %s, and the release is for %s", got, s.target)
	}
	lraw, err := read(pfx + distribution.LockFileName)
	if err != nil {
		return nil, err
	}
	l, err := distribution.ParseLock(lraw)
	if err != nil {
		return nil, integrityf("payload/piship.lock: %v", err)
	}
	if l.Distribution.ID != s.id || l.Distribution.Version != s.version {
		return nil, integrityf("payload/piship.lock is %s %s, not %s %s", l.Distribution.ID, l.Distribution.Version, s.id, s.version)
	}
	if err := checkExpectedKey(s.id, s.version, s.expectKey, l); err != nil {
		return nil, err
	}
	in.command, in.entry, in.verifyAtLaunch = l.Distribution.Command, l.Runtime.Entry, l.VerifyAtLaunch
	if !receipt.ValidName(in.command) {
		return nil, integrityf("payload/piship.lock names the command %q, which cannot be a file name", in.command)
	}
	if in.entry == "" || path.Clean(in.entry) != in.entry || !filepath.IsLocal(filepath.FromSlash(in.entry)) {
		return nil, integrityf("payload/piship.lock names the entry %q, which is not a path inside the payload", in.entry)
	}
	if _, ok := inv[in.entry]; !ok {
		return nil, integrityf("the entry %s is not in the payload", in.entry)
	}
	return &in, nil
}

// checkChecksums compares checksums.txt with the digests written: the
// exact set of release files outside payload/ (checksums.txt aside) plus
// the payload inventory, each with its digest.
func checkChecksums(raw []byte, digests map[string]string) error {
	listed := map[string]bool{}
	for n, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		sum, p, ok := strings.Cut(line, "  ")
		if !ok || !hexRE().MatchString(sum) || p == "" {
			return integrityf("checksums.txt line %d is not <sha256>  <path>", n+1)
		}
		got, ok := digests[p]
		if !ok {
			return integrityf("checksums.txt lists %s, which the release does not hold", p)
		}
		if got != sum {
			return integrityf("%s has SHA-256 %s, and checksums.txt says %s", p, got, sum)
		}
		listed[p] = true
	}
	for p := range digests {
		if p == "checksums.txt" || strings.HasPrefix(p, "payload/") && p != "payload/"+inventoryName {
			continue
		}
		if !listed[p] {
			return integrityf("%s is not in checksums.txt", p)
		}
	}
	return nil
}

// checkExpectedKey refuses a release whose lock does not trust expect (a
// "sha256:<hex>" fingerprint; "" expects nothing) for updates. Install runs
// it on every path: a fresh extraction and a release it reuses as it stands.
func checkExpectedKey(id, version, expect string, l *distribution.Lock) error {
	if expect == "" {
		return nil
	}
	var have []string
	if l.Updates != nil {
		for _, k := range l.Updates.Keys {
			if strings.EqualFold(k.Fingerprint, expect) {
				return nil
			}
			have = append(have, k.Fingerprint)
		}
	}
	list := "none"
	if len(have) > 0 {
		list = strings.Join(have, ", ")
	}
	return receipt.Errorf("POLICY_DENIED", "%s %s does not trust the expected key %s for updates (its lock trusts: %s): refusing to install it",
		id, version, expect, list)
}

// checkReusedKey runs checkExpectedKey on the lock of a recorded release.
func checkReusedKey(s *source, rec *receipt.Release) error {
	if s.expectKey == "" {
		return nil
	}
	raw, err := os.ReadFile(filepath.Join(rec.Payload, distribution.LockFileName))
	if err != nil {
		return integrityf("%s %s: cannot read its lock to check the expected key: %v", s.id, s.version, err)
	}
	l, err := distribution.ParseLock(raw)
	if err != nil {
		return integrityf("%s: %v", filepath.Join(rec.Payload, distribution.LockFileName), err)
	}
	return checkExpectedKey(s.id, s.version, s.expectKey, l)
}
