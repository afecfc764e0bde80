package channel

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/cache/canon"
)

// signed signs a channel of hello 1.0.0 for linux-x64 with keys and
// returns the channel directory.
func signed(t *testing.T, keys []KeyPair) (string, *Channel) {
	t.Helper()
	a := makeArchive(t, t.TempDir(), "hello", "1.0.0", "linux-x64")
	dir := filepath.Join(t.TempDir(), "channel")
	c, err := Sign(dir, []string{a}, SignOptions{Channel: "stable", Keys: keys, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return dir, c
}

func TestSignVerify(t *testing.T) {
	keys := testKeys(t, 3)
	src := t.TempDir()
	a := makeArchive(t, src, "hello", "1.0.0", "linux-x64")
	dir := filepath.Join(t.TempDir(), "channel")
	c, err := Sign(dir, []string{a}, SignOptions{Channel: "stable", Keys: keys[:2], Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sequence != 1 || !c.Expires.Equal(now.Add(30*24*time.Hour)) || c.Distribution != "hello" || c.Schema != Schema {
		t.Errorf("channel %+v", c)
	}
	body := readTestFile(t, a)
	want := Release{Version: "1.0.0", Target: "linux-x64", Archive: "hello-1.0.0-linux-x64.tar.gz",
		SHA256: canon.SHA256Hex(body), Bytes: int64(len(body)), LockSHA256: lockSum}
	if !reflect.DeepEqual(c.Releases, []Release{want}) {
		t.Errorf("releases %+v\nwant %+v", c.Releases, want)
	}
	// The archive and its sidecar are beside the document, byte for byte.
	if got := readTestFile(t, filepath.Join(dir, want.Archive)); string(got) != string(body) {
		t.Error("the copied archive differs")
	}
	if got := string(readTestFile(t, filepath.Join(dir, want.Archive+".sha256"))); got != want.SHA256+"  "+want.Archive+"\n" {
		t.Errorf("sidecar %q", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, want.Archive)); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("archive mode: %v %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}

	doc := readTestFile(t, filepath.Join(dir, "stable.json"))
	sig := readTestFile(t, filepath.Join(dir, "stable.json.sig"))
	if !strings.Contains(string(doc), `"expires": "2026-03-31T12:00:00Z"`) || !strings.HasSuffix(string(doc), "}\n") {
		t.Errorf("document:\n%s", doc)
	}
	v, err := Verify(doc, sig, trustOf("hello", 2, keys...), "stable", 0, now)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v.Signers, []string{"k1", "k2"}) || !reflect.DeepEqual(v.Channel, c) {
		t.Errorf("verified %v %+v", v.Signers, v.Channel)
	}
	// The floor equal to the sequence is the same document again.
	if _, err := Verify(doc, sig, trustOf("hello", 2, keys...), "stable", 1, now); err != nil {
		t.Errorf("floor = sequence: %v", err)
	}
	// The original's single-signature form is read too.
	var sf SignatureFile
	if err := json.Unmarshal(sig, &sf); err != nil {
		t.Fatal(err)
	}
	one, _ := json.Marshal(sf.Signatures[0])
	if _, err := Verify(doc, one, trustOf("hello", 1, keys...), "stable", 0, now); err != nil {
		t.Errorf("single signature object: %v", err)
	}
}

func TestVerifyRefusals(t *testing.T) {
	keys := testKeys(t, 4)
	dir, c := signed(t, keys[:2])
	doc := readTestFile(t, filepath.Join(dir, "stable.json"))
	sig := readTestFile(t, filepath.Join(dir, "stable.json.sig"))
	var sf SignatureFile
	if err := json.Unmarshal(sig, &sf); err != nil {
		t.Fatal(err)
	}
	sigFile := func(ss ...Signature) []byte {
		b, _ := json.Marshal(SignatureFile{Signatures: ss})
		return b
	}
	signBy := func(k KeyPair, d []byte) Signature {
		return Signature{KeyID: k.ID, Algorithm: Algorithm, Signature: base64.StdEncoding.EncodeToString(ed25519Sign(k, d))}
	}
	k1, k2, k3, k4 := keys[0], keys[1], keys[2], keys[3]
	trust3 := trustOf("hello", 2, k1, k2, k3)
	flipped := append([]byte{}, doc...)
	i := strings.Index(string(flipped), `"sequence": 1`) + len(`"sequence": `)
	flipped[i] = '9'
	garbage := []byte(`{"schema": "piship-channel/v1", "distribution": "hello"}`)
	sameKey := trustOf("hello", 2, k1)
	sameKey.Keys["k1-again"] = sameKey.Keys["k1"]

	cases := []struct {
		name    string
		doc     []byte
		sig     []byte
		trust   Trust
		channel string
		floor   int64
		now     time.Time
		reason  Reason
		frags   []string
	}{
		{"a byte flipped in the document", flipped, sig, trust3, "stable", 0, now, ReasonSignatures,
			[]string{"0 of the 2 required", "invalid signatures by: k1, k2"}},
		{"below the threshold", doc, sig, trustOf("hello", 3, k1, k2, k3), "stable", 0, now, ReasonSignatures,
			[]string{"2 of the 3 required", "verified: k1, k2"}},
		{"one key signing twice counts once", doc, sigFile(sf.Signatures[0], sf.Signatures[0]), trust3, "stable", 0, now, ReasonSignatures,
			[]string{"1 of the 2 required", "verified: k1"}},
		{"an unknown key does not count", doc, sigFile(sf.Signatures[0], signBy(k4, doc)), trust3, "stable", 0, now, ReasonSignatures,
			[]string{"1 of the 2 required", "keys not trusted: k4"}},
		{"two ids of one key count once", doc, sigFile(signBy(k1, doc), Signature{KeyID: "k1-again", Algorithm: Algorithm, Signature: sf.Signatures[0].Signature}), sameKey, "stable", 0, now, ReasonSignatures,
			[]string{"1 of the 2 required"}},
		{"another algorithm", doc, sigFile(Signature{KeyID: "k1", Algorithm: "rsa", Signature: sf.Signatures[0].Signature}, sf.Signatures[1]), trust3, "stable", 0, now, ReasonSignatures,
			[]string{"1 of the 2 required", "invalid signatures by: k1"}},
		{"no signatures", doc, []byte(`{"signatures": []}`), trust3, "stable", 0, now, ReasonSignatures,
			[]string{"0 of the 2", "holds no signatures"}},
		{"expired", doc, sig, trust3, "stable", 0, c.Expires.Add(time.Second), ReasonExpired,
			[]string{"expired at 2026-03-31T12:00:00Z (now 2026-03-31T12:00:01Z)"}},
		{"replayed sequence", doc, sig, trust3, "stable", 2, now, ReasonReplay,
			[]string{"sequence 1, below 2"}},
		{"another distribution", doc, sig, trustOf("other", 2, k1, k2, k3), "stable", 0, now, ReasonDistribution,
			[]string{`distribution "hello", not of "other"`}},
		{"another channel", doc, sig, trust3, "beta", 0, now, ReasonChannel,
			[]string{`beta.json names channel "stable", not "beta"`}},
		{"a signed malformed document", garbage, sigFile(signBy(k1, garbage), signBy(k2, garbage)), trust3, "stable", 0, now, ReasonMalformed,
			[]string{"malformed"}},
		{"a malformed signature file", doc, []byte("k1 signed it"), trust3, "stable", 0, now, ReasonMalformed,
			[]string{"stable.json.sig", "not a signature file"}},
		{"a zero threshold", doc, []byte(`{"signatures": []}`), trustOf("hello", 0, k1), "stable", 0, now, ReasonTrust,
			[]string{"threshold 0"}},
		{"no keys", doc, sig, Trust{Distribution: "hello", Threshold: 1}, "stable", 0, now, ReasonTrust,
			[]string{"trusts no channel keys"}},
		{"too large", append(doc, make([]byte, MaxDocumentBytes)...), sig, trust3, "stable", 0, now, ReasonTooLarge,
			[]string{"64 KiB"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := Verify(c.doc, c.sig, c.trust, c.channel, c.floor, c.now)
			if v != nil {
				t.Fatalf("accepted: %+v", v)
			}
			t.Log(err)
			wantErr(t, err, CodeUpdateFailed, c.reason, c.frags...)
		})
	}
	// The unaltered inputs pass, so each refusal is the one change.
	if _, err := Verify(doc, sig, trust3, "stable", 1, c.Expires); err != nil {
		t.Errorf("at the expiry instant: %v", err)
	}
}

func TestSignMerge(t *testing.T) {
	keys := testKeys(t, 1)
	src := t.TempDir()
	dir := filepath.Join(t.TempDir(), "channel")
	o := SignOptions{Channel: "stable", Keys: keys, Now: now}
	sign := func(o SignOptions, archives ...string) (*Channel, error) {
		t.Helper()
		return Sign(dir, archives, o)
	}
	versions := func(c *Channel) []string {
		var out []string
		for _, r := range c.Releases {
			out = append(out, r.Target+"/"+r.Version)
		}
		return out
	}
	c, err := sign(o, makeArchive(t, src, "hello", "1.9.0", "linux-x64"), makeArchive(t, src, "hello", "1.10.0", "linux-x64"))
	if err != nil {
		t.Fatal(err)
	}
	c, err = sign(o, makeArchive(t, src, "hello", "1.10.0-rc.1", "linux-x64"), makeArchive(t, src, "hello", "1.0.0", "darwin-arm64"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Sequence != 2 {
		t.Errorf("sequence %d, want 2", c.Sequence)
	}
	if got := versions(c); !reflect.DeepEqual(got, []string{"darwin-arm64/1.0.0", "linux-x64/1.9.0", "linux-x64/1.10.0-rc.1", "linux-x64/1.10.0"}) {
		t.Errorf("releases %v", got)
	}

	// An explicit sequence must grow.
	o2 := o
	o2.Sequence = 2
	_, err = sign(o2)
	wantErr(t, err, CodeConfigInvalid, "", "sequence 2 is not greater than 2")
	o2.Sequence = 10
	if c, err = sign(o2); err != nil || c.Sequence != 10 || len(c.Releases) != 4 {
		t.Fatalf("re-sign with sequence 10: %v %+v", err, c)
	}

	// A release whose archive is gone is dropped; the same version and
	// target is replaced.
	if err := os.Remove(filepath.Join(dir, "hello-1.9.0-linux-x64.tar.gz")); err != nil {
		t.Fatal(err)
	}
	again := makeArchive(t, t.TempDir(), "hello", "1.0.0", "darwin-arm64")
	writeTestFile(t, again+".sha256", "") // an unreadable sidecar is refused below; drop it
	os.Remove(again + ".sha256")
	o3 := o
	o3.ExpiresIn = time.Hour
	if c, err = sign(o3, again); err != nil {
		t.Fatal(err)
	}
	if got := versions(c); c.Sequence != 11 || !reflect.DeepEqual(got, []string{"darwin-arm64/1.0.0", "linux-x64/1.10.0-rc.1", "linux-x64/1.10.0"}) {
		t.Errorf("sequence %d, releases %v", c.Sequence, got)
	}
	if !c.Expires.Equal(now.Add(time.Hour)) {
		t.Errorf("expires %v", c.Expires)
	}
	// An archive already in the channel directory is signed in place.
	if c, err = sign(o, filepath.Join(dir, "hello-1.10.0-linux-x64.tar.gz")); err != nil || c.Sequence != 12 {
		t.Errorf("in place: %v", err)
	}

	// Refusals.
	_, err = sign(o, makeArchive(t, src, "other", "1.0.0", "linux-x64"))
	wantErr(t, err, CodeConfigInvalid, "", `distribution "other"`, `stable.json is the channel of "hello"`)
	renamed := filepath.Join(src, "hello-latest.tar.gz")
	if err := os.Rename(makeArchive(t, src, "hello", "2.0.0", "linux-x64"), renamed); err != nil {
		t.Fatal(err)
	}
	_, err = sign(o, renamed)
	wantErr(t, err, CodeConfigInvalid, "", "hello-2.0.0-linux-x64.tar.gz")
	bad := makeArchive(t, src, "hello", "2.0.1", "linux-x64")
	writeTestFile(t, bad+".sha256", strings.Repeat("0", 64)+"  x\n")
	_, err = sign(o, bad)
	wantErr(t, err, CodeIntegrityFailed, ReasonDigest, "sidecar")
	notArchive := filepath.Join(src, "hello-3.0.0-linux-x64.tar.gz")
	writeTestFile(t, notArchive, "hello")
	_, err = sign(o, notArchive)
	wantErr(t, err, CodeConfigInvalid, "", "not a gzip")
	// Nothing of the refused runs is left behind.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || strings.Contains(e.Name(), "2.0") || strings.Contains(e.Name(), "other") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if c, err := Parse(readTestFile(t, filepath.Join(dir, "stable.json"))); err != nil || c.Sequence != 12 {
		t.Errorf("the channel changed: %v", err)
	}
}

// Sign reads release.json by the rules install and verify-release read it
// by (releasejson.Parse): a release they would refuse is not signed.
func TestSignRefusesWhatInstallRefuses(t *testing.T) {
	keys := testKeys(t, 1)
	src, dir := t.TempDir(), t.TempDir()
	for _, c := range []struct {
		name string
		edit func(map[string]any)
		frag string
	}{
		{"unqualified", func(r map[string]any) { r["qualification"] = "draft" }, `qualification is "draft"`},
		{"audits that never ran", func(r map[string]any) {
			r["packageAudits"] = map[string]any{"verdict": "passed", "locks": 0}
		}, "at least one audited lock"},
		{"an unknown field", func(r map[string]any) { r["signedBy"] = "me" }, `unknown field "signedBy"`},
		{"no creation time", func(r map[string]any) { delete(r, "created") }, "missing fields: created"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := makeArchiveWith(t, src, "hello", "1.0.0", "linux-x64", c.edit)
			_, err := Sign(dir, []string{a}, SignOptions{Channel: "stable", Keys: keys, Now: now})
			wantErr(t, err, CodeConfigInvalid, "", "its release.json is refused", c.frag)
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused signings wrote %v", entries)
	}
}

func TestSignOptions(t *testing.T) {
	keys := testKeys(t, 2)
	src := t.TempDir()
	a := makeArchive(t, src, "hello", "1.0.0", "linux-x64")
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		o    SignOptions
		arch []string
		frag string
	}{
		{"no keys", SignOptions{Channel: "stable"}, []string{a}, "no signing key"},
		{"bad channel", SignOptions{Channel: "Stable", Keys: keys}, []string{a}, "lowercase"},
		{"same key twice", SignOptions{Channel: "stable", Keys: []KeyPair{keys[0], {ID: "again", Private: keys[0].Private}}}, []string{a}, "are the same key"},
		{"nothing", SignOptions{Channel: "stable", Keys: keys}, nil, "nothing to sign"},
		{"negative sequence", SignOptions{Channel: "stable", Keys: keys, Sequence: -1}, []string{a}, "at least 1"},
		{"trust not met", SignOptions{Channel: "stable", Keys: keys[:1], Trust: &Trust{Distribution: "hello", Keys: trustOf("hello", 2, keys...).Keys, Threshold: 2}}, []string{a}, "installs of hello would refuse"},
		{"other distribution's trust", SignOptions{Channel: "stable", Keys: keys, Trust: &Trust{Distribution: "pi", Keys: trustOf("pi", 1, keys...).Keys, Threshold: 1}}, []string{a}, `not of "pi"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Sign(dir, c.arch, c.o)
			wantErr(t, err, CodeConfigInvalid, "", c.frag)
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused signings wrote %v", entries)
	}
	// A new channel with an explicit sequence.
	c, err := Sign(dir, []string{a}, SignOptions{Channel: "beta", Keys: keys, Sequence: 7, Now: now, Trust: &Trust{Distribution: "hello", Keys: trustOf("hello", 2, keys...).Keys, Threshold: 2}})
	if err != nil || c.Sequence != 7 {
		t.Fatalf("%v %+v", err, c)
	}
}

func TestNewestAndUpgrade(t *testing.T) {
	rel := func(v, target string) Release { return Release{Version: v, Target: target} }
	c := &Channel{Releases: []Release{
		rel("1.9.0", "linux-x64"), rel("1.10.0", "linux-x64"), rel("1.2.0", "linux-x64"),
		rel("3.0.0", "darwin-arm64"),
		rel("2.0.0-rc.1", "win32-x64"), rel("2.0.0", "win32-x64"), rel("2.0.0-rc.2", "win32-x64"),
	}}
	for target, want := range map[string]string{"linux-x64": "1.10.0", "darwin-arm64": "3.0.0", "win32-x64": "2.0.0"} {
		if r, ok := c.Newest(target); !ok || r.Version != want {
			t.Errorf("Newest(%s) = %+v, want %s", target, r, want)
		}
	}
	if _, ok := c.Newest("linux-arm64"); ok {
		t.Error("a release for a target the channel lacks")
	}

	if err := CheckUpgrade("1.9.0", "1.10.0"); err != nil {
		t.Errorf("upgrade: %v", err)
	}
	if err := CheckUpgrade("1.10.0", "1.10.0+build.2"); !errors.Is(err, ErrUpToDate) {
		t.Errorf("same version: %v", err)
	}
	err := CheckUpgrade("1.10.0", "1.9.0")
	wantErr(t, err, CodeUpdateFailed, ReasonDowngrade, "downgrade from 1.10.0 to 1.9.0 refused")
	err = CheckUpgrade("2.0.0", "2.0.0-rc.1")
	wantErr(t, err, CodeUpdateFailed, ReasonDowngrade, "downgrade from 2.0.0 to 2.0.0-rc.1 refused")
	err = CheckUpgrade("v1", "1.0.0")
	wantErr(t, err, CodeUpdateFailed, ReasonVersion, "installed version")
}

func TestCompareVersions(t *testing.T) {
	// Each is below the next (semver.org's precedence example, and more).
	order := []string{"0.9.9", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.9.0", "1.10.0", "2.0.0", "10.0.0"}
	for i := range order {
		for j := range order {
			got, err := CompareVersions(order[i], order[j])
			if err != nil {
				t.Fatal(err)
			}
			if want := cmp.Compare(i, j); got != want {
				t.Errorf("compare(%s, %s) = %d, want %d", order[i], order[j], got, want)
			}
		}
	}
	if c, err := CompareVersions("1.0.0+a", "1.0.0+b"); err != nil || c != 0 {
		t.Errorf("build metadata: %d %v", c, err)
	}
	for _, bad := range []string{"", "1", "1.0", "v1.0.0", "01.0.0", "1.0.0-", "1.0.0-01", "1.0.0+", "1.0.0-a..b", "1.0.0.0", "1.x.0"} {
		if _, err := CompareVersions(bad, "1.0.0"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseRefusesUnsafeArchiveNames(t *testing.T) {
	c := Channel{Schema: Schema, Distribution: "hello", Channel: "stable", Sequence: 1, Expires: now,
		Releases: []Release{{Version: "1.0.0", Target: "linux-x64", SHA256: lockSum, LockSHA256: lockSum, Bytes: 1}}}
	for _, name := range []string{"../x.tar.gz", "a/b.tar.gz", `a\b`, "..", ".hidden", "C:x", "a\x00b", ""} {
		c.Releases[0].Archive = name
		_, err := Parse(c.Marshal())
		wantErr(t, err, CodeUpdateFailed, ReasonMalformed, "archive")
	}
	c.Releases[0].Archive = "hello-1.0.0-linux-x64.tar.gz"
	if _, err := Parse(c.Marshal()); err != nil {
		t.Error(err)
	}
	c.Releases = append(c.Releases, c.Releases[0])
	_, err := Parse(c.Marshal())
	wantErr(t, err, CodeUpdateFailed, ReasonMalformed, "listed twice")
}
