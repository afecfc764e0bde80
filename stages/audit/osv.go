package audit

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/release/vulnreport"
)

// Offline OSV databases (https://ossf.github.io/osv-schema/): a .zip, as
// osv.dev publishes them (https://osv-vulnerabilities.storage.googleapis.com/npm/all.zip),
// or a directory of OSV JSON records, one record per .json file.

// maxRecord bounds one OSV record.
const maxRecord = 16 << 20

type osvRecord struct {
	ID               string          `json:"id"`
	Withdrawn        string          `json:"withdrawn"`
	Aliases          []string        `json:"aliases"`
	Summary          string          `json:"summary"`
	Details          string          `json:"details"`
	Severity         []osvSeverity   `json:"severity"`
	Affected         []osvAffected   `json:"affected"`
	References       []osvReference  `json:"references"`
	DatabaseSpecific json.RawMessage `json:"database_specific"`
}

type osvSeverity struct {
	Type  string `json:"type"`
	Score string `json:"score"`
}

type osvReference struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

type osvAffected struct {
	Package struct {
		Ecosystem string `json:"ecosystem"`
		Name      string `json:"name"`
	} `json:"package"`
	Ranges   []osvRange    `json:"ranges"`
	Versions []string      `json:"versions"`
	Severity []osvSeverity `json:"severity"`
}

type osvRange struct {
	Type   string     `json:"type"`
	Events []osvEvent `json:"events"`
}

type osvEvent struct {
	Introduced   *string `json:"introduced"`
	Fixed        *string `json:"fixed"`
	LastAffected *string `json:"last_affected"`
	Limit        *string `json:"limit"`
}

// osvEntry is one affected[] entry of ecosystem npm, with its record.
type osvEntry struct {
	rec *osvRecord
	aff *osvAffected
}

// osvDB indexes the npm entries of a database by package name.
type osvDB struct {
	byName  map[string][]osvEntry
	records int
}

// loadOSV reads a database: a .zip or a directory (recursively) of .json
// records. A file that is not an OSV record makes the database corrupt.
func loadOSV(root string) (*osvDB, error) {
	db := &osvDB{byName: map[string][]osvEntry{}}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	add := func(name string, r io.Reader) error {
		data, err := io.ReadAll(io.LimitReader(r, maxRecord+1))
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		if len(data) > maxRecord {
			return fmt.Errorf("%s: larger than %d MiB", name, maxRecord>>20)
		}
		var rec osvRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return fmt.Errorf("%s: not an OSV record: %v", name, err)
		}
		if rec.ID == "" {
			return fmt.Errorf("%s: not an OSV record: no id", name)
		}
		db.records++
		if rec.Withdrawn != "" {
			return nil
		}
		for i := range rec.Affected {
			a := &rec.Affected[i]
			if strings.EqualFold(a.Package.Ecosystem, "npm") && a.Package.Name != "" {
				db.byName[a.Package.Name] = append(db.byName[a.Package.Name], osvEntry{rec: &rec, aff: a})
			}
		}
		return nil
	}
	isJSON := func(name string) bool { return strings.EqualFold(filepath.Ext(name), ".json") }
	if fi.IsDir() {
		err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !e.Type().IsRegular() || !isJSON(p) {
				return nil
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			rel, _ := filepath.Rel(root, p)
			return add(filepath.ToSlash(rel), f)
		})
		return db, err
	}
	zr, err := zip.OpenReader(root)
	if err != nil {
		return nil, fmt.Errorf("not a .zip: %v", err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.FileInfo().IsDir() || !isJSON(f.Name) {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%s: %v", f.Name, err)
		}
		err = add(f.Name, rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	return db, nil
}

// osvSource matches the packages against the database at rel (relative to
// distDir).
func osvSource(distDir, rel string, pkgs []Package) outcome {
	root := filepath.Join(distDir, filepath.FromSlash(rel))
	db, err := loadOSV(root)
	if err != nil {
		return outcome{unavailable: fmt.Sprintf("the OSV database %s cannot be read: %v", rel, err)}
	}
	if db.records == 0 {
		return outcome{unavailable: fmt.Sprintf("the OSV database %s holds no records", rel)}
	}
	type key struct{ id, name, version string }
	found := map[key]*vulnreport.Finding{}
	var order []key
	var unparsed []string
	for _, p := range pkgs {
		if p.Version == "" {
			continue
		}
		v, verr := parseVersion(p.Version)
		// A record may have several entries for one package (minimist's
		// two ranges): it affects the version if any does, and its range
		// is all of them.
		hits := map[string]bool{}
		ranges := map[string][]string{}
		var recs []*osvRecord
		for _, e := range db.byName[p.Name] {
			hit, rng, ok := e.affects(p.Version, v, verr == nil)
			if !ok {
				unparsed = append(unparsed, fmt.Sprintf("%s %s@%s", e.rec.ID, p.Name, p.Version))
			}
			if _, seen := ranges[e.rec.ID]; !seen {
				recs = append(recs, e.rec)
			}
			hits[e.rec.ID] = hits[e.rec.ID] || hit
			if rng != "" && !slices.Contains(ranges[e.rec.ID], rng) {
				ranges[e.rec.ID] = append(ranges[e.rec.ID], rng)
			}
		}
		for _, rec := range recs {
			if !hits[rec.ID] {
				continue
			}
			k := key{rec.ID, p.Name, p.Version}
			f := found[k]
			if f == nil {
				f = osvFinding(rec)
				f.Package, f.Version = p.Name, p.Version
				f.Range = strings.Join(ranges[rec.ID], " || ")
				found[k] = f
				order = append(order, k)
			}
			if !slices.Contains(f.Paths, p.Path) {
				f.Paths = append(f.Paths, p.Path)
			}
		}
	}
	out := outcome{note: canon.Count(db.records, "record")}
	for _, k := range order {
		f := found[k]
		slices.Sort(f.Paths)
		out.findings = append(out.findings, *f)
	}
	if len(unparsed) > 0 {
		slices.Sort(unparsed)
		unparsed = slices.Compact(unparsed)
		out.note += "; counted as affected, a version could not be evaluated: " + strings.Join(unparsed, ", ")
	}
	return out
}

// affects reports whether the entry covers the version (raw, and parsed
// when ok), and the entry's range as text. An entry whose versions cannot
// be evaluated counts as affecting (ok false).
func (e osvEntry) affects(raw string, v version, parsed bool) (hit bool, rng string, ok bool) {
	ok = true
	var texts []string
	for _, s := range e.aff.Versions {
		texts = append(texts, s)
		if s == raw {
			hit = true
			continue
		}
		if w, err := parseVersion(s); err == nil && parsed && compareVersions(w, v) == 0 {
			hit = true
		}
	}
	for _, r := range e.aff.Ranges {
		if t := strings.ToUpper(r.Type); t != "SEMVER" && t != "ECOSYSTEM" {
			continue // GIT ranges name commits
		}
		evs, err := compileEvents(r.Events)
		if err != nil || !parsed {
			ok = false
			hit = true
			texts = append(texts, "(unreadable range)")
			continue
		}
		texts = append(texts, rangeText(evs))
		if affectedBy(v, evs) {
			hit = true
		}
	}
	return hit, strings.Join(texts, " || "), ok
}

// Event kinds, in the order events of one version sort.
const (
	evIntroduced = iota
	evLastAffected
	evFixed
	evLimit
)

type event struct {
	kind int
	zero bool // introduced "0": before every version
	v    version
}

func compileEvents(raw []osvEvent) ([]event, error) {
	var evs []event
	for _, e := range raw {
		var kind int
		var s *string
		n := 0
		for k, p := range []*string{e.Introduced, e.LastAffected, e.Fixed, e.Limit} {
			if p != nil {
				kind, s = k, p
				n++
			}
		}
		if n != 1 {
			return nil, fmt.Errorf("an event has %d of introduced, fixed, last_affected, limit", n)
		}
		if kind == evIntroduced && *s == "0" {
			evs = append(evs, event{kind: kind, zero: true})
			continue
		}
		if kind == evLimit && *s == "*" {
			continue // no limit
		}
		v, err := parseVersion(*s)
		if err != nil {
			return nil, err
		}
		evs = append(evs, event{kind: kind, v: v})
	}
	// Sorted by version, "0" first; at one version introduced comes before
	// last_affected, fixed and limit, so introduced X, fixed X is empty.
	slices.SortStableFunc(evs, func(a, b event) int {
		switch {
		case a.zero && b.zero:
			return 0
		case a.zero:
			return -1
		case b.zero:
			return 1
		}
		if c := compareVersions(a.v, b.v); c != 0 {
			return c
		}
		return a.kind - b.kind
	})
	return evs, nil
}

// affectedBy evaluates sorted events as the OSV schema says: walking up,
// introduced at or below v makes it affected, fixed at or below v or
// last_affected below v makes it not; a limit bounds everything.
func affectedBy(v version, evs []event) bool {
	affected := false
	var limits []version
	for _, e := range evs {
		switch e.kind {
		case evIntroduced:
			if e.zero || compareVersions(v, e.v) >= 0 {
				affected = true
			}
		case evFixed:
			if compareVersions(v, e.v) >= 0 {
				affected = false
			}
		case evLastAffected:
			if compareVersions(v, e.v) > 0 {
				affected = false
			}
		case evLimit:
			limits = append(limits, e.v)
		}
	}
	if affected && len(limits) > 0 {
		return slices.ContainsFunc(limits, func(l version) bool { return compareVersions(v, l) < 0 })
	}
	return affected
}

// rangeText writes sorted events as an npm-style range: ">=1.0.0 <1.2.6 ||
// <0.2.4".
func rangeText(evs []event) string {
	var parts []string
	open, start := false, ""
	for _, e := range evs {
		switch e.kind {
		case evIntroduced:
			if !open {
				open, start = true, ""
				if !e.zero {
					start = ">=" + e.v.String()
				}
			}
		case evFixed, evLastAffected:
			if open {
				op := "<"
				if e.kind == evLastAffected {
					op = "<="
				}
				parts = append(parts, strings.TrimSpace(start+" "+op+e.v.String()))
				open = false
			}
		}
	}
	if open {
		if start == "" {
			start = "*"
		}
		parts = append(parts, start)
	}
	return strings.Join(parts, " || ")
}

// osvFinding fills a finding's advisory fields from a record.
func osvFinding(r *osvRecord) *vulnreport.Finding {
	f := &vulnreport.Finding{ID: r.ID, Aliases: slices.Clone(r.Aliases), Title: r.Summary}
	slices.Sort(f.Aliases)
	if f.Title == "" {
		f.Title, _, _ = strings.Cut(strings.TrimSpace(r.Details), "\n")
		if len(f.Title) > 200 {
			f.Title = f.Title[:200] + "..."
		}
	}
	for _, kind := range []string{"ADVISORY", "WEB"} {
		if i := slices.IndexFunc(r.References, func(x osvReference) bool { return x.Type == kind }); i >= 0 && f.URL == "" {
			f.URL = r.References[i].URL
		}
	}
	if f.URL == "" {
		f.URL = "https://osv.dev/vulnerability/" + r.ID
	}
	f.Severity, f.Unrated = osvSeverityOf(r)
	return f
}

// osvSeverityOf rates a record: database_specific.severity (GitHub's LOW,
// MODERATE, HIGH, CRITICAL), else the highest CVSS v3 base score among its
// severity entries (0.1-3.9 low, 4.0-6.9 moderate, 7.0-8.9 high, 9.0-10
// critical). A record rated neither way counts as high, as npm audit
// counts an advisory without severity; CVSS v2 and v4 vectors are not
// scored.
func osvSeverityOf(r *osvRecord) (string, bool) {
	var ds struct {
		Severity string `json:"severity"`
	}
	if len(r.DatabaseSpecific) > 0 && json.Unmarshal(r.DatabaseSpecific, &ds) == nil && ds.Severity != "" {
		if s, unrated := npmSeverity(ds.Severity); !unrated {
			return s, false
		}
	}
	best := -1.0
	sevs := slices.Clone(r.Severity)
	for _, a := range r.Affected {
		sevs = append(sevs, a.Severity...)
	}
	for _, s := range sevs {
		if s.Type != "CVSS_V3" {
			continue
		}
		if score, err := cvss3Score(s.Score); err == nil && score > best {
			best = score
		}
	}
	switch {
	case best >= 9:
		return "critical", false
	case best >= 7:
		return "high", false
	case best >= 4:
		return "moderate", false
	case best >= 0:
		return "low", false
	}
	return "high", true
}

// cvss3Score computes the base score of a CVSS v3.0 or v3.1 vector
// ("CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H").
func cvss3Score(vector string) (float64, error) {
	parts := strings.Split(vector, "/")
	if len(parts) < 9 || (parts[0] != "CVSS:3.0" && parts[0] != "CVSS:3.1") {
		return 0, fmt.Errorf("not a CVSS v3 vector: %q", vector)
	}
	m := map[string]string{}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, ":")
		if !ok {
			return 0, fmt.Errorf("malformed metric %q", p)
		}
		m[k] = v
	}
	weights := map[string]map[string]float64{
		"AV": {"N": 0.85, "A": 0.62, "L": 0.55, "P": 0.2},
		"AC": {"L": 0.77, "H": 0.44},
		"UI": {"N": 0.85, "R": 0.62},
		"C":  {"H": 0.56, "L": 0.22, "N": 0},
		"I":  {"H": 0.56, "L": 0.22, "N": 0},
		"A":  {"H": 0.56, "L": 0.22, "N": 0},
	}
	w := map[string]float64{}
	for k, table := range weights {
		x, ok := table[m[k]]
		if !ok {
			return 0, fmt.Errorf("metric %s:%s", k, m[k])
		}
		w[k] = x
	}
	changed := false
	switch m["S"] {
	case "U":
	case "C":
		changed = true
	default:
		return 0, fmt.Errorf("metric S:%s", m["S"])
	}
	pr := map[string]float64{"N": 0.85, "L": 0.62, "H": 0.27}
	if changed {
		pr = map[string]float64{"N": 0.85, "L": 0.68, "H": 0.5}
	}
	prw, ok := pr[m["PR"]]
	if !ok {
		return 0, fmt.Errorf("metric PR:%s", m["PR"])
	}
	iss := 1 - (1-w["C"])*(1-w["I"])*(1-w["A"])
	impact := 6.42 * iss
	if changed {
		impact = 7.52*(iss-0.029) - 3.25*math.Pow(iss-0.02, 15)
	}
	exploit := 8.22 * w["AV"] * w["AC"] * prw * w["UI"]
	if impact <= 0 {
		return 0, nil
	}
	if changed {
		return roundUp(math.Min(1.08*(impact+exploit), 10)), nil
	}
	return roundUp(math.Min(impact+exploit, 10)), nil
}

// roundUp is CVSS v3.1's Roundup: the smallest number of one decimal
// place at or above x, computed without floating point surprises.
func roundUp(x float64) float64 {
	i := int64(math.Round(x * 100000))
	if i%10000 == 0 {
		return float64(i) / 100000
	}
	return float64(i/10000+1) / 10
}
