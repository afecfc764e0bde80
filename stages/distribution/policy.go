package distribution

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/home/receipt"
)

// The audit, signatures and smoke blocks: what a release checks beyond the
// static gates.

// allowIDRE accepts advisory ids: GHSA-xxxx-xxxx-xxxx, CVE-2024-1234,
// OSV ids (MAL-2024-1, PYSEC-2021-5...) and npm advisory numbers.
var allowIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`) })

func (dc *decoder) audit(blk *hcl.Block) {
	d := dc.d
	d.ranges["audit"] = blk.DefRange
	content := dc.content(blk.Body, auditSchema, "the audit block", "audit.")
	attrs := content.Attributes
	if list, rs, ok := dc.strList(attrs, "audit.sources"); ok {
		if len(list) == 0 {
			dc.add(errDiag("No audit source",
				`audit.sources needs at least one source: "npm" (the registry's advisories) or "osv:<path>" (an offline OSV database in the distribution directory). A release always audits; to release while a source cannot be reached, set allow_unavailable = true.`,
				d.ranges["audit.sources"]))
		}
		d.Audit.Sources, _ = dc.uniqueList(list, rs, "Duplicate audit source", func(s string, r hcl.Range) (string, bool) {
			src, msg := checkAuditSource(s)
			if msg != "" {
				dc.add(errDiag("Invalid audit source", fmt.Sprintf("audit.sources entry %q: %s", s, msg), r))
				return "", false
			}
			return src, true
		})
	}
	if v, r, ok := dc.str(attrs, "audit.fail_on"); ok {
		if SeverityRank(v) == 0 {
			detail := fmt.Sprintf("audit.fail_on %q is not a severity: write %s; findings at or above it fail the release.", v, orList(Severities))
			if fix := fixSeverity(v); fix != "" {
				detail += fmt.Sprintf(" Did you mean %q?", fix)
			}
			dc.add(errDiag("Invalid severity", detail, r))
		} else {
			d.Audit.FailOn = v
		}
	}
	if v, _, ok := dc.boolean(attrs, "audit.allow_unavailable"); ok {
		d.Audit.AllowUnavailable = v
	}
	seen := map[string]hcl.Range{}
	for _, b := range content.Blocks {
		id := b.Labels[0]
		lr := b.LabelRanges[0]
		if !allowIDRE().MatchString(id) {
			dc.add(errDiag("Invalid advisory id",
				fmt.Sprintf("allow %q: an advisory id is written as its database does, e.g. \"GHSA-xxxx-xxxx-xxxx\", \"CVE-2024-1234\" or an npm advisory number: letters, digits, '.', '_', ':' and '-'.", id), lr))
			continue
		}
		key := strings.ToUpper(id)
		if first, dup := seen[key]; dup {
			dc.add(errDiag("Duplicate allow entry", fmt.Sprintf("advisory %q is already accepted at %s.", id, fmtPos(first)), lr))
			continue
		}
		seen[key] = lr
		d.ranges["audit.allow."+id] = lr
		if a, ok := dc.allow(b, id); ok {
			d.Audit.Allow = append(d.Audit.Allow, a)
		}
	}
}

func (dc *decoder) allow(blk *hcl.Block, id string) (Allow, bool) {
	where := fmt.Sprintf("allow %q", id)
	content := dc.content(blk.Body, allowSchema, where, "audit.allow.")
	attrs := content.Attributes
	a := Allow{ID: id}
	ok := true
	key := "audit.allow." + id
	if v, r, vok := dc.str(attrs, key+".reason"); vok {
		if strings.TrimSpace(v) == "" {
			dc.add(errDiag("Missing reason", where+": reason says why the advisory is accepted, e.g. \"the vulnerable function is not reachable from our entry\"; it cannot be empty.", r))
			ok = false
		}
		a.Reason = v
	} else {
		ok = false
	}
	if v, r, vok := dc.str(attrs, key+".expires"); vok {
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			detail := fmt.Sprintf("%s: expires %q is not a date: write YYYY-MM-DD, the last day (UTC) the acceptance holds, e.g. \"2027-06-30\".", where, v)
			if fix := fixDate(v); fix != "" {
				detail += fmt.Sprintf(" Did you mean %q?", fix)
			}
			dc.add(errDiag("Invalid expiry date", detail, r))
			ok = false
		}
		a.Expires = t
	} else {
		ok = false
	}
	return a, ok
}

func (dc *decoder) signatures(blk *hcl.Block) {
	d := dc.d
	d.ranges["signatures"] = blk.DefRange
	content := dc.content(blk.Body, signaturesSchema, "the signatures block", "signatures.")
	if v, _, ok := dc.boolean(content.Attributes, "signatures.allow_unavailable"); ok {
		d.Signatures.AllowUnavailable = v
	}
}

func (dc *decoder) smokes(blks []*hcl.Block) {
	d := dc.d
	seen := map[string]hcl.Range{}
	for _, b := range blks {
		name := b.Labels[0]
		lr := b.LabelRanges[0]
		if msg := checkName(name); msg != "" {
			dc.add(errDiag("Invalid smoke test name", fmt.Sprintf("smoke %q: %s It names the test in release.json.", name, msg), lr))
			continue
		}
		if first, dup := seen[name]; dup {
			dc.add(errDiag("Duplicate smoke test", fmt.Sprintf("smoke %q is already declared at %s.", name, fmtPos(first)), lr))
			continue
		}
		seen[name] = lr
		d.ranges["smoke."+name] = lr
		if s, ok := dc.smoke(b, name); ok {
			d.Smoke = append(d.Smoke, s)
		}
	}
}

func (dc *decoder) smoke(blk *hcl.Block, name string) (Smoke, bool) {
	where := fmt.Sprintf("smoke %q", name)
	content := dc.content(blk.Body, smokeSchema, where, "smoke.")
	attrs := content.Attributes
	key := "smoke." + name
	s := Smoke{Name: name, Args: []string{}, Timeout: DefaultSmokeTimeout}
	ok := true
	if list, _, lok := dc.strList(attrs, key+".args"); lok {
		s.Args = list
	} else if _, written := attrs["args"]; written {
		ok = false
	}
	if v, r, vok := dc.expect(attrs, key+".expect"); vok {
		re, err := regexp.Compile(receipt.ExpandExpect(v, sampleVersion))
		switch {
		case v == "":
			dc.add(errDiag("Invalid expect", where+": expect cannot be empty, it would accept any output: write what the output must match, e.g. \"^1\\\\.0\\\\.0$\".", r))
			ok = false
		case err != nil:
			dc.add(errDiag("Invalid expect", fmt.Sprintf("%s: expect %q is not an RE2 regular expression (%v); RE2 has no lookaround or backreferences.", where, v, err), r))
			ok = false
		default:
			s.Expect = v
			if !strings.Contains(v, receipt.VersionRef) {
				s.re = re
			}
		}
	} else {
		ok = false
	}
	if v, r, vok := dc.str(attrs, key+".timeout"); vok {
		t, err := time.ParseDuration(v)
		switch {
		case err != nil:
			detail := fmt.Sprintf("%s: timeout %q is not a duration: write a number with a unit, e.g. \"60s\" or \"5m\".", where, v)
			if _, nerr := time.ParseDuration(v + "s"); nerr == nil {
				detail += fmt.Sprintf(" Did you mean %q?", v+"s")
			}
			dc.add(errDiag("Invalid timeout", detail, r))
			ok = false
		case t <= 0 || t > maxSmokeTimeout:
			dc.add(errDiag("Invalid timeout", fmt.Sprintf("%s: timeout %q must be more than 0 and at most %s.", where, v, maxSmokeTimeout), r))
			ok = false
		default:
			s.Timeout = t
		}
	}
	return s, ok
}

// checkAuditSource validates an audit source and returns it normalized
// ("osv:" and a cleaned path), or what is wrong with it.
func checkAuditSource(s string) (string, string) {
	const want = `an audit source is "npm" (the registry's bulk advisory endpoint) or "osv:<path>" (an offline OSV database: a .zip or a directory of OSV JSON inside the distribution directory).`
	if s == SourceNPM {
		return s, ""
	}
	if strings.EqualFold(s, SourceNPM) {
		return "", fmt.Sprintf("write %q in lowercase.", SourceNPM)
	}
	p, ok := strings.CutPrefix(s, SourceOSVPrefix)
	if !ok {
		if q, ok := strings.CutPrefix(strings.ToLower(s), SourceOSVPrefix); ok {
			return "", fmt.Sprintf("write the prefix in lowercase: %q.", SourceOSVPrefix+s[len(s)-len(q):])
		}
		if strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") {
			return "", "advisories are not fetched from arbitrary URLs: " + want
		}
		if strings.EqualFold(s, "osv") {
			return "", `name the database: "osv:<path>", e.g. "osv:osv" for the directory osv/ of the distribution.`
		}
		return "", want
	}
	c, msg := cleanRel(p)
	switch {
	case msg != "":
		return "", msg
	case c == ".":
		return "", "the OSV database is a .zip or a directory inside the distribution directory, not the directory itself."
	case c == FileName || c == LockFileName:
		return "", fmt.Sprintf("%s is not an OSV database.", c)
	}
	return SourceOSVPrefix + c, ""
}

// fixSeverity proposes a severity for a near miss: "HIGH", "medium".
func fixSeverity(v string) string {
	low := strings.ToLower(strings.TrimSpace(v))
	if low == "medium" {
		return SeverityModerate
	}
	if SeverityRank(low) > 0 {
		return low
	}
	return suggest(low, Severities)
}

// fixDate proposes YYYY-MM-DD for a date written another common way.
func fixDate(v string) string {
	v = strings.TrimSpace(v)
	for _, layout := range []string{"2006-1-2", "2006/01/02", "2006/1/2", "2006.01.02", "20060102", time.RFC3339} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.Format(time.DateOnly)
		}
	}
	return ""
}

// checkDatabases reports, at the audit source that names it, an OSV
// database that is missing or is neither a directory nor a .zip.
func (d *Distribution) checkDatabases() hcl.Diagnostics {
	var diags hcl.Diagnostics
	for i, s := range d.Audit.Sources {
		p, ok := strings.CutPrefix(s, SourceOSVPrefix)
		if !ok {
			continue
		}
		rng := d.Range(fmt.Sprintf("audit.sources[%d]", i))
		fi, err := os.Lstat(filepath.Join(d.Dir, filepath.FromSlash(p)))
		switch {
		case err != nil:
			detail := fmt.Sprintf("%s does not exist: an osv: source is a .zip or a directory of OSV JSON records (https://ossf.github.io/osv-schema/) inside the distribution directory.", d.shown(p))
			if s := suggestSibling(d.Dir, p); s != "" {
				detail += fmt.Sprintf(" Did you mean %q?", SourceOSVPrefix+s)
			}
			diags = append(diags, errDiag("Missing OSV database", detail, rng))
		case fi.Mode()&os.ModeSymlink != 0:
			diags = append(diags, errDiag("OSV database is a symlink",
				fmt.Sprintf("%s is a symbolic link; its files are locked, so it must be the files themselves.", d.shown(p)), rng))
		case fi.IsDir():
		case !fi.Mode().IsRegular() || !strings.EqualFold(filepath.Ext(p), ".zip"):
			diags = append(diags, errDiag("Not an OSV database",
				fmt.Sprintf("%s is %s; an OSV database is a .zip (as osv.dev publishes them) or a directory of OSV JSON records.", d.shown(p), describeDB(fi.Mode())), rng))
		}
	}
	return diags
}

func describeDB(m os.FileMode) string {
	if m.IsRegular() {
		return "a file that is not a .zip"
	}
	return atomicfs.KindOf(m)
}

// sampleVersion stands for the release version when an expect that names
// ${version} is checked at decoding, before any release names one.
const sampleVersion = "0.0.0"

// versionMark is what ${version} evaluates to while an expect is decoded:
// no text a file can hold, replaced by receipt.VersionRef afterwards.
const versionMark = "\x00version\x00"

// expect reads a smoke test's expect, the one string of distribution.hcl
// that may name a variable: ${version}, the release version, kept as
// receipt.VersionRef for the smoke stage (and the launcher's smoke start)
// to fill in with receipt.ExpandExpect.
func (dc *decoder) expect(attrs hcl.Attributes, key string) (string, hcl.Range, bool) {
	attr, ok := attrs[lastName(key)]
	if !ok {
		return "", hcl.Range{}, false
	}
	r := attr.Expr.Range()
	dc.d.ranges[key] = r
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"version": cty.StringVal(versionMark)}}
	v, diags := attr.Expr.Value(ctx)
	for _, d := range diags {
		switch d.Summary {
		case "Unknown variable", "Variables not allowed", "Function calls not allowed":
			d.Detail = strings.TrimSuffix(d.Detail, ".") + ": expect may name ${version}, the release version, and nothing else; " + FileName + " is static."
		}
	}
	dc.add(diags...)
	if diags.HasErrors() {
		return "", r, false
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		dc.add(typeDiag(r, key, "a string"+exampleFor(key), v))
		return "", r, false
	}
	return strings.ReplaceAll(v.AsString(), versionMark, receipt.VersionRef), r, true
}
