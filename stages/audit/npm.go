package audit

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"piship.dev/piship/stages/release/vulnreport"
)

// BulkPath is the registry's bulk advisory endpoint, relative to the
// registry URL.
const BulkPath = "-/npm/v1/security/advisories/bulk"

// maxBulkAnswer bounds the bulk endpoint's answer.
const maxBulkAnswer = 64 << 20

var ghsaRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\bGHSA(-[0-9a-z]{4}){3}\b`) })

// bulkAdvisory is one advisory of the bulk endpoint's answer.
type bulkAdvisory struct {
	ID                 json.RawMessage `json:"id"`
	URL                string          `json:"url"`
	Title              string          `json:"title"`
	Severity           string          `json:"severity"`
	VulnerableVersions *string         `json:"vulnerable_versions"`
}

// npmSource asks the registry's bulk advisory endpoint about the registry
// packages: POST a gzipped {"<name>": ["<version>", ...]}, answered by
// {"<name>": [advisory, ...]}.
func (o Options) npmSource(ctx context.Context, pkgs []Package) outcome {
	versions := map[string][]string{}
	paths := map[string][]string{} // name@version -> lock keys
	for _, p := range pkgs {
		if p.Local || p.Version == "" {
			continue
		}
		if !slices.Contains(versions[p.Name], p.Version) {
			versions[p.Name] = append(versions[p.Name], p.Version)
		}
		paths[p.ID()] = append(paths[p.ID()], p.Path)
	}
	if len(versions) == 0 {
		return outcome{note: "no registry packages"}
	}
	for _, vs := range versions {
		slices.Sort(vs)
	}
	body, err := json.Marshal(versions) // map keys sorted
	if err != nil {
		return outcome{unavailable: err.Error()}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(body)
	zw.Close()

	url := o.Registry + BulkPath
	data, ferr := o.fetch(ctx, request{
		method: "POST", url: url, body: gz.Bytes(), limit: maxBulkAnswer,
		header: map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip", "Accept": "application/json"},
	})
	if ferr != nil {
		why := ferr.Error()
		if he, ok := ferr.(*httpError); ok && (he.Status == 404 || he.Status == 405) {
			why += ": it has no bulk advisory endpoint"
		}
		return outcome{unavailable: fmt.Sprintf("the registry at %s %s (POST %s)", o.Registry, why, url)}
	}
	var answer map[string][]bulkAdvisory
	if err := json.Unmarshal(data, &answer); err != nil || answer == nil {
		if err == nil {
			err = fmt.Errorf("not an object")
		}
		return outcome{unavailable: fmt.Sprintf("the registry at %s gave a malformed bulk advisory answer: %v", o.Registry, err)}
	}

	var out outcome
	var unparsed []string
	for _, name := range slices.Sorted(maps.Keys(answer)) {
		asked, ok := versions[name]
		if !ok {
			continue // not asked about
		}
		for _, a := range answer[name] {
			f, err := bulkFinding(name, a)
			if err != nil {
				return outcome{unavailable: fmt.Sprintf("the registry at %s gave a malformed bulk advisory answer: %s: %v", o.Registry, name, err)}
			}
			// npm audit: no range means every version.
			rng := "*"
			if a.VulnerableVersions != nil {
				rng = *a.VulnerableVersions
			}
			f.Range = rng
			r, rerr := parseRange(rng, true)
			for _, v := range asked {
				pv, verr := parseVersion(v)
				hit := false
				switch {
				case rerr != nil || verr != nil:
					// A range or version we cannot evaluate counts as
					// affected: a gate errs on the side of failing.
					hit = true
					unparsed = append(unparsed, fmt.Sprintf("%s %s@%s", f.ID, name, v))
				default:
					hit = r.test(pv)
				}
				if hit {
					g := f
					g.Version = v
					g.Paths = slices.Clone(paths[name+"@"+v])
					slices.Sort(g.Paths)
					out.findings = append(out.findings, g)
				}
			}
		}
	}
	if len(unparsed) > 0 {
		out.note = "counted as affected, the range or version could not be evaluated: " + strings.Join(unparsed, ", ")
	}
	return out
}

// bulkFinding reads what a finding needs from an advisory.
func bulkFinding(name string, a bulkAdvisory) (vulnreport.Finding, error) {
	var num string
	if len(a.ID) > 0 && string(a.ID) != "null" {
		var n json.Number
		var s string
		switch {
		case json.Unmarshal(a.ID, &n) == nil:
			num = n.String()
		case json.Unmarshal(a.ID, &s) == nil:
			num = s
		default:
			return vulnreport.Finding{}, fmt.Errorf("advisory id %s is neither a number nor a string", a.ID)
		}
	}
	f := vulnreport.Finding{Package: name, Title: a.Title, URL: a.URL}
	if g := ghsaRE().FindString(a.URL); g != "" {
		f.ID = "GHSA" + strings.ToLower(g[4:])
		if num != "" {
			f.Aliases = []string{num}
		}
	} else {
		f.ID = num
	}
	if f.ID == "" {
		return vulnreport.Finding{}, fmt.Errorf("an advisory has neither an id nor a GitHub advisory URL")
	}
	f.Severity, f.Unrated = npmSeverity(a.Severity)
	return f, nil
}

// npmSeverity maps an advisory's severity to a fail_on level. npm's
// legacy "info" and "none" are below every level, so "low"; a missing or
// unknown one counts as high, as npm audit counts it.
func npmSeverity(s string) (string, bool) {
	switch s = strings.ToLower(strings.TrimSpace(s)); s {
	case "low", "moderate", "high", "critical":
		return s, false
	case "medium":
		return "moderate", false
	case "info", "none":
		return "low", false
	}
	return "high", true
}
