package sbom

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx/v2/common"
	"github.com/spdx/tools-golang/spdxlib"

	"piship.dev/piship/stages/distribution"
)

func integrity(name string) string {
	s := sha512.Sum512([]byte(name))
	return "sha512-" + base64.StdEncoding.EncodeToString(s[:])
}

func sha512Hex(name string) string {
	s := sha512.Sum512([]byte(name))
	return hex.EncodeToString(s[:])
}

const (
	mitA   = "MIT License\n\nCopyright (c) scope-a authors\n"
	iscB   = "ISC License\r\n\r\nCopyright (c) b authors"
	apache = "Apache License 2.0 (b)\n"
)

// synthetic writes a tree and its lock: a scoped package, b@2 at the top
// and b@1 nested twice (under @scope/a and under c), a license object, a
// legacy "licenses" list, a package without license or license file, a
// custom license text, an optional package npm skipped for this platform
// and a dev dependency that is installed but must be left out.
func synthetic(t *testing.T) (tree string, lock []byte) {
	t.Helper()
	tree = t.TempDir()
	lockJSON := map[string]any{
		"name": "app", "version": "0.0.0", "lockfileVersion": 3, "requires": true,
		"packages": map[string]any{
			"": map[string]any{
				"name": "app", "version": "0.0.0",
				"dependencies": map[string]string{
					"@scope/a": "^1.0.0", "b": "^2.0.0", "c": "^1.0.0", "lic-obj": "^3.0.0",
					"legacy": "^0.1.0", "nolic": "^1.0.0", "custom": "^1.0.0",
				},
				"optionalDependencies": map[string]string{"opt-missing": "^1.0.0"},
				"devDependencies":      map[string]string{"dev-only": "^1.0.0"},
			},
			"node_modules/@scope/a": map[string]any{
				"version": "1.0.0", "resolved": "https://registry.npmjs.org/@scope/a/-/a-1.0.0.tgz",
				"integrity": integrity("@scope/a"), "license": "MIT",
				"dependencies": map[string]string{"b": "^1.0.0", "c": "^1.0.0"},
			},
			"node_modules/@scope/a/node_modules/b": map[string]any{
				"version": "1.0.0", "resolved": "https://registry.npmjs.org/b/-/b-1.0.0.tgz",
				"integrity": integrity("b1"), "license": "ISC",
			},
			"node_modules/b": map[string]any{
				"version": "2.0.0", "resolved": "https://user:secret@registry.example.com/b/-/b-2.0.0.tgz",
				"integrity": integrity("b2") + " sha1-" + base64.StdEncoding.EncodeToString(sha1Sum("b2")),
				"license":   "Apache-2.0",
			},
			"node_modules/c": map[string]any{
				"version": "1.0.0", "resolved": "https://registry.npmjs.org/c/-/c-1.0.0.tgz",
				"integrity": integrity("c"), "license": "(MIT OR GPL-2.0-or-later)",
				"dependencies":     map[string]string{"b": "^1.0.0", "@scope/a": "^1.0.0"},
				"peerDependencies": map[string]string{"lic-obj": "^3.0.0", "absent-peer": "*"},
			},
			"node_modules/c/node_modules/b": map[string]any{
				"version": "1.0.0", "resolved": "https://registry.npmjs.org/b/-/b-1.0.0.tgz",
				"integrity": integrity("b1"), "license": "ISC",
			},
			"node_modules/lic-obj": map[string]any{
				"version": "3.0.0", "resolved": "https://registry.npmjs.org/lic-obj/-/lic-obj-3.0.0.tgz",
				"integrity": integrity("lic-obj"), "license": "BSD-3-Clause",
			},
			"node_modules/legacy": map[string]any{
				"version": "0.1.0", "resolved": "https://registry.npmjs.org/legacy/-/legacy-0.1.0.tgz",
				"integrity": integrity("legacy"),
			},
			"node_modules/nolic": map[string]any{
				"version": "1.0.0", "resolved": "https://registry.npmjs.org/nolic/-/nolic-1.0.0.tgz",
				"integrity": integrity("nolic"),
			},
			"node_modules/custom": map[string]any{
				"version": "1.0.0", "resolved": "file:vendor/custom-1.0.0.tgz",
				"integrity": integrity("custom"), "license": "SEE LICENSE IN LICENSE.txt",
			},
			"node_modules/opt-missing": map[string]any{
				"version": "1.0.0", "resolved": "https://registry.npmjs.org/opt-missing/-/opt-missing-1.0.0.tgz",
				"integrity": integrity("opt-missing"), "optional": true, "os": []string{"aix"},
			},
			"node_modules/dev-only": map[string]any{
				"version": "1.0.0", "resolved": "https://registry.npmjs.org/dev-only/-/dev-only-1.0.0.tgz",
				"integrity": integrity("dev-only"), "dev": true, "license": "MIT",
			},
		},
	}
	lock, err := json.MarshalIndent(lockJSON, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	manifests := map[string]string{
		"node_modules/@scope/a":                `{"name":"@scope/a","version":"1.0.0","license":"MIT"}`,
		"node_modules/@scope/a/node_modules/b": `{"name":"b","version":"1.0.0","license":"ISC"}`,
		"node_modules/b":                       `{"name":"b","version":"2.0.0","license":"Apache-2.0"}`,
		"node_modules/c":                       `{"name":"c","version":"1.0.0","license":"(MIT OR GPL-2.0-or-later)"}`,
		"node_modules/c/node_modules/b":        `{"name":"b","version":"1.0.0","license":"ISC"}`,
		"node_modules/lic-obj":                 `{"name":"lic-obj","version":"3.0.0","license":{"type":"BSD-3-Clause","url":"https://example.com/bsd"}}`,
		"node_modules/legacy":                  `{"name":"legacy","version":"0.1.0","licenses":[{"type":"MIT","url":"x"},{"type":"Apache-2.0","url":"y"}]}`,
		"node_modules/nolic":                   `{"name":"nolic","version":"1.0.0"}`,
		"node_modules/custom":                  `{"name":"custom","version":"1.0.0","license":"SEE LICENSE IN LICENSE.txt"}`,
		"node_modules/dev-only":                `{"name":"dev-only","version":"1.0.0","license":"MIT"}`,
	}
	files := map[string]string{
		"node_modules/@scope/a/LICENSE":                      mitA,
		"node_modules/@scope/a/license.js":                   "module.exports = 'not a notice'\n",
		"node_modules/@scope/a/index.js":                     "",
		"node_modules/@scope/a/node_modules/b/licence.txt":   iscB,
		"node_modules/c/node_modules/b/licence.txt":          iscB,
		"node_modules/b/LICENSE.md":                          apache,
		"node_modules/b/NOTICE":                              "b notice\n",
		"node_modules/c/COPYING":                             "c is MIT or GPL\n",
		"node_modules/lic-obj/LICENSE-BSD":                   "BSD 3-Clause\n",
		"node_modules/custom/LICENSE.txt":                    "Custom terms.\n",
		"node_modules/custom/licenses/LICENSE-inner":         "not top level\n",
		"node_modules/nolic/README.md":                       "no license here\n",
		"node_modules/dev-only/LICENSE":                      "dev only\n",
		"node_modules/dev-only/node_modules/nested/x.js":     "",
		"node_modules/.package-lock.json":                    "{}",
		"node_modules/@scope/a/node_modules/b/lib/NOTICE.md": "deep, not top level\n",
	}
	for dir, m := range manifests {
		files[dir+"/package.json"] = m
	}
	for rel, content := range files {
		p := filepath.Join(tree, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, "package-lock.json"), lock, 0o644); err != nil {
		t.Fatal(err)
	}
	return tree, lock
}

func sha1Sum(s string) []byte {
	h := sha1.Sum([]byte(s))
	return h[:]
}

func input(t *testing.T, tree string, lock []byte) Input {
	t.Helper()
	pl, err := distribution.ParsePackageLock(lock)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	return Input{Name: "hello", Version: "1.0.0", Tree: tree, Lock: pl, LockSHA256: hex.EncodeToString(sum[:]),
		Created: time.Unix(1700000000, 0)}
}

func mustSPDX(t *testing.T, in Input) ([]byte, document) {
	t.Helper()
	b, s, err := SPDX(in)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); s.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("Summary.SHA256 = %s, not the document's", s.SHA256)
	}
	var doc document
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if s.Packages != len(doc.Packages)-1 {
		t.Errorf("Summary.Packages = %d, the document has %d besides the root", s.Packages, len(doc.Packages)-1)
	}
	return b, doc
}

func TestSPDX(t *testing.T) {
	tree, lock := synthetic(t)
	in := input(t, tree, lock)
	in.ToolVersion = "v1.2.3"
	b, doc := mustSPDX(t, in)
	if !bytes.HasSuffix(b, []byte("}\n")) || !bytes.HasPrefix(b, []byte("{\n  \"spdxVersion\": \"SPDX-2.3\",\n")) {
		t.Errorf("not 2-space indented JSON with a trailing newline:\n%.200s", b)
	}
	if doc.CreationInfo.Created != "2023-11-14T22:13:20Z" || !slices.Equal(doc.CreationInfo.Creators, []string{"Tool: piship-v1.2.3"}) {
		t.Errorf("creationInfo = %+v", doc.CreationInfo)
	}
	wantNS := "https://piship.dev/spdx/hello-1.0.0-" + in.LockSHA256 + "/"
	if !strings.HasPrefix(doc.DocumentNamespace, wantNS) || len(doc.DocumentNamespace) != len(wantNS)+16 {
		t.Errorf("documentNamespace = %s", doc.DocumentNamespace)
	}
	if doc.Name != "hello@1.0.0" || doc.SPDXID != "SPDXRef-DOCUMENT" || doc.DataLicense != "CC0-1.0" {
		t.Errorf("document header: %s %s %s", doc.Name, doc.SPDXID, doc.DataLicense)
	}

	type row struct{ id, name, version, path, license, download, purl string }
	var got []row
	for _, p := range doc.Packages {
		r := row{p.SPDXID, p.Name, p.VersionInfo, p.PackageFileName, p.LicenseDeclared, p.DownloadLocation, ""}
		if len(p.ExternalRefs) == 1 {
			e := p.ExternalRefs[0]
			if e.Category != "PACKAGE-MANAGER" || e.Type != "purl" {
				t.Errorf("%s: external ref %+v", p.SPDXID, e)
			}
			r.purl = e.Locator
		}
		if p.LicenseConcluded != noAssertion || p.CopyrightText != noAssertion || p.FilesAnalyzed {
			t.Errorf("%s: concluded %q, copyright %q, filesAnalyzed %v", p.SPDXID, p.LicenseConcluded, p.CopyrightText, p.FilesAnalyzed)
		}
		got = append(got, r)
	}
	reg := "https://registry.npmjs.org/"
	want := []row{
		{"SPDXRef-Distribution-hello-1.0.0", "hello", "1.0.0", "", noAssertion, noAssertion, ""},
		{"SPDXRef-Package-scope-a-1.0.0", "@scope/a", "1.0.0", "node_modules/@scope/a", "MIT", reg + "@scope/a/-/a-1.0.0.tgz", "pkg:npm/%40scope/a@1.0.0"},
		{"SPDXRef-Package-b-1.0.0", "b", "1.0.0", "node_modules/@scope/a/node_modules/b", "ISC", reg + "b/-/b-1.0.0.tgz", "pkg:npm/b@1.0.0"},
		{"SPDXRef-Package-b-1.0.0-2", "b", "1.0.0", "node_modules/c/node_modules/b", "ISC", reg + "b/-/b-1.0.0.tgz", "pkg:npm/b@1.0.0"},
		{"SPDXRef-Package-b-2.0.0", "b", "2.0.0", "node_modules/b", "Apache-2.0", "https://registry.example.com/b/-/b-2.0.0.tgz", "pkg:npm/b@2.0.0"},
		{"SPDXRef-Package-c-1.0.0", "c", "1.0.0", "node_modules/c", "(MIT OR GPL-2.0-or-later)", reg + "c/-/c-1.0.0.tgz", "pkg:npm/c@1.0.0"},
		{"SPDXRef-Package-custom-1.0.0", "custom", "1.0.0", "node_modules/custom", "LicenseRef-SEE-LICENSE-IN-LICENSE.txt", noAssertion, "pkg:npm/custom@1.0.0"},
		{"SPDXRef-Package-legacy-0.1.0", "legacy", "0.1.0", "node_modules/legacy", "(MIT OR Apache-2.0)", reg + "legacy/-/legacy-0.1.0.tgz", "pkg:npm/legacy@0.1.0"},
		{"SPDXRef-Package-lic-obj-3.0.0", "lic-obj", "3.0.0", "node_modules/lic-obj", "BSD-3-Clause", reg + "lic-obj/-/lic-obj-3.0.0.tgz", "pkg:npm/lic-obj@3.0.0"},
		{"SPDXRef-Package-nolic-1.0.0", "nolic", "1.0.0", "node_modules/nolic", noAssertion, reg + "nolic/-/nolic-1.0.0.tgz", "pkg:npm/nolic@1.0.0"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("packages:\n%s\nwant:\n%s", rows(got), rows(want))
	}
	if doc.Packages[0].Purpose != "APPLICATION" || doc.Packages[1].Purpose != "LIBRARY" {
		t.Errorf("purposes %q %q", doc.Packages[0].Purpose, doc.Packages[1].Purpose)
	}
	for _, p := range doc.Packages[1:] {
		if p.Name == "b" && p.VersionInfo == "2.0.0" {
			wantSums := []checksum{{"SHA1", hex.EncodeToString(sha1Sum("b2"))}, {"SHA512", sha512Hex("b2")}}
			if !slices.Equal(p.Checksums, wantSums) {
				t.Errorf("b@2 checksums %+v, want %+v", p.Checksums, wantSums)
			}
		} else if len(p.Checksums) != 1 || p.Checksums[0].Algorithm != "SHA512" || len(p.Checksums[0].Value) != 128 {
			t.Errorf("%s checksums %+v", p.SPDXID, p.Checksums)
		}
	}
	if p := doc.Packages[1]; p.Checksums[0].Value != sha512Hex("@scope/a") {
		t.Errorf("@scope/a checksum %s", p.Checksums[0].Value)
	}
	wantExtracted := []extractedLicense{{ID: "LicenseRef-SEE-LICENSE-IN-LICENSE.txt", Text: "SEE LICENSE IN LICENSE.txt", Name: "SEE LICENSE IN LICENSE.txt"}}
	if !slices.Equal(doc.Extracted, wantExtracted) {
		t.Errorf("hasExtractedLicensingInfos = %+v", doc.Extracted)
	}
	if bytes.Contains(b, []byte("secret")) || bytes.Contains(b, []byte(tree)) {
		t.Error("the document holds a credential or the tree's path")
	}
}

func rows[T any](rs []T) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %+v\n", r)
	}
	return b.String()
}

// DEPENDS_ON follows node's lookup: a package's own node_modules first,
// then the enclosing ones.
// The creator carries the version of the piship that wrote the document.
func TestSPDXCreatorNamesPishipVersion(t *testing.T) {
	tree, lock := synthetic(t)
	in := input(t, tree, lock)
	in.ToolVersion = "v1.4.2"
	_, doc := mustSPDX(t, in)
	if !slices.Equal(doc.CreationInfo.Creators, []string{"Tool: piship-v1.4.2"}) {
		t.Errorf("creators = %q, want [Tool: piship-v1.4.2]", doc.CreationInfo.Creators)
	}
}

// The tools the distribution pins are packages of their own, with the
// pinned digest.
func TestSPDXListsPinnedTools(t *testing.T) {
	tree, lock := synthetic(t)
	in := input(t, tree, lock)
	sum := strings.Repeat("ab", 32)
	in.Tools = []Tool{{Name: "hello-info", Source: "tools/hello-info", SHA256: sum}}
	b, _, err := SPDX(in)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Packages []spdxPackage `json:"packages"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, p := range doc.Packages {
		if p.SPDXID == "SPDXRef-Tool-hello-info" {
			found = true
			if p.Name != "hello-info" || p.Purpose != "APPLICATION" || len(p.Checksums) != 1 || p.Checksums[0] != (checksum{"SHA256", sum}) {
				t.Errorf("tool package = %+v", p)
			}
		}
	}
	if !found {
		t.Errorf("no tool package in %s", b)
	}
}

func TestSPDXRelationships(t *testing.T) {
	tree, lock := synthetic(t)
	_, doc := mustSPDX(t, input(t, tree, lock))
	var got []string
	for _, r := range doc.Relationships {
		s := r.Element + " " + r.Type + " " + r.Related
		if r.Comment != "" {
			s += " (" + r.Comment + ")"
		}
		got = append(got, s)
	}
	const (
		root = "SPDXRef-Distribution-hello-1.0.0"
		a    = "SPDXRef-Package-scope-a-1.0.0"
		bA   = "SPDXRef-Package-b-1.0.0"   // node_modules/@scope/a/node_modules/b
		bC   = "SPDXRef-Package-b-1.0.0-2" // node_modules/c/node_modules/b
		b2   = "SPDXRef-Package-b-2.0.0"
		c    = "SPDXRef-Package-c-1.0.0"
	)
	want := []string{
		"SPDXRef-DOCUMENT DESCRIBES " + root,
		root + " DEPENDS_ON " + a,
		root + " DEPENDS_ON " + b2,
		root + " DEPENDS_ON " + c,
		root + " DEPENDS_ON SPDXRef-Package-custom-1.0.0",
		root + " DEPENDS_ON SPDXRef-Package-legacy-0.1.0",
		root + " DEPENDS_ON SPDXRef-Package-lic-obj-3.0.0",
		root + " DEPENDS_ON SPDXRef-Package-nolic-1.0.0",
		c + " DEPENDS_ON " + bC,
		c + " DEPENDS_ON SPDXRef-Package-lic-obj-3.0.0 (peer dependency)",
		c + " DEPENDS_ON " + a,
		a + " DEPENDS_ON " + bA,
		a + " DEPENDS_ON " + c,
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("relationships:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The same input gives the same bytes, whatever the time zone, the zone of
// Created, or where the tree is.
func TestDeterministic(t *testing.T) {
	tree1, lock := synthetic(t)
	tree2, _ := synthetic(t)
	t.Setenv("TZ", "UTC")
	in := input(t, tree1, lock)
	a, _ := mustSPDX(t, in)
	ta, ia, _, err := Notices(in)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TZ", "Pacific/Chatham")
	in2 := input(t, tree2, lock)
	in2.Created = in.Created.In(time.FixedZone("odd", 12*3600+45*60)).Add(999 * time.Millisecond)
	b, _ := mustSPDX(t, in2)
	tb, ib, _, err := Notices(in2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("SPDX differs between runs:\n%s\n---\n%s", a, b)
	}
	if !bytes.Equal(ta, tb) || !bytes.Equal(ia, ib) {
		t.Error("notices differ between runs")
	}
	// The namespace names the content: another lock digest or another
	// package set gives another namespace.
	in3 := input(t, tree1, lock)
	in3.LockSHA256 = strings.Repeat("0", 64)
	_, d3 := mustSPDX(t, in3)
	_, d1 := mustSPDX(t, in)
	if d1.DocumentNamespace == d3.DocumentNamespace {
		t.Error("the namespace does not change with the lock")
	}
	if err := os.RemoveAll(filepath.Join(tree2, "node_modules", "nolic")); err != nil {
		t.Fatal(err)
	}
	pl := input(t, tree2, lock)
	delete(pl.Lock.Packages, "node_modules/nolic")
	r := pl.Lock.Packages[""]
	r.Dependencies = map[string]string{"@scope/a": "^1", "b": "^2", "c": "^1", "lic-obj": "^3", "legacy": "^0.1", "custom": "^1"}
	pl.Lock.Packages[""] = r
	_, d4 := mustSPDX(t, pl)
	ns := strings.TrimSuffix(d1.DocumentNamespace, d1.DocumentNamespace[len(d1.DocumentNamespace)-16:])
	if d4.DocumentNamespace == d1.DocumentNamespace || !strings.HasPrefix(d4.DocumentNamespace, ns) {
		t.Errorf("namespaces %s and %s", d1.DocumentNamespace, d4.DocumentNamespace)
	}
}

// The document reads with the SPDX project's Go tools.
func TestSPDXToolsGolang(t *testing.T) {
	tree, lock := synthetic(t)
	b, _ := mustSPDX(t, input(t, tree, lock))
	doc, err := spdxjson.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("tools-golang cannot read the document: %v", err)
	}
	if err := spdxlib.ValidateDocument(doc); err != nil {
		t.Error(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || len(doc.Packages) != 10 || len(doc.Relationships) != 13 || len(doc.OtherLicenses) != 1 {
		t.Errorf("read %s with %d packages, %d relationships, %d other licenses", doc.SPDXVersion, len(doc.Packages), len(doc.Relationships), len(doc.OtherLicenses))
	}
	described, err := spdxlib.GetDescribedPackageIDs(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(described, []common.ElementID{"Distribution-hello-1.0.0"}) {
		t.Errorf("described: %v", described)
	}
	for _, p := range doc.Packages[1:] {
		if len(p.PackageExternalReferences) != 1 || len(p.PackageChecksums) == 0 {
			t.Errorf("%s: refs %v, checksums %v", p.PackageSPDXIdentifier, p.PackageExternalReferences, p.PackageChecksums)
		}
	}
}

func TestNotices(t *testing.T) {
	tree, lock := synthetic(t)
	in := input(t, tree, lock)
	text, index, s, err := Notices(in)
	if err != nil {
		t.Fatal(err)
	}
	_, sum, err := SPDX(in)
	if err != nil {
		t.Fatal(err)
	}
	if s != (NoticesSummary{Packages: 9, WithLicenseFile: 7, WithoutLicenseFile: 2}) || s.Packages != sum.Packages {
		t.Errorf("summary %+v (SPDX has %d packages)", s, sum.Packages)
	}
	var idx struct {
		Schema   string `json:"schema"`
		Packages []struct {
			Name, Version, Path, License string
			Files                        []string
			SHA256                       map[string]string
		} `json:"packages"`
		WithoutLicenseFile []string `json:"withoutLicenseFile"`
	}
	if err := json.Unmarshal(index, &idx); err != nil {
		t.Fatal(err)
	}
	if idx.Schema != "piship-notices/v1" || !slices.Equal(idx.WithoutLicenseFile, []string{"legacy@0.1.0", "nolic@1.0.0"}) {
		t.Errorf("index: schema %q, withoutLicenseFile %v", idx.Schema, idx.WithoutLicenseFile)
	}
	var got []string
	for _, p := range idx.Packages {
		got = append(got, fmt.Sprintf("%s@%s %s %s %v", p.Name, p.Version, p.Path, p.License, p.Files))
		for _, f := range p.Files {
			b, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(p.Path), f))
			if err != nil {
				t.Fatal(err)
			}
			if h := sha256.Sum256(b); p.SHA256[f] != hex.EncodeToString(h[:]) {
				t.Errorf("%s %s: sha256 %s", p.Path, f, p.SHA256[f])
			}
		}
		if len(p.SHA256) != len(p.Files) {
			t.Errorf("%s: sha256 %v for files %v", p.Path, p.SHA256, p.Files)
		}
	}
	want := []string{
		"@scope/a@1.0.0 node_modules/@scope/a MIT [LICENSE]",
		"b@1.0.0 node_modules/@scope/a/node_modules/b ISC [licence.txt]",
		"b@1.0.0 node_modules/c/node_modules/b ISC [licence.txt]",
		"b@2.0.0 node_modules/b Apache-2.0 [LICENSE.md NOTICE]",
		"c@1.0.0 node_modules/c (MIT OR GPL-2.0-or-later) [COPYING]",
		"custom@1.0.0 node_modules/custom LicenseRef-SEE-LICENSE-IN-LICENSE.txt [LICENSE.txt]",
		"legacy@0.1.0 node_modules/legacy (MIT OR Apache-2.0) []",
		"lic-obj@3.0.0 node_modules/lic-obj BSD-3-Clause [LICENSE-BSD]",
		"nolic@1.0.0 node_modules/nolic NOASSERTION []",
	}
	if !slices.Equal(got, want) {
		t.Errorf("index packages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	txt := string(text)
	for _, w := range []string{
		"Third-party notices for hello 1.0.0\n",
		"@scope/a@1.0.0\nLicense: MIT\nPath: node_modules/@scope/a\n",
		"\n--- LICENSE\n\n" + mitA + "\n",
		"\n--- licence.txt\n\n" + iscB + "\n\n" + rule,
		"b@2.0.0\nLicense: Apache-2.0\nPath: node_modules/b\n",
		"\n--- LICENSE.md\n\n" + apache + "\n--- NOTICE\n\nb notice\n\n" + rule,
		"License: LicenseRef-SEE-LICENSE-IN-LICENSE.txt (declared as \"SEE LICENSE IN LICENSE.txt\")\n",
		"Custom terms.\n",
		"Packages without a license file\n",
		"legacy@0.1.0  License: (MIT OR Apache-2.0)  Path: node_modules/legacy\n",
		"nolic@1.0.0  License: NOASSERTION (none declared)  Path: node_modules/nolic\n",
	} {
		if !strings.Contains(txt, w) {
			t.Errorf("notices lack %q", w)
		}
	}
	// The second copy of an identical text is referred to, not repeated.
	if n := strings.Count(txt, iscB); n != 1 {
		t.Errorf("the ISC text appears %d times", n)
	}
	if !strings.Contains(txt, "--- licence.txt: identical to licence.txt of b@1.0.0 (node_modules/@scope/a/node_modules/b) above (sha256 ") {
		t.Error("no reference to the identical text")
	}
	for _, not := range []string{"dev only", "not a notice", "not top level", "deep, not top level", "dev-only"} {
		if strings.Contains(txt, not) {
			t.Errorf("notices hold %q", not)
		}
	}
	// Packages are in order of name and version.
	if i, j := strings.Index(txt, "\n@scope/a@1.0.0\n"), strings.Index(txt, "\nlic-obj@3.0.0\n"); i < 0 || j < i {
		t.Error("packages out of order")
	}
}

func TestTreeNotWritten(t *testing.T) {
	tree, lock := synthetic(t)
	before := snapshot(t, tree)
	in := input(t, tree, lock)
	if _, _, err := SPDX(in); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Notices(in); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, tree); after != before {
		t.Errorf("the tree changed:\n%s\n---\n%s", before, after)
	}
}

func snapshot(t *testing.T, root string) string {
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d\n", p, info.Mode(), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, tree string, in *Input)
		want   string
	}{
		{"missing package", func(t *testing.T, tree string, in *Input) {
			os.RemoveAll(filepath.Join(tree, "node_modules", "c", "node_modules", "b"))
		}, "node_modules/c/node_modules/b (b@1.0.0) is not installed"},
		{"version differs", func(t *testing.T, tree string, in *Input) {
			os.WriteFile(filepath.Join(tree, "node_modules", "b", "package.json"), []byte(`{"name":"b","version":"2.0.1"}`), 0o644)
		}, "node_modules/b is b@2.0.1"},
		{"unresolved dependency", func(t *testing.T, tree string, in *Input) {
			p := in.Lock.Packages["node_modules/nolic"]
			p.Dependencies = map[string]string{"ghost": "^1"}
			in.Lock.Packages["node_modules/nolic"] = p
		}, "node_modules/nolic depends on ghost"},
		{"bad lock digest", func(t *testing.T, tree string, in *Input) { in.LockSHA256 = "ABC" }, "not a lowercase hex SHA-256"},
		{"no tree", func(t *testing.T, tree string, in *Input) { in.Tree = filepath.Join(tree, "nope") }, "no such file"},
		{"no name", func(t *testing.T, tree string, in *Input) { in.Name = "" }, "name and version are required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tree, lock := synthetic(t)
			in := input(t, tree, lock)
			c.change(t, tree, &in)
			if _, _, err := SPDX(in); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("SPDX: %v, want %q", err, c.want)
			}
			if c.name == "unresolved dependency" {
				return // notices do not follow dependencies
			}
			if _, _, _, err := Notices(in); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Notices: %v, want %q", err, c.want)
			}
		})
	}
}

func TestValidExpression(t *testing.T) {
	for s, want := range map[string]bool{
		"MIT": true, "Apache-2.0": true, "GPL-2.0+": true, "(MIT OR Apache-2.0)": true,
		"MIT AND (BSD-2-Clause OR ISC)": true, "GPL-2.0-or-later WITH Classpath-exception-2.0": true,
		"(MIT)": true, "NONE": true, "NOASSERTION": true,
		"": false, "UNLICENSED": false, "SEE LICENSE IN LICENSE": false, "MIT/X11": false, "Apache 2.0": false,
		"MIT OR": false, "(MIT": false, "MIT)": false, "MIT or Apache-2.0": false, "LicenseRef-Mine": false,
		"https://example.com/license": false, "OR MIT": false, "MIT WITH (X)": false, "BSD*": false,
	} {
		if got := validExpression(s); got != want {
			t.Errorf("validExpression(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestHelpers(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"@scope/name", "1.0.0"}:  "pkg:npm/%40scope/name@1.0.0",
		{"left-pad", "1.0.0+b.1"}: "pkg:npm/left-pad@1.0.0%2Bb.1",
		{"x", ""}:                 "pkg:npm/x",
	} {
		if got := purl(in[0], in[1]); got != want {
			t.Errorf("purl(%q, %q) = %s, want %s", in[0], in[1], got, want)
		}
	}
	for in, want := range map[string]string{
		"https://registry.npmjs.org/a/-/a-1.tgz": "https://registry.npmjs.org/a/-/a-1.tgz",
		"https://tok@example.com/a.tgz":          "https://example.com/a.tgz",
		"git+ssh://git@github.com/o/r.git#abc":   "git+ssh://git@github.com/o/r.git#abc",
		"git+https://u:p@github.com/o/r.git#abc": "git+https://u@github.com/o/r.git#abc",
		"file:vendor/a.tgz":                      noAssertion,
		"":                                       noAssertion,
		"../linked":                              noAssertion,
		"ftp://example.com/a.tgz":                noAssertion,
		"https://registry.npmjs.org/@s/a/-/a-1.0.0.tgz?x=1#y": "https://registry.npmjs.org/@s/a/-/a-1.0.0.tgz?x=1#y",
	} {
		if got := downloadLocation(in); got != want {
			t.Errorf("downloadLocation(%q) = %s, want %s", in, got, want)
		}
	}
	for name, want := range map[string]bool{
		"LICENSE": true, "license.md": true, "LICENCE-MIT.txt": true, "COPYING.LESSER": true, "NOTICE": true,
		"Notice.txt": true, "license.js": false, "LICENSE.d.ts": false, "README.md": false, "unlicense": false,
	} {
		if got := isLicenseFile(name); got != want {
			t.Errorf("isLicenseFile(%q) = %v", name, got)
		}
	}
	if got := created(time.Time{}); got != "1970-01-01T00:00:00Z" {
		t.Errorf("created(zero) = %s", got)
	}
}

// A linked package (a workspace) is documented once, at its target, and
// its dependencies resolve from there.
func TestLinkedWorkspace(t *testing.T) {
	tree := t.TempDir()
	lock := []byte(`{"name":"app","version":"0.0.0","lockfileVersion":3,"packages":{
		"": {"name":"app","workspaces":["packages/ws"],"dependencies":{"ws":"*"}},
		"node_modules/ws": {"resolved":"packages/ws","link":true},
		"packages/ws": {"name":"ws","version":"0.1.0","license":"MIT","dependencies":{"b":"^2","c":"^1"}},
		"packages/ws/node_modules/c": {"version":"1.0.0","integrity":"` + integrity("c") + `"},
		"node_modules/b": {"version":"2.0.0","resolved":"https://registry.npmjs.org/b/-/b-2.0.0.tgz","integrity":"` + integrity("b") + `"}
	}}`)
	for rel, content := range map[string]string{
		"packages/ws/package.json":                `{"name":"ws","version":"0.1.0","license":"MIT"}`,
		"packages/ws/LICENSE":                     "ws license\n",
		"packages/ws/node_modules/c/package.json": `{"name":"c","version":"1.0.0"}`,
		"node_modules/b/package.json":             `{"name":"b","version":"2.0.0"}`,
	} {
		p := filepath.Join(tree, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, doc := mustSPDX(t, input(t, tree, lock))
	var ids, rels []string
	for _, p := range doc.Packages {
		ids = append(ids, p.SPDXID+" "+p.PackageFileName)
	}
	for _, r := range doc.Relationships {
		rels = append(rels, r.Element+" "+r.Type+" "+r.Related)
	}
	wantIDs := []string{"SPDXRef-Distribution-hello-1.0.0 ", "SPDXRef-Package-b-2.0.0 node_modules/b",
		"SPDXRef-Package-c-1.0.0 packages/ws/node_modules/c", "SPDXRef-Package-ws-0.1.0 packages/ws"}
	wantRels := []string{
		"SPDXRef-DOCUMENT DESCRIBES SPDXRef-Distribution-hello-1.0.0",
		"SPDXRef-Distribution-hello-1.0.0 DEPENDS_ON SPDXRef-Package-ws-0.1.0",
		"SPDXRef-Package-ws-0.1.0 DEPENDS_ON SPDXRef-Package-b-2.0.0",
		"SPDXRef-Package-ws-0.1.0 DEPENDS_ON SPDXRef-Package-c-1.0.0",
	}
	if !slices.Equal(ids, wantIDs) || !slices.Equal(rels, wantRels) {
		t.Errorf("packages %q\nrelationships %q", ids, rels)
	}
	_, _, s, err := Notices(input(t, tree, lock))
	if err != nil || s != (NoticesSummary{Packages: 3, WithLicenseFile: 1, WithoutLicenseFile: 2}) {
		t.Errorf("notices: %+v, %v", s, err)
	}
}
