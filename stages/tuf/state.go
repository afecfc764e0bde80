package tuf

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"
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
// it; doctor only reports). No root.json is fs.ErrNotExist.
func ReadTrustState(trustDir string) (TrustState, error) {
	st := TrustState{Dir: trustDir}
	read := func(role string) ([]byte, error) {
		return os.ReadFile(filepath.Join(trustDir, role+".json"))
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
	if b, err := read(RoleTimestamp); err == nil {
		if m, err := metadata.Timestamp().FromBytes(b); err == nil {
			add(RoleTimestamp, m.Signed.Version, m.Signed.Expires)
		}
	}
	if b, err := read(RoleSnapshot); err == nil {
		if m, err := metadata.Snapshot().FromBytes(b); err == nil {
			add(RoleSnapshot, m.Signed.Version, m.Signed.Expires)
		}
	}
	if b, err := read(RoleTargets); err == nil {
		if m, err := metadata.Targets().FromBytes(b); err == nil {
			add(RoleTargets, m.Signed.Version, m.Signed.Expires)
		}
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
