package channel

import (
	"archive/tar"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/semver"
)

// maxReleaseDoc bounds the release.json Sign reads from an archive.
const maxReleaseDoc = 1 << 20

// SignOptions says what Sign signs.
type SignOptions struct {
	// Channel names the channel: DIR/<Channel>.json.
	Channel string
	// Keys sign the document, one signature each (distinct ids and keys).
	Keys []KeyPair
	// Sequence is the new sequence; 0 means one more than the existing
	// channel's (1 for a new channel). An explicit one must be greater
	// than the existing channel's.
	Sequence int64
	// ExpiresIn is how long the signed channel is valid (0:
	// DefaultExpiresIn).
	ExpiresIn time.Duration
	// Now is the signing time (zero: the clock).
	Now time.Time
	// Trust, when set, is the trust of the distribution's lock: Sign
	// refuses to write a channel that installs holding this trust would
	// refuse (too few of its keys signing, another distribution).
	Trust *Trust
}

// Sign writes DIR/<channel>.json and DIR/<channel>.json.sig and copies the
// release archives (<id>-<version>-<target>.tar.gz) beside them with their
// .sha256 sidecars. Each archive is read once: its SHA-256 and size are
// computed while its release.json is taken from the stream and while it is
// copied into DIR. release.json is always read from the archive itself,
// never from a release directory beside it, which could differ from what
// is signed. All archives (and an existing channel) must be of one
// distribution.
//
// An existing DIR/<channel>.json is merged: its releases are kept unless
// their archive is gone from DIR; a release of the same version and target
// is replaced. With no archives, the existing channel is signed again with
// a new sequence and expiry. Archives are put in place first, then the
// document, then its signatures, each by a rename: a client reading in
// between sees a document whose signatures do not verify yet and retries
// later, never an unsigned document accepted.
func Sign(dir string, archives []string, o SignOptions) (*Channel, error) {
	if msg := CheckName(o.Channel); msg != "" {
		return nil, configErr("channel %q: %s", o.Channel, msg)
	}
	if err := checkKeys(o.Keys); err != nil {
		return nil, err
	}
	if o.Sequence < 0 {
		return nil, configErr("sequence %d: a sequence is at least 1", o.Sequence)
	}
	if o.ExpiresIn < 0 {
		return nil, configErr("expiry %s: a channel expires after it is signed", o.ExpiresIn)
	}
	if o.ExpiresIn > MaxExpiresDays*24*time.Hour {
		return nil, configErr("expiry %s: a channel is valid for at most %d days", o.ExpiresIn, MaxExpiresDays)
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	expiresIn := o.ExpiresIn
	if expiresIn == 0 {
		expiresIn = DefaultExpiresIn
	}
	if expiresIn < time.Second {
		return nil, configErr("expiry %s: a channel is valid for at least a second", expiresIn)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, configErr("cannot create the channel directory %s: %v", dir, err)
	}
	docPath := filepath.Join(dir, DocName(o.Channel))

	// The existing channel.
	var old *Channel
	if raw, err := os.ReadFile(docPath); err == nil {
		c, perr := Parse(raw)
		if perr != nil {
			e, _ := AsError(perr)
			return nil, configErr("%s exists but cannot be extended: %s; move it away to start the channel afresh", docPath, e.Msg)
		}
		if c.Channel != o.Channel {
			return nil, configErr("%s names channel %q, not %q", docPath, c.Channel, o.Channel)
		}
		old = c
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, configErr("cannot read %s: %v", docPath, err)
	}
	if old == nil && len(archives) == 0 {
		return nil, configErr("nothing to sign: %s does not exist and no release archives were given", docPath)
	}

	// The new archives, each read once and copied to a temporary file in
	// dir (unless it is already there).
	var placed []*inspected
	defer func() {
		for _, p := range placed {
			if p.tmp != nil {
				p.tmp.Abort()
			}
		}
	}()
	distribution, distFrom := "", ""
	if old != nil {
		distribution, distFrom = old.Distribution, docPath+" is the channel of"
	}
	byKey := map[[2]string]string{}
	for _, a := range archives {
		in, err := inspectArchive(a, dir)
		if in != nil {
			placed = append(placed, in)
		}
		if err != nil {
			return nil, err
		}
		switch {
		case distribution == "":
			distribution, distFrom = in.id, a+" is a release of"
		case in.id != distribution:
			return nil, configErr("%s is a release of distribution %q, but %s %q: a channel holds one distribution", a, in.id, distFrom, distribution)
		}
		k := [2]string{in.rel.Version, in.rel.Target}
		if prev, dup := byKey[k]; dup {
			return nil, configErr("%s and %s are both version %s for %s", prev, a, k[0], k[1])
		}
		byKey[k] = a
	}

	// Merge.
	c := &Channel{Schema: Schema, Distribution: distribution, Channel: o.Channel, Releases: []Release{}}
	if old != nil {
		for _, r := range old.Releases {
			if _, replaced := byKey[[2]string{r.Version, r.Target}]; replaced {
				continue
			}
			if fi, err := os.Stat(filepath.Join(dir, r.Archive)); err != nil || !fi.Mode().IsRegular() {
				continue // its archive is gone: the release is dropped
			}
			c.Releases = append(c.Releases, r)
		}
	}
	for _, p := range placed {
		c.Releases = append(c.Releases, p.rel)
	}
	sortReleases(c.Releases)

	switch {
	case old == nil && o.Sequence == 0:
		c.Sequence = 1
	case old == nil:
		c.Sequence = o.Sequence
	case o.Sequence == 0:
		c.Sequence = old.Sequence + 1
	case o.Sequence <= old.Sequence:
		return nil, configErr("sequence %d is not greater than %d, the sequence of %s: installs refuse a sequence below the one they accepted; omit it to use %d",
			o.Sequence, old.Sequence, docPath, old.Sequence+1)
	default:
		c.Sequence = o.Sequence
	}
	c.Expires = now.Add(expiresIn).UTC().Truncate(time.Second)

	doc := c.Marshal()
	sf := SignatureFile{Signatures: []Signature{}}
	trust := Trust{Distribution: distribution, Keys: map[string]ed25519.PublicKey{}, Threshold: len(o.Keys)}
	for _, k := range o.Keys {
		sf.Signatures = append(sf.Signatures, Signature{
			KeyID: k.ID, Algorithm: Algorithm,
			Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(k.Private, doc)),
		})
		trust.Keys[k.ID] = k.Private.Public().(ed25519.PublicKey)
	}
	sig, err := json.MarshalIndent(&sf, "", "  ")
	if err != nil {
		return nil, configErr("cannot encode the signatures: %v", err)
	}
	sig = append(sig, '\n')
	// What is written must verify; with o.Trust, as installs will check it.
	if _, err := Verify(doc, sig, trust, o.Channel, c.Sequence, now); err != nil {
		return nil, fmt.Errorf("channel: the signed document does not verify: %w", err)
	}
	if o.Trust != nil {
		if _, err := Verify(doc, sig, *o.Trust, o.Channel, 0, now); err != nil {
			e, _ := AsError(err)
			return nil, configErr("installs of %s would refuse this channel: %s", o.Trust.Distribution, e.Msg)
		}
	}

	for _, p := range placed {
		if p.tmp != nil {
			if err := p.tmp.Commit(); err != nil {
				return nil, configErr("cannot copy %s to %s: %v", p.path, p.dst, err)
			}
			p.tmp = nil
		}
		sidecar := fmt.Sprintf("%s  %s\n", p.rel.SHA256, p.rel.Archive)
		if err := writeFileAtomic(p.dst+".sha256", []byte(sidecar), 0o644); err != nil {
			return nil, configErr("cannot write %s.sha256: %v", p.dst, err)
		}
	}
	if err := writeFileAtomic(docPath, doc, 0o644); err != nil {
		return nil, configErr("cannot write %s: %v", docPath, err)
	}
	if err := writeFileAtomic(filepath.Join(dir, SigName(o.Channel)), sig, 0o644); err != nil {
		return nil, configErr("cannot write %s: %v", SigName(o.Channel), err)
	}
	return c, nil
}

func checkKeys(keys []KeyPair) error {
	if len(keys) == 0 {
		return configErr("no signing key: give at least one key (piship keygen makes one)")
	}
	ids := map[string]bool{}
	pubs := map[string]string{}
	for _, k := range keys {
		if msg := CheckKeyID(k.ID); msg != "" {
			return configErr("key id %q: %s", k.ID, msg)
		}
		if len(k.Private) != ed25519.PrivateKeySize {
			return configErr("key %q is not an Ed25519 private key", k.ID)
		}
		if ids[k.ID] {
			return configErr("key id %q is given twice", k.ID)
		}
		ids[k.ID] = true
		pub := string(k.Private.Public().(ed25519.PublicKey))
		if other, dup := pubs[pub]; dup {
			return configErr("keys %q and %q are the same key: a threshold counts distinct keys", other, k.ID)
		}
		pubs[pub] = k.ID
	}
	return nil
}

// inspected is a release archive read by inspectArchive.
type inspected struct {
	path string         // as given
	dst  string         // dir/<archive>
	tmp  *atomicfs.File // the copy in dir, nil when the archive is dst itself
	id   string
	rel  Release
}

// inspectArchive reads the archive at path once: its SHA-256 and size,
// its release.json from the stream, and a copy into a temporary file in
// dir unless the archive already is dir/<its name>.
func inspectArchive(path, dir string) (*inspected, error) {
	base := filepath.Base(path)
	in := &inspected{path: path, dst: filepath.Join(dir, base)}
	f, err := os.Open(path)
	if err != nil {
		return nil, configErr("cannot read the release archive %s: %v", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, configErr("the release archive %s is not a regular file", path)
	}
	h := sha256.New()
	var sink io.Writer = h
	var tmp *atomicfs.File
	if di, err := os.Stat(in.dst); err != nil || !os.SameFile(fi, di) {
		if tmp, err = atomicfs.Create(in.dst, 0o644, atomicfs.Options{Sync: true}); err != nil {
			return nil, configErr("cannot copy %s into %s: %v", path, dir, err)
		}
		in.tmp = tmp
		defer tmp.Close()
		sink = io.MultiWriter(h, tmp)
	}
	cw := &countWriter{w: sink}
	tee := io.TeeReader(f, cw)

	var raw []byte
	zr, err := gzip.NewReader(tee)
	if err != nil {
		return in, configErr("%s is not a gzip-compressed release archive: %v", path, err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return in, configErr("%s is not a readable release archive: %v", path, err)
		}
		if strings.TrimPrefix(hdr.Name, "./") == releasejson.Name && hdr.Typeflag == tar.TypeReg {
			if hdr.Size > maxReleaseDoc {
				return in, configErr("%s: its release.json is larger than 1 MiB", path)
			}
			if raw, err = io.ReadAll(tr); err != nil {
				return in, configErr("%s: cannot read its release.json: %v", path, err)
			}
			break
		}
	}
	// The rest of the file, for the digest and the copy.
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return in, configErr("cannot read %s: %v", path, err)
	}
	if raw == nil {
		return in, configErr("%s holds no release.json: it is not a piship release archive (piship release writes <id>-<version>-<target>.tar.gz)", path)
	}
	// The rules install and verify-release read it by: what they would
	// refuse is not signed.
	ri, err := releasejson.Parse(raw)
	if err != nil {
		return in, configErr("%s: its release.json is refused: %v (only a release that installs is signed)", path, err)
	}
	if !sha256RE().MatchString(ri.LockSHA256) {
		return in, configErr("%s: its release.json has no lockSha256 digest", path)
	}
	if _, err := semver.Parse(ri.Distribution.Version); err != nil {
		return in, configErr("%s: its release.json: %v", path, err)
	}
	want := fmt.Sprintf("%s-%s-%s.tar.gz", ri.Distribution.ID, ri.Distribution.Version, ri.Target)
	if base != want {
		return in, configErr("%s holds release %s %s for %s, whose archive is named %s: rename it back", path, ri.Distribution.ID, ri.Distribution.Version, ri.Target, want)
	}
	if msg := checkFileName(base); msg != "" {
		return in, configErr("%s: %s", path, msg)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if side, err := os.ReadFile(path + ".sha256"); err == nil {
		fields := strings.Fields(string(side))
		if len(fields) == 0 || fields[0] != sum {
			return in, &Error{Code: CodeIntegrityFailed, Reason: ReasonDigest,
				Msg: fmt.Sprintf("%s has sha256 %s but its sidecar %s.sha256 says %q: the archive changed after its release", path, sum, base, firstField(fields))}
		}
	}
	if tmp != nil {
		if err := tmp.Seal(); err != nil {
			return in, configErr("cannot copy %s into %s: %v", path, dir, err)
		}
	}
	in.id = ri.Distribution.ID
	in.rel = Release{Version: ri.Distribution.Version, Target: ri.Target, Archive: base, SHA256: sum, Bytes: cw.n, LockSHA256: ri.LockSHA256}
	return in, nil
}

func firstField(f []string) string {
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeFileAtomic writes path through a flushed temporary sibling and a
// rename.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	return atomicfs.WriteFile(path, data, mode, atomicfs.Options{Sync: true})
}
