package tuf

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"piship.dev/piship/cache"
)

// readTree maps every file under dir to its bytes ("" for none).
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	return out
}

// FetchRelease (repair's source when no archive is kept) downloads an
// older release by its digest after the same refresh as an update, writes
// no trusted metadata, and refuses other bytes or a digest the repository
// does not sign.
func TestFetchReleaseIsVerifiedAndMovesNoTrust(t *testing.T) {
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	old := addRelease(t, r, ks, "1.0.0", "stable")
	addRelease(t, r, ks, "1.1.0", "stable")
	in := newInstall(t, r)
	mustUpdate(t, in, r.Dir) // trusts this state, 1.1.0 downloaded
	if err := r.Refresh([]Key{ks.snapshot}, []Key{ks.timestamp}); err != nil {
		t.Fatal(err)
	}
	trust := readTree(t, in.trust)
	sum, err := cache.HashFile(old)
	if err != nil {
		t.Fatal(err)
	}
	dl := filepath.Join(t.TempDir(), ".downloads")
	o := in.opts(r.Dir)
	o.DownloadDir = dl
	o.Active = "1.1.0"

	// Other bytes at the signed length: refused, nothing written.
	m, _ := filepath.Glob(filepath.Join(r.Dir, "targets", "stable", "*.hello-1.0.0-linux-x64.tar.gz"))
	good, _ := os.ReadFile(m[0])
	bad := bytes.Clone(good)
	bad[0] ^= 1
	os.WriteFile(m[0], bad, 0o644)
	_, err = FetchRelease(context.Background(), o, sum)
	wantErr(t, err, ReasonIntegrity, "is not the archive the targets role signs for stable/hello-1.0.0-linux-x64.tar.gz")
	if files := readTree(t, dl); len(files) != 0 {
		t.Errorf("a refused fetch left %v", files)
	}
	os.WriteFile(m[0], good, 0o644)

	// A digest the repository signs for no release.
	_, err = FetchRelease(context.Background(), o, "ab"+sum[2:])
	wantErr(t, err, ReasonNoRelease, "publishes no release with sha256 ab")

	res, err := FetchRelease(context.Background(), o, sum)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(res.Archive)
	want, _ := os.ReadFile(old)
	if res.Archive != filepath.Join(dl, "hello-1.0.0-linux-x64.tar.gz") || !bytes.Equal(got, want) || res.Release.Version != "1.0.0" || res.TimestampVersion != 4 {
		t.Fatalf("fetched %+v", res)
	}
	// The newer timestamp was verified, not trusted: trust/ is as it was.
	after := readTree(t, in.trust)
	if len(after) != len(trust) {
		t.Fatalf("trust files %d -> %d", len(trust), len(after))
	}
	for p, b := range trust {
		if after[p] != b {
			t.Errorf("FetchRelease changed %s", p)
		}
	}
}

// The names keygen gave the keys are recorded by the commands that sign
// and reported beside the key ids.
func TestStatusNamesTheKeys(t *testing.T) {
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	for _, role := range r.Status().Roles {
		if len(role.KeyNames) != 1 || role.KeyNames[0] != "a-"+role.Role {
			t.Errorf("%s: key names %v for ids %v", role.Role, role.KeyNames, role.KeyIDs)
		}
	}
}
