package sbom

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"piship.dev/piship/cache/canon"
)

// NoticesSummary counts what the notices cover.
type NoticesSummary struct {
	// Packages counts the installed packages (as SPDX documents them);
	// the other two split it.
	Packages, WithLicenseFile, WithoutLicenseFile int
}

type noticesIndex struct {
	Schema             string         `json:"schema"`
	Packages           []noticesEntry `json:"packages"`
	WithoutLicenseFile []string       `json:"withoutLicenseFile"`
}

type noticesEntry struct {
	Name    string            `json:"name"`
	Version string            `json:"version"`
	Path    string            `json:"path"`
	License string            `json:"license"`
	Files   []string          `json:"files"`
	SHA256  map[string]string `json:"sha256"`
}

const rule = "================================================================================\n"

// Notices returns licenses/THIRD_PARTY_NOTICES.txt and licenses/index.json
// for the runtime (see the package documentation). Every package SPDX
// documents is covered.
func Notices(in Input) (text []byte, index []byte, s NoticesSummary, err error) {
	rt, err := load(in)
	if err != nil {
		return nil, nil, NoticesSummary{}, err
	}
	lic := newLicenses(rt.pkgs)
	idx := noticesIndex{Schema: "piship-notices/v1", Packages: []noticesEntry{}, WithoutLicenseFile: []string{}}
	var body bytes.Buffer
	var without []*pkg
	// first names where each text was reproduced, by its SHA-256.
	first := map[string]string{}
	covered := map[*pkg]bool{}
	for _, p := range rt.pkgs {
		files, err := licenseFiles(p.dir)
		if err != nil {
			return nil, nil, NoticesSummary{}, fmt.Errorf("sbom: %s: %v", p.key, err)
		}
		declared := lic.declared(p.license)
		e := noticesEntry{Name: p.name, Version: p.version, Path: p.key, License: declared, Files: []string{}, SHA256: map[string]string{}}
		covered[p] = true
		if len(files) == 0 {
			without = append(without, p)
			if nv := p.name + "@" + p.version; !slices.Contains(idx.WithoutLicenseFile, nv) {
				idx.WithoutLicenseFile = append(idx.WithoutLicenseFile, nv)
			}
			idx.Packages = append(idx.Packages, e)
			continue
		}
		s.WithLicenseFile++
		body.WriteString(rule)
		fmt.Fprintf(&body, "%s@%s\n", p.name, p.version)
		fmt.Fprintf(&body, "License: %s\n", licenseLine(declared, p.license))
		fmt.Fprintf(&body, "Path: %s\n", p.key)
		body.WriteString(rule)
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(p.dir, f))
			if err != nil {
				return nil, nil, NoticesSummary{}, fmt.Errorf("sbom: %s: %v", p.key, err)
			}
			h := canon.SHA256Hex(b)
			e.Files = append(e.Files, f)
			e.SHA256[f] = h
			where := fmt.Sprintf("%s of %s@%s (%s)", f, p.name, p.version, p.key)
			if prev, ok := first[h]; ok {
				fmt.Fprintf(&body, "\n--- %s: identical to %s above (sha256 %s)\n", f, prev, h)
				continue
			}
			first[h] = where
			fmt.Fprintf(&body, "\n--- %s\n\n", f)
			body.Write(b)
			if len(b) > 0 && b[len(b)-1] != '\n' {
				body.WriteByte('\n')
			}
		}
		body.WriteByte('\n')
		idx.Packages = append(idx.Packages, e)
	}
	s.Packages = len(rt.pkgs)
	s.WithoutLicenseFile = len(without)
	for _, p := range rt.pkgs {
		if !covered[p] {
			return nil, nil, NoticesSummary{}, fmt.Errorf("sbom: the notices do not cover %s@%s (%s)", p.name, p.version, p.key)
		}
	}
	if s.WithLicenseFile+s.WithoutLicenseFile != s.Packages || len(idx.Packages) != s.Packages {
		return nil, nil, NoticesSummary{}, fmt.Errorf("sbom: the notices cover %s", canon.Of(len(idx.Packages), s.Packages, "package"))
	}

	var out bytes.Buffer
	fmt.Fprintf(&out, "Third-party notices for %s %s\n\n", in.Name, in.Version)
	fmt.Fprintf(&out, "%s %s includes %d third-party npm packages (installed copies; %d with license files, %d without).\n",
		in.Name, in.Version, s.Packages, s.WithLicenseFile, s.WithoutLicenseFile)
	out.WriteString("Below, each package that ships license or notice files (LICENSE*, LICENCE*, COPYING*, NOTICE*)\n" +
		"is listed by name, version, declared license and install path, followed by the text of those\n" +
		"files as found in the package. A text identical to one reproduced earlier is referred to\n" +
		"rather than repeated. Packages without such files are listed at the end with their declared license.\n" +
		"licenses/index.json lists the same in machine-readable form.\n\n")
	out.Write(body.Bytes())
	out.WriteString(rule)
	out.WriteString("Packages without a license file\n")
	out.WriteString(rule)
	if len(without) == 0 {
		out.WriteString("(none)\n")
	} else {
		out.WriteByte('\n')
	}
	for _, p := range without {
		fmt.Fprintf(&out, "%s@%s  License: %s  Path: %s\n", p.name, p.version, licenseLine(lic.declared(p.license), p.license), p.key)
	}
	ib, err := encode(idx)
	if err != nil {
		return nil, nil, NoticesSummary{}, err
	}
	return out.Bytes(), ib, s, nil
}

// licenseLine shows the declared license and, when it was not an SPDX
// expression, the text as written.
func licenseLine(declared, written string) string {
	if written != "" && declared != written {
		return fmt.Sprintf("%s (declared as %q)", declared, written)
	}
	if declared == noAssertion {
		return "NOASSERTION (none declared)"
	}
	return declared
}

// licenseFiles lists the license and notice files at the top of a package
// directory, sorted.
func licenseFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !isLicenseFile(e.Name()) {
			continue
		}
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out, nil
}

var codeExts = []string{".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx", ".map"}

func isLicenseFile(name string) bool {
	l := strings.ToLower(name)
	if !strings.HasPrefix(l, "license") && !strings.HasPrefix(l, "licence") &&
		!strings.HasPrefix(l, "copying") && !strings.HasPrefix(l, "notice") {
		return false
	}
	return !slices.Contains(codeExts, filepath.Ext(l))
}
