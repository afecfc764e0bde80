package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/tuf"
)

// TrustWarnWithin is how far ahead doctor warns of a timestamp or
// snapshot expiry: a week, half the default timestamp lifetime
// (stages/tuf's DefaultExpiry), so a weekly refresh that stopped is
// noticed before updates are refused.
const TrustWarnWithin = 7 * 24 * time.Hour

// TrustState is the update trust of an installation.
type TrustState struct {
	// Channel, Source and RootSHA256 (the pinned initial TUF root) come
	// from the active release's lock (its updates block); empty when it
	// has none, and then updates are refused.
	Channel    string `json:"channel" cty:"channel"`
	Source     string `json:"source" cty:"source"`
	RootSHA256 string `json:"rootSha256" cty:"root_sha256"`
	// Problem says why the lock could not be read.
	Problem string `json:"problem" cty:"problem"`
}

// String is the one-line form doctor prints.
func (t TrustState) String() string {
	if t.Problem != "" {
		return "unknown: " + t.Problem
	}
	var b strings.Builder
	if t.Channel == "" {
		b.WriteString("no updates block in the active lock (updates are refused)")
	} else {
		fmt.Fprintf(&b, "channel %s from %s, initial root %s", t.Channel, t.Source, t.RootSHA256)
	}
	return b.String()
}

func trustState(rc *receipt.Receipt) TrustState {
	ts := TrustState{}
	a := rc.Find(rc.Active)
	if a == nil {
		return ts
	}
	raw, err := readSmall(filepath.Join(a.Payload, distribution.LockFileName))
	var l *distribution.Lock
	if err == nil {
		l, err = distribution.ParseLock(raw)
	}
	if err != nil {
		ts.Problem = err.Error()
		return ts
	}
	if u := l.Updates; u != nil {
		ts.Channel, ts.Source, ts.RootSHA256 = u.Channel, u.Source, u.RootSHA256
	}
	return ts
}

// TUFTrust is the trusted TUF metadata of an installation
// (stages/tuf.ReadTrustState of trust/<id>/).
type TUFTrust struct {
	// Dir is trust/<id>/ when it exists, else "".
	Dir string `json:"dir" cty:"dir"`
	// Roles are root, timestamp, snapshot and targets as far as they were
	// read (a role not fetched yet is missing).
	Roles []TUFRole `json:"roles" cty:"roles"`
}

// TUFRole is one trusted role: its version and expiry (RFC 3339, UTC).
type TUFRole struct {
	Role    string `json:"role" cty:"role"`
	Version int64  `json:"version" cty:"version"`
	Expires string `json:"expires" cty:"expires"`
}

// String is the one-line form doctor prints.
func (t TUFTrust) String() string {
	parts := make([]string, 0, len(t.Roles))
	for _, r := range t.Roles {
		parts = append(parts, fmt.Sprintf("%s %d (expires %s)", r.Role, r.Version, r.Expires))
	}
	if len(parts) == 0 {
		return t.Dir + ": no trusted root yet (the next update starts from the root the lock pins)"
	}
	return t.Dir + ": " + strings.Join(parts, ", ")
}

// checkTUF reports trust/<id>/ when it exists: each trusted role's
// version and expiry, a warning for a timestamp or snapshot that expires
// within TrustWarnWithin or has expired, and TRUST_INVALID for a file
// that does not read or parse. Doctor repairs none of it: the next update
// verifies the store against the pinned root again and re-fetches what
// does not fit, and only the publisher can renew an expiry.
func checkTUF(rep *DoctorReport, home, id string, now time.Time) {
	dir := receipt.TrustDir(home, id)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return // today's installations: nothing to say
	}
	rep.TUF.Dir = dir
	st, err := tuf.ReadTrustState(dir)
	for _, r := range st.Roles {
		rep.TUF.Roles = append(rep.TUF.Roles, TUFRole{Role: r.Role, Version: r.Version, Expires: r.Expires.UTC().Format(time.RFC3339)})
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No root.json yet: what a first update killed before go-tuf wrote
		// it leaves. Not damage: the next update starts from the pinned
		// root, as it would without the directory.
		return
	case err != nil:
		msg := err.Error()
		if te, ok := err.(*tuf.Error); ok {
			msg = te.Msg // the finding has a code of its own
		}
		rep.found(DoctorTrustInvalid, dir, "%s; doctor does not repair trust metadata: run piship update %s, which re-fetches it and verifies it from the trusted root (or, if root.json is the damaged one, remove %s so the next update starts from the root the lock pins)", msg, id, dir)
	}
	for _, r := range st.ExpiringWithin(now, TrustWarnWithin) {
		code, verb := DoctorTrustExpiring, "expires"
		if !r.Expires.After(now) {
			code, verb = DoctorTrustExpired, "expired"
		}
		rep.Warnings = append(rep.Warnings, DoctorItem{Code: code, Path: filepath.Join(dir, r.Role+".json"),
			Detail: fmt.Sprintf("the trusted %s (version %d) %s on %s: updates of %s are refused once it has expired until the publisher refreshes the repository (piship repo refresh) and piship update %s fetches the new one", r.Role, r.Version, verb, r.Expires.UTC().Format(time.RFC3339), id, id)})
	}
}
