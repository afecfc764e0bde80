package stages

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/sbom"
)

// SBOM writes sbom.spdx.json for the locked runtime.
type SBOM struct{}

func (SBOM) Name() string    { return "sbom" }
func (SBOM) Version() string { return "1" }
func (SBOM) Doc() string {
	return "Writes sbom.spdx.json (SPDX 2.3 JSON) from the package lock and the installed package.json files of tree: every package with its version, " +
		"download location, sha512 checksum, declared license and purl, and DEPENDS_ON relationships. Deterministic: the namespace and created time derive " +
		"from the content and SOURCE_DATE_EPOCH."
}

func (SBOM) Attrs() []Attr {
	return []Attr{
		{Name: "distribution", Type: cty.String, Required: true},
		{Name: "tree", Type: cty.String, Required: true, Doc: "the installed runtime (read-only)"},
		{Name: "release_dir", Type: cty.String, Required: true},
		{Name: "created", Type: cty.String, Required: true, Doc: "RFC 3339 time"},
	}
}

func (SBOM) Outputs() []Output {
	return []Output{{Name: "sha256", Type: cty.String}, {Name: "packages", Type: cty.Number}}
}

// sbomInput gathers what the SBOM and the notices describe.
func sbomInput(inv *Invocation) (sbom.Input, error) {
	d, pl, err := distAndLock(inv)
	if err != nil {
		return sbom.Input{}, err
	}
	raw, err := os.ReadFile(filepath.Join(d.RuntimeDir(), "package-lock.json"))
	if err != nil {
		return sbom.Input{}, err
	}
	created := time.Unix(0, 0).UTC()
	if c := stringOr(inv.Get("created"), ""); c != "" {
		if created, err = time.Parse(time.RFC3339, c); err != nil {
			return sbom.Input{}, err
		}
	}
	return sbom.Input{Name: d.ID, Version: d.Version, Tree: stringOr(inv.Get("tree"), ""), Lock: pl,
		LockSHA256: sha256Hex(raw), Created: created}, nil
}

// Run implements Kind.
func (SBOM) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	in, err := sbomInput(inv)
	if err != nil {
		return nil, err
	}
	data, sum, err := sbom.SPDX(in)
	if err != nil {
		return nil, err
	}
	if err := payload.WriteFile(filepath.Join(stringOr(inv.Get("release_dir"), ""), SBOMName), data, 0o644); err != nil {
		return nil, err
	}
	return map[string]cty.Value{"sha256": cty.StringVal(sha256Hex(data)), "packages": cty.NumberIntVal(int64(sum.Packages))}, nil
}

// Notices writes the third-party notices and their index.
type Notices struct{}

func (Notices) Name() string    { return "notices" }
func (Notices) Version() string { return "1" }
func (Notices) Doc() string {
	return "Writes licenses/THIRD_PARTY_NOTICES.txt with each package's license texts (LICENSE*, LICENCE*, COPYING*, NOTICE*) and licenses/index.json; " +
		"every SBOM package is covered, those without a license file are listed by name and declared license."
}

func (Notices) Attrs() []Attr {
	return []Attr{
		{Name: "distribution", Type: cty.String, Required: true},
		{Name: "tree", Type: cty.String, Required: true, Doc: "the installed runtime (read-only)"},
		{Name: "release_dir", Type: cty.String, Required: true},
	}
}

func (Notices) Outputs() []Output {
	return []Output{{Name: "packages", Type: cty.Number}, {Name: "without_license_file", Type: cty.Number}}
}

// Run implements Kind.
func (Notices) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	in, err := sbomInput(inv)
	if err != nil {
		return nil, err
	}
	text, index, sum, err := sbom.Notices(in)
	if err != nil {
		return nil, err
	}
	dir := stringOr(inv.Get("release_dir"), "")
	if err := payload.WriteFile(filepath.Join(dir, filepath.FromSlash(NoticesName)), text, 0o644); err != nil {
		return nil, err
	}
	if err := payload.WriteFile(filepath.Join(dir, filepath.FromSlash(NoticesIndexName)), index, 0o644); err != nil {
		return nil, err
	}
	return map[string]cty.Value{"packages": cty.NumberIntVal(int64(sum.Packages)), "without_license_file": cty.NumberIntVal(int64(sum.WithoutLicenseFile))}, nil
}
