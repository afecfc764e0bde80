package tuf

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A release's notes are a target of their own beside its archive: a
// check fetches those of the release it picked, verified against the
// targets role (other bytes are refused), a release without notes shows
// none, the status lists no notes as a release, and notes are never
// replaced.
func TestNotesArePublishedAndVerifiedLikeTheArchive(t *testing.T) {
	ks := newKeySet(t, "n")
	r := initRepo(t, ks)
	keys := func() ([]Key, []Key, []Key) { return []Key{ks.targets}, []Key{ks.snapshot}, []Key{ks.timestamp} }
	var last Release
	add := func(version, notes string) error {
		a := writeArchive(t, "hello-"+version+"-linux-x64.tar.gz", 2000)
		rel := Release{Archive: a, Version: version, Target: "linux-x64", LockSHA256: strings.Repeat("ab", 32), Channel: "stable"}
		if notes != "" {
			rel.Notes = filepath.Join(t.TempDir(), "notes.md")
			if err := os.WriteFile(rel.Notes, []byte(notes), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		last = rel
		tk, sk, tsk := keys()
		return r.AddReleases([]Release{rel}, tk, sk, tsk)
	}
	if err := add("1.0.0", ""); err != nil {
		t.Fatal(err)
	}
	in := newInstall(t, r)
	check := func() (*Result, error) {
		o := in.opts(r.Dir)
		o.Check = true
		return Update(context.Background(), o)
	}
	if res, err := check(); err != nil || res.Notes != "" {
		t.Fatalf("a release without notes: %v %q", err, res.Notes)
	}
	notes := "# hello 1.1.0\n\nChanges since v1.0.0:\n\n- fix a thing (abc1234)\n"
	if err := add("1.1.0", notes); err != nil {
		t.Fatal(err)
	}
	res, err := check()
	if err != nil || res.Release.Version != "1.1.0" || res.Notes != notes {
		t.Fatalf("check: %v %+v", err, res)
	}
	if _, err := os.Stat(filepath.Join(in.trust, "root.json")); !os.IsNotExist(err) {
		t.Errorf("a check wrote the trust store: %v", err)
	}
	for _, p := range r.Status().Releases {
		if strings.HasSuffix(p.Path, NotesSuffix) {
			t.Errorf("status lists the notes %s as a release", p.Path)
		}
		// Each release says whether it has notes: 1.1.0 has, 1.0.0 not.
		switch p.Version {
		case "1.1.0":
			if p.Notes == nil || p.Notes.Path != "stable/hello-1.1.0-linux-x64.notes.md" || p.Notes.Length != int64(len(notes)) || len(p.Notes.SHA256) != 64 {
				t.Errorf("status notes of 1.1.0 = %+v", p.Notes)
			}
		case "1.0.0":
			if p.Notes != nil {
				t.Errorf("status gives 1.0.0 notes it has not: %+v", p.Notes)
			}
		}
	}
	// An update (not a check) carries the notes of what it downloads too,
	// and leaves no copy of them in the trusted store it swaps in.
	res, err = Update(context.Background(), in.opts(r.Dir))
	if err != nil || res.Archive == "" || res.Notes != notes {
		t.Fatalf("update: %v %+v", err, res)
	}
	if res.Stage != "" {
		if m, _ := filepath.Glob(filepath.Join(res.Stage, "*notes*")); len(m) != 0 {
			t.Errorf("the staged trusted store holds %v", m)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(in.trust, "*notes*")); len(m) != 0 {
		t.Errorf("the trusted store holds %v", m)
	}
	// Other bytes of the same length where the notes are published.
	m, _ := filepath.Glob(filepath.Join(r.Dir, "targets", "stable", "*.hello-1.1.0-linux-x64.notes.md"))
	if len(m) != 1 {
		t.Fatalf("published notes: %v", m)
	}
	if err := os.WriteFile(m[0], []byte(strings.Replace(notes, "fix", "pwn", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = check()
	wantErr(t, err, ReasonIntegrity, "release notes", "hello-1.1.0-linux-x64.notes.md")
	// The same release again is no change; with other notes it is refused.
	tk, sk, tsk := keys()
	if err := r.AddReleases([]Release{last}, tk, sk, tsk); err != nil {
		t.Fatalf("the same release and notes again: %v", err)
	}
	if err := os.WriteFile(last.Notes, []byte("other notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.AddReleases([]Release{last}, tk, sk, tsk); err == nil || !strings.Contains(err.Error(), "notes are never replaced") {
		t.Errorf("other notes for a published release: %v", err)
	}
}
