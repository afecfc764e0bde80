package home

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage/errcode"
)

// installed is what the checks of a freshly written version learned.
type installed struct {
	lockSHA, inventorySHA string
	releaseSHA            string // "" for a payload directory
	command, entry        string
	channel               string
	verifyAtLaunch        bool
	files                 int
	searchTools           []receipt.SearchTool
	node                  *receipt.Node
}

// nodeRuntime is the lock's pinned Node as installed in dir (the release
// rules made sure the inventory holds it at its pinned digest), or nil.
func nodeRuntime(dir string, l *distribution.Lock, digest func(payloadPath string) (string, bool)) *receipt.Node {
	if l.Node == nil {
		return nil
	}
	p, ok := release.NodePath(func(p string) bool { _, ok := digest(p); return ok })
	if !ok {
		return nil
	}
	sum, _ := digest(p)
	n := &receipt.Node{Version: l.Node.Version, Path: p, SHA256: sum}
	if fi, err := os.Stat(filepath.Join(dir, "payload", filepath.FromSlash(p))); err == nil {
		n.Size = fi.Size()
	}
	return n
}

// searchTools lists the lock's bundled search tools as installed in dir:
// their payload path and the digest written (digest looks it up; the
// release rules made sure each is in the inventory) and size.
func searchTools(dir string, l *distribution.Lock, digest func(payloadPath string) (string, bool)) []receipt.SearchTool {
	var out []receipt.SearchTool
	for _, name := range slices.Sorted(maps.Keys(l.SearchTools)) {
		for _, p := range []string{"tools/" + name, "tools/" + name + ".exe"} {
			sum, ok := digest(p)
			if !ok {
				continue
			}
			t := receipt.SearchTool{Name: name, Path: p, SHA256: sum}
			if fi, err := os.Stat(filepath.Join(dir, "payload", filepath.FromSlash(p))); err == nil {
				t.Size = fi.Size()
			}
			out = append(out, t)
			break
		}
	}
	return out
}

func integrityf(format string, args ...any) error {
	return receipt.Errorf(receipt.CodeIntegrity, format, args...)
}

// checkInstalled applies the release rules (release.Check, the one
// statement of what a valid release is) to what was written into dir
// (digests: slash path relative to dir -> SHA-256, computed while writing).
// Only the small metadata files are read back; each one's bytes are
// checked against the digest computed while it was written.
func checkInstalled(dir string, s *source, digests map[string]string, archiveSHA, signedLock string) (*installed, error) {
	if s.kind == receipt.SourceArchive && s.expectSHA != "" && archiveSHA != s.expectSHA {
		return nil, integrityf("the archive %s has SHA-256 %s, and %s says %s", filepath.Base(s.path), archiveSHA, s.expectWhy, s.expectSHA)
	}
	c := release.Check(release.Input{
		PayloadOnly: s.kind == receipt.SourcePayload,
		Name:        release.Identity{ID: s.id, Version: s.version, Target: s.target},
		Files:       digests,
		Read:        release.DirReader(dir),
		SignedLock:  signedLock,
	})
	if err := c.Err(); err != nil {
		return nil, integrityf("%s %s: %w: nothing was installed; get the release again from its publisher", s.id, s.version, err)
	}
	s.target = c.Identity.Target
	l := c.Lock
	if err := checkExpectedKey(s.id, s.version, s.expectKey, l); err != nil {
		return nil, err
	}
	in := &installed{lockSHA: c.LockSHA256, inventorySHA: c.InventorySHA256, files: c.Files,
		command: l.Distribution.Command, entry: l.Runtime.Entry, verifyAtLaunch: l.VerifyAtLaunch}
	in.searchTools = searchTools(dir, l, func(p string) (string, bool) { sum, ok := digests["payload/"+p]; return sum, ok })
	in.node = nodeRuntime(dir, l, func(p string) (string, bool) { sum, ok := digests["payload/"+p]; return sum, ok })
	if c.Release != nil {
		in.channel = c.Release.Channel
		in.releaseSHA = digests["release.json"]
	}
	return in, nil
}

// checkExpectedKey refuses a release whose lock does not pin expect (a
// "sha256:<hex>" root digest, --expect-root; "" expects nothing) as the
// initial TUF root of its updates. Install runs it on every path: a fresh
// extraction and a release it reuses as it stands.
func checkExpectedKey(id, version, expect string, l *distribution.Lock) error {
	if expect == "" {
		return nil
	}
	want, msg := distribution.CheckRootPin(expect)
	if msg != "" {
		return receipt.Errorf(receipt.CodeConfigInvalid, "--expect-root %q: %s", expect, msg)
	}
	have := "none"
	if l.Updates != nil && l.Updates.RootSHA256 != "" {
		if l.Updates.RootSHA256 == want {
			return nil
		}
		have = l.Updates.RootSHA256
	}
	return receipt.Errorf(errcode.PolicyDenied, "%s %s does not pin the expected root %s for updates (its lock pins: %s): another distribution's repository or a replaced root; refusing to install it",
		id, version, want, have)
}

// checkSignedLock refuses a recorded release an update would reuse whose
// lock is not the one the signed TUF target claims (the signed-entry rule
// of a fresh extraction, release.Check).
func checkSignedLock(s *source, signed, recorded string) error {
	if err := release.CheckSignedLock(recorded, signed); err != nil {
		return integrityf("%s %s: %w: nothing was installed; report it to the publisher", s.id, s.version, err)
	}
	return nil
}

// checkReusedKey runs checkExpectedKey on the lock of a recorded release.
func checkReusedKey(s *source, rec *receipt.Release) error {
	if s.expectKey == "" {
		return nil
	}
	raw, err := atomicfs.ReadRegular(filepath.Join(rec.Payload, distribution.LockFileName), 0)
	if err != nil {
		return integrityf("%s %s: cannot read its lock to check the expected key: %v", s.id, s.version, err)
	}
	l, err := distribution.ParseLock(raw)
	if err != nil {
		return integrityf("%s: %v", filepath.Join(rec.Payload, distribution.LockFileName), err)
	}
	return checkExpectedKey(s.id, s.version, s.expectKey, l)
}

// checkRecorded applies the release rules to an installed version as it
// stands (doctor): every file of rec.Dir is hashed once and the rules judge
// the digests, as at install.
func checkRecorded(ctx context.Context, id string, rec *receipt.Release) error {
	files, err := release.Scan(ctx, rec.Dir)
	if err != nil {
		return integrityf("%s: %v", rec.Dir, err)
	}
	c := release.Check(release.Input{
		PayloadOnly: rec.Source == receipt.SourcePayload,
		Name:        release.Identity{ID: id, Version: rec.Version, Target: rec.Target},
		Files:       files,
		Read:        release.DirReader(rec.Dir),
	})
	if err := c.Err(); err != nil {
		return integrityf("%s: %w: install the release again", rec.Dir, err)
	}
	return nil
}
