package tuf

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// releaseJSON is a release.json releasejson.Parse accepts.
func releaseJSON(id, version, target string) string {
	return `{"schema":"piship-release/v1","distribution":{"id":"` + id + `","version":"` + version + `","command":"` + id + `"},"lockSha256":"` +
		strings.Repeat("c", 64) + `","target":"` + target + `","created":"2026-01-01T00:00:00Z","qualification":"qualified",` +
		`"payload":{"path":"payload/","inventorySha256":"` + strings.Repeat("d", 64) + `","files":1},` +
		`"packageAudits":{"verdict":"not-applicable","locks":0,"reason":"no package locks"}}`
}

// tarGz writes a .tar.gz of the named files in order.
func tarGz(t *testing.T, path string, files ...[2]string) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, nf := range files {
		if err := tw.WriteHeader(&tar.Header{Name: nf[0], Mode: 0o644, Size: int64(len(nf[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(nf[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// ReleaseOf takes the custom fields from the archive's own release.json
// and refuses what an install would refuse, naming the archive.
func TestReleaseOfReadsTheArchivesReleaseJSON(t *testing.T) {
	dir := t.TempDir()
	a := tarGz(t, filepath.Join(dir, "hello-1.2.0-linux-x64.tar.gz"), [2]string{"payload/x", "x"}, [2]string{"./release.json", releaseJSON("hello", "1.2.0", "linux-x64")})
	rel, err := ReleaseOf(a, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if rel != (Release{Archive: a, Format: FormatArchiveV1, Version: "1.2.0", Target: "linux-x64", LockSHA256: strings.Repeat("c", 64), Channel: "beta"}) {
		t.Fatalf("ReleaseOf: %+v", rel)
	}
	renamed := filepath.Join(dir, "hello-9.9.9-linux-x64.tar.gz")
	if err := os.Rename(a, renamed); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{renamed, "is named hello-1.2.0-linux-x64.tar.gz: rename it back"},
		{tarGz(t, filepath.Join(dir, "none.tar.gz"), [2]string{"payload/x", "x"}), "holds no release.json"},
		{tarGz(t, filepath.Join(dir, "bad.tar.gz"), [2]string{"release.json", `{"schema":"piship-release/v1"}`}), "its release.json is refused"},
		{writeArchive(t, "plain.tar.gz", 10), "is not a release archive"},
		{filepath.Join(dir, "missing.tar.gz"), "cannot read the release archive"},
	} {
		_, err := ReleaseOf(c.path, "stable")
		if err == nil || !strings.HasPrefix(err.Error(), "CONFIG_INVALID: ") || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReleaseOf(%s): %v, want CONFIG_INVALID naming it and %q", c.path, err, c.want)
		}
	}
}

// Status reports each role's version, expiry, threshold and TUF key ids,
// and the releases sorted by path.
func TestStatusReportsRolesAndReleases(t *testing.T) {
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	addRelease(t, r, ks, "1.1.0", "stable")
	addRelease(t, r, ks, "1.0.0", "beta")
	st := r.Status()
	if len(st.Roles) != 4 || len(st.Releases) != 2 {
		t.Fatalf("status: %+v", st)
	}
	want := map[string]int64{RoleRoot: 1, RoleTargets: 3, RoleSnapshot: 3, RoleTimestamp: 3}
	for i, rs := range st.Roles {
		if rs.Role != roles[i] || rs.Version != want[rs.Role] || rs.Threshold != 1 || len(rs.KeyIDs) != 1 || !rs.Expires.After(r.now()) {
			t.Errorf("role %d: %+v", i, rs)
		}
	}
	if id, _ := ks.targets.TUFKeyID(); st.Roles[1].KeyIDs[0] != id {
		t.Errorf("targets key ids %v, want %s", st.Roles[1].KeyIDs, id)
	}
	if p := st.Releases[0]; p.Path != "beta/hello-1.0.0-linux-x64.tar.gz" || p.Version != "1.0.0" || p.Channel != "beta" || p.Length != 3000 || len(p.SHA256) != 64 {
		t.Errorf("first release: %+v", p)
	}
	if st.Releases[1].Path != "stable/hello-1.1.0-linux-x64.tar.gz" {
		t.Errorf("releases are not sorted: %+v", st.Releases)
	}
}
