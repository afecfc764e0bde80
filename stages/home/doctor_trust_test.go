package home

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/signkey"
	"piship.dev/piship/stages/tuf"
)

// trustHello makes a TUF repository with stages/tuf (one key per role,
// expiry as given) holding one hello release, and runs tuf.Update into the
// install home's trust/hello/, as the update will: a real trusted store,
// not a hand-written one.
func trustHello(t *testing.T, e *env, exp tuf.Expiry) string {
	t.Helper()
	keys := tuf.Roles[[]tuf.Key]{}
	for _, role := range []string{tuf.RoleRoot, tuf.RoleTargets, tuf.RoleSnapshot, tuf.RoleTimestamp} {
		priv, err := signkey.GenerateKey(role)
		if err != nil {
			t.Fatal(err)
		}
		keys[role] = []tuf.Key{{ID: role, Private: priv}}
	}
	r, err := tuf.Init(filepath.Join(t.TempDir(), "repo"), tuf.InitOptions{Keys: keys, Expiry: exp})
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "hello-1.0.0-linux-x64.tar.gz")
	writeFile(t, archive, strings.Repeat("x", 2000), 0o644)
	if err := r.AddReleases([]tuf.Release{{Archive: archive, Version: "1.0.0", Target: "linux-x64", LockSHA256: strings.Repeat("ab", 32), Channel: "stable"}},
		keys[tuf.RoleTargets], keys[tuf.RoleSnapshot], keys[tuf.RoleTimestamp]); err != nil {
		t.Fatal(err)
	}
	root, err := r.RootBytes(1)
	if err != nil {
		t.Fatal(err)
	}
	dir := receipt.TrustDir(e.homes.Install, "hello")
	if _, err := tuf.Update(context.Background(), tuf.UpdateOptions{Repository: r.Dir, TrustDir: dir, InitialRoot: root,
		ExpectRootSHA256: tuf.RootSHA256(root), Channel: "stable", Target: "linux-x64", Check: false,
		DownloadDir: filepath.Join(t.TempDir(), "downloads")}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func doctorHello(t *testing.T, e *env) *DoctorReport {
	t.Helper()
	rep, err := Doctor(context.Background(), e.opts(), "hello", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// Today's installations have no trust/<id>/: the report says nothing new.
// With a store that tuf.Update wrote, it lists every role's version and
// expiry, in JSON too, and a fresh repository warns of nothing.
func TestDoctorReportsTheTUFTrustState(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	rep := doctorHello(t, e)
	if rep.TUF.Dir != "" || len(rep.TUF.Roles) != 0 || len(rep.Warnings) != 0 || rep.Damaged() {
		t.Fatalf("no trust/hello/: %+v", rep)
	}
	if data, _ := rep.JSON(); !strings.Contains(string(data), `"tuf": {
    "dir": "",
    "roles": []
  },`) || !strings.Contains(string(data), `"warnings": []`) {
		t.Fatalf("JSON without trust/hello/:\n%s", data)
	}

	dir := trustHello(t, e, tuf.Expiry{})
	rep = doctorHello(t, e)
	if rep.Damaged() || len(rep.Warnings) != 0 || rep.TUF.Dir != dir {
		t.Fatalf("fresh trust: %+v", rep)
	}
	var got []string
	for _, r := range rep.TUF.Roles {
		exp, err := time.Parse(time.RFC3339, r.Expires)
		if err != nil || exp.Before(time.Now().Add(13*24*time.Hour)) {
			t.Errorf("%s expires %q (%v)", r.Role, r.Expires, err)
		}
		got = append(got, fmt.Sprintf("%s %d", r.Role, r.Version))
	}
	if strings.Join(got, ", ") != "root 1, timestamp 2, snapshot 2, targets 2" {
		t.Fatalf("roles: %v", got)
	}
	data, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		TUF struct {
			Dir   string `json:"dir"`
			Roles []struct {
				Role    string `json:"role"`
				Version int64  `json:"version"`
				Expires string `json:"expires"`
			} `json:"roles"`
		} `json:"tuf"`
	}
	if err := json.Unmarshal(data, &back); err != nil || back.TUF.Dir != dir || len(back.TUF.Roles) != 4 ||
		back.TUF.Roles[1].Role != "timestamp" || back.TUF.Roles[1].Version != 2 || back.TUF.Roles[1].Expires != rep.TUF.Roles[1].Expires {
		t.Fatalf("JSON tuf (%v):\n%s", err, data)
	}
	if s := rep.TUF.String(); !strings.Contains(s, "root 1 (expires ") || !strings.Contains(s, "timestamp 2 (expires ") {
		t.Fatalf("the line doctor prints: %s", s)
	}
}

// A timestamp that expires in 3 days is a warning naming the role, the
// date and the remedy, not damage; one that has expired is TRUST_EXPIRED.
func TestDoctorWarnsOfATimestampThatExpiresWithinAWeek(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	dir := trustHello(t, e, tuf.Expiry{Timestamp: 3 * 24 * time.Hour})
	rep := doctorHello(t, e)
	if rep.Damaged() || len(rep.Warnings) != 1 {
		t.Fatalf("warnings %+v, found %+v", rep.Warnings, rep.Found)
	}
	w := rep.Warnings[0]
	if w.Code != DoctorTrustExpiring || w.Path != filepath.Join(dir, "timestamp.json") ||
		!strings.Contains(w.Detail, "timestamp (version 2) expires on ") || !strings.Contains(w.Detail, "piship repo refresh") {
		t.Fatalf("warning: %s", w)
	}
	o := e.opts()
	o.Now = func() time.Time { return time.Now().Add(4 * 24 * time.Hour) }
	rep, err := Doctor(context.Background(), o, "hello", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Damaged() || len(rep.Warnings) != 1 || rep.Warnings[0].Code != DoctorTrustExpired || !strings.Contains(rep.Warnings[0].Detail, " expired on ") {
		t.Fatalf("four days later: warnings %+v, found %+v", rep.Warnings, rep.Found)
	}
}

// A trusted timestamp.json that does not parse is TRUST_INVALID, found
// and not repaired: the file is left for the next update to replace.
func TestDoctorReportsCorruptTrustMetadata(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	dir := trustHello(t, e, tuf.Expiry{})
	ts := filepath.Join(dir, "timestamp.json")
	writeFile(t, ts, `{"signed": {"_type": "timestamp", "version": 2`, 0o644)
	rep := doctorHello(t, e)
	if len(rep.Found) != 1 || len(rep.Repaired) != 0 {
		t.Fatalf("found %+v, repaired %+v", rep.Found, rep.Repaired)
	}
	f := rep.Found[0]
	if f.Code != DoctorTrustInvalid || !strings.Contains(f.Detail, ts) || !strings.Contains(f.Detail, "piship update hello") {
		t.Fatalf("finding: %s", f)
	}
	if len(rep.TUF.Roles) != 1 || rep.TUF.Roles[0].Role != "root" {
		t.Fatalf("roles read before the damage: %+v", rep.TUF.Roles)
	}
	if b, _ := os.ReadFile(ts); !strings.HasPrefix(string(b), `{"signed"`) {
		t.Fatal("doctor changed the damaged file")
	}
}

// Uninstall removes trust/<id>/ (purge or not) and what an earlier killed
// uninstall left renamed; doctor's reclaim removes the trust/<id>/ of a
// distribution without a receipt.
func TestUninstallAndReclaimRemoveTrustDir(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	dir := trustHello(t, e, tuf.Expiry{})
	left := filepath.Join(filepath.Dir(dir), receipt.UninstallingPrefix("hello")+"dead")
	writeFile(t, filepath.Join(left, "root.json"), "{}", 0o644)
	res, err := Uninstall(context.Background(), e.opts(), "hello", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, left} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s left behind by uninstall (removed %v)", p, res.Removed)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 0 {
		t.Errorf("trust/ after uninstall: %v", entries)
	}

	// No receipt, apps/hello and trust/hello/ left (a first install
	// killed before its commit): doctor reclaims both.
	writeFile(t, filepath.Join(receipt.AppDir(e.homes.Install, "hello"), ".staging-x", "f"), "x", 0o644)
	dir = trustHello(t, e, tuf.Expiry{})
	rep := doctorHello(t, e)
	if !rep.NotInstalled || rep.TUF.Dir != "" {
		t.Fatalf("doctor of leftovers: %+v", rep)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Fatalf("%s left behind by doctor (reclaimed %v)", dir, rep.Reclaimed)
	}
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 0 {
		t.Errorf("trust/ after doctor: %v", entries)
	}

	// Only trust/hello/ left (no receipt, no apps/hello): doctor says
	// hello is not installed and reclaims it; a second doctor finds
	// nothing at all and says not installed.
	if err := os.RemoveAll(receipt.AppDir(e.homes.Install, "hello")); err != nil {
		t.Fatal(err)
	}
	dir = trustHello(t, e, tuf.Expiry{})
	rep = doctorHello(t, e)
	if !rep.NotInstalled || rep.TUF.Dir != "" {
		t.Fatalf("doctor of a lone trust/hello/: %+v", rep)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Fatalf("%s left behind by doctor (reclaimed %v)", dir, rep.Reclaimed)
	}
	if _, err := Doctor(context.Background(), e.opts(), "hello", 0); !errors.Is(err, receipt.ErrNotInstalled) {
		t.Fatalf("doctor with nothing left: %v, want not installed", err)
	}
}

// A trust/<id>/ without root.json (a first update killed before go-tuf
// wrote it) is not damage: the next update starts from the pinned root.
func TestDoctorTrustDirWithoutRootIsNotDamage(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	dir := receipt.TrustDir(e.homes.Install, "hello")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rep := doctorHello(t, e)
	if rep.Damaged() || len(rep.Warnings) != 0 || rep.TUF.Dir != dir || len(rep.TUF.Roles) != 0 ||
		!strings.Contains(rep.TUF.String(), "no trusted root yet") {
		t.Fatalf("empty trust/hello/: %+v (%s)", rep, rep.TUF)
	}
}
