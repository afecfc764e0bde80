package tuf

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"piship.dev/piship/cache/atomicfs"
)

// RoleState is one role's trusted version and expiry.
type RoleState struct {
	Role    string
	Version int64
	Expires time.Time
}

// TrustState is what an installation trusts: the roles of TrustDir's
// metadata in the order root, timestamp, snapshot, targets (a role never
// fetched yet is missing).
type TrustState struct {
	Dir   string
	Roles []RoleState
}

// ExpiringWithin lists the timestamp and snapshot roles that expire
// within d of now: what doctor warns about (a week), since those are the
// roles the publisher's scheduled refresh must keep ahead.
func (s TrustState) ExpiringWithin(now time.Time, d time.Duration) []RoleState {
	var out []RoleState
	for _, r := range s.Roles {
		if (r.Role == RoleTimestamp || r.Role == RoleSnapshot) && r.Expires.Before(now.Add(d)) {
			out = append(out, r)
		}
	}
	return out
}

// ReadTrustState reads the trusted metadata go-tuf keeps in trustDir,
// without verifying it again (Update verified each file before writing
// it; doctor only reports). No root.json is fs.ErrNotExist; a role file
// that is there but does not read or parse is an UPDATE_FAILED error
// (ReasonMalformed) naming it, with the roles read before it in st.
func ReadTrustState(trustDir string) (TrustState, error) {
	st := TrustState{Dir: trustDir}
	read := func(role string) ([]byte, error) {
		return atomicfs.ReadRegular(filepath.Join(trustDir, role+".json"), 0)
	}
	add := func(role string, v int64, exp time.Time) {
		st.Roles = append(st.Roles, RoleState{Role: role, Version: v, Expires: exp})
	}
	data, err := read(RoleRoot)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return st, err
		}
		return st, updateErr(ReasonFetch, err, "cannot read the trusted root in %s: %v", trustDir, err)
	}
	root, err := metadata.Root().FromBytes(data)
	if err != nil {
		return st, updateErr(ReasonMalformed, err, "%s is not TUF root metadata (%v): the next update starts again from it only if it reads; remove the directory to start from the pinned root", filepath.Join(trustDir, "root.json"), err)
	}
	add(RoleRoot, root.Signed.Version, root.Signed.Expires)
	// A missing role is one never fetched yet; one that is there but does
	// not read or parse is damage the caller must hear about, not a role
	// to leave out silently.
	bad := func(role string, err error) error {
		p := filepath.Join(trustDir, role+".json")
		return updateErr(ReasonMalformed, err, "%s is not TUF %s metadata (%v): the next update drops it and fetches it again, verified from the trusted root", p, role, err)
	}
	for _, role := range []string{RoleTimestamp, RoleSnapshot, RoleTargets} {
		b, err := read(role)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return st, updateErr(ReasonFetch, err, "cannot read %s: %v", filepath.Join(trustDir, role+".json"), err)
		}
		var v int64
		var exp time.Time
		switch role {
		case RoleTimestamp:
			var m *metadata.Metadata[metadata.TimestampType]
			if m, err = metadata.Timestamp().FromBytes(b); err == nil {
				v, exp = m.Signed.Version, m.Signed.Expires
			}
		case RoleSnapshot:
			var m *metadata.Metadata[metadata.SnapshotType]
			if m, err = metadata.Snapshot().FromBytes(b); err == nil {
				v, exp = m.Signed.Version, m.Signed.Expires
			}
		default:
			var m *metadata.Metadata[metadata.TargetsType]
			if m, err = metadata.Targets().FromBytes(b); err == nil {
				v, exp = m.Signed.Version, m.Signed.Expires
			}
		}
		if err != nil {
			return st, bad(role, err)
		}
		add(role, v, exp)
	}
	return st, nil
}

// TUFKeyIDOf is the key id TUF metadata names an Ed25519 public key by
// (what RevokeKey takes), for a key known by its public half only.
func TUFKeyIDOf(pub ed25519.PublicKey) (string, error) {
	pk, err := metadata.KeyFromPublicKey(pub)
	if err != nil {
		return "", configErr("not an Ed25519 public key: %v", err)
	}
	return pk.ID()
}
