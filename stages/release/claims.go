package release

// The claims a release makes about itself, as rules of the same table:
// the SBOM, the notices, the vulnerability verdict, the tests and the
// signature verdict. Until they were rules, verify-release alone checked
// them and install took them on trust of checksums.txt, so a release.json
// with a wrong SBOM digest, an SBOM of {} or empty notices installed; and
// neither consumer recomputed the vulnerability verdict, so a
// vulnerabilities.json listing critical findings under failOn high with
// verdict passed was accepted by both. Each is now a function of the
// release's metadata files (read through Input.Read, checked against
// their digests) that install, update, verify-release and doctor apply.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/release/vulnreport"
)

// The rules of the claims, applied after release-matches-payload.
const (
	RuleSBOM            Rule = "sbom-matches-payload" // sbom.spdx.json is where and what release.json binds, an SPDX document, listing exactly the payload's locked packages
	RuleNotices         Rule = "notices-cover-sbom"   // the notices are where release.json says, their index covers the SBOM, the text names each package
	RuleVulnerabilities Rule = "vulnerabilities"      // vulnerabilities.json agrees with release.json, its verdict is the one its findings and failOn give, and it lets the release ship
	RuleTests           Rule = "tests"                // every test release.json records passed
	RuleSignatures      Rule = "signatures"           // the signature verdict is not failed
)

// docPath is the rule of a path release.json gives one of its documents:
// exactly the name piship release writes it under, so a path such as
// ../../../../etc/passwd is refused before anything reads it.
func docPath(field, got, want string) []string {
	if got != want {
		return []string{fmt.Sprintf("release.json puts %s at %q, not %s", field, got, want)}
	}
	return nil
}

// payloadLocks lists the payload's package locks among the release's
// files: the runtime's payload/package-lock.json and each vendored Pi
// package's (payload/pi-packages/<name>/package-lock.json, scoped names
// included), sorted.
func payloadLocks(files map[string]string) []string {
	locks := []string{"payload/package-lock.json"}
	for p := range files {
		for _, pattern := range []string{"payload/" + distribution.PiPackagesDir + "/*/package-lock.json", "payload/" + distribution.PiPackagesDir + "/@*/*/package-lock.json"} {
			if ok, _ := path.Match(pattern, p); ok {
				locks = append(locks, p)
			}
		}
	}
	slices.Sort(locks[1:])
	return locks
}

// checkClaims applies the claim rules to rel (a release, not a payload).
// sbomSet is shared by the SBOM and the notices rules.
func (c *checker) checkClaims(rel *releasejson.Metadata) {
	sbomSet, sbomOK := c.checkSBOM(rel)
	c.checkNotices(rel, sbomSet, sbomOK)
	c.checkVulnerabilities(rel)

	var failed []string
	for _, t := range rel.Tests {
		// not-run is what a release records for a target its build host
		// could not run, with the reason; anything else but passed fails.
		switch {
		case t.Result == releasejson.TestNotRun && t.Reason == "":
			failed = append(failed, t.Name+": not-run without a reason")
		case t.Result != releasejson.TestPassed && t.Result != releasejson.TestNotRun:
			failed = append(failed, t.Name+": "+t.Result)
		}
	}
	c.result(RuleTests, releasejson.Name, failed)
	var sig []string
	if rel.Signatures.Verdict == "failed" {
		sig = append(sig, "signature verdict failed: "+rel.Signatures.Reason)
	}
	c.result(RuleSignatures, releasejson.Name, sig)
}

// checkSBOM: the SBOM is at sbom.spdx.json with the digest and package
// count release.json binds, an SPDX document with a described root, and
// lists exactly the packages the payload's locks install (an optional
// package may be left out: npm may not install it for this target).
// It returns the SBOM's name@version set.
func (c *checker) checkSBOM(rel *releasejson.Metadata) (map[string]bool, bool) {
	if p := docPath("sbom.path", rel.SBOM.Path, SBOMName); p != nil {
		return nil, c.result(RuleSBOM, releasejson.Name, p)
	}
	data, ok := c.read(RuleSBOM, SBOMName)
	if !ok {
		return nil, false
	}
	var problems []string
	if d := c.in.Files[SBOMName]; d != rel.SBOM.SHA256 {
		problems = append(problems, fmt.Sprintf("sbom sha256 %s, release.json says %s", d, rel.SBOM.SHA256))
	}
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		SPDXID      string `json:"SPDXID"`
		Packages    []struct {
			SPDXID      string `json:"SPDXID"`
			Name        string `json:"name"`
			VersionInfo string `json:"versionInfo"`
		} `json:"packages"`
		DocumentDescribes []string `json:"documentDescribes"`
		Relationships     []struct {
			Element string `json:"spdxElementId"`
			Type    string `json:"relationshipType"`
			Related string `json:"relatedSpdxElement"`
		} `json:"relationships"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, c.fail(RuleSBOM, SBOMName, "not JSON: %v", err)
	}
	roots := map[string]bool{}
	for _, id := range doc.DocumentDescribes {
		roots[id] = true
	}
	for _, r := range doc.Relationships {
		if r.Element == "SPDXRef-DOCUMENT" && r.Type == "DESCRIBES" {
			roots[r.Related] = true
		}
	}
	if !strings.HasPrefix(doc.SPDXVersion, "SPDX-") || doc.SPDXID != "SPDXRef-DOCUMENT" || len(roots) == 0 {
		problems = append(problems, "not an SPDX document describing the distribution (spdxVersion, SPDXID SPDXRef-DOCUMENT and a DESCRIBES root)")
	}
	sbomSet := map[string]bool{}
	copies := 0
	for _, p := range doc.Packages {
		// The distribution's pinned tools (SPDXRef-Tool-...) are no npm
		// packages: the lock pins them, not package-lock.json.
		if !roots[p.SPDXID] && !strings.HasPrefix(p.SPDXID, "SPDXRef-Tool-") {
			sbomSet[p.Name+"@"+p.VersionInfo] = true
			copies++
		}
	}
	if copies != rel.SBOM.Packages {
		problems = append(problems, fmt.Sprintf("sbom lists %s, release.json says %d", canon.Count(copies, "package"), rel.SBOM.Packages))
	}
	lockSet, optional := map[string]bool{}, map[string]bool{}
	for _, lp := range payloadLocks(c.in.Files) {
		raw, ok := c.read(RuleSBOM, lp)
		if !ok {
			return sbomSet, false
		}
		pl, err := distribution.ParsePackageLock(raw)
		if err != nil {
			return sbomSet, c.fail(RuleSBOM, lp, "%v", err)
		}
		for key, p := range pl.Packages {
			if key == "" || p.Dev || p.Link || !strings.Contains(key, "node_modules/") {
				continue
			}
			if p.Optional || p.DevOptional {
				optional[distribution.PackageName(key, p)+"@"+p.Version] = true
				continue
			}
			lockSet[distribution.PackageName(key, p)+"@"+p.Version] = true
		}
	}
	problems = append(problems, setDiff("in the payload's lock but not the SBOM", lockSet, sbomSet)...)
	locked := maps.Clone(lockSet)
	maps.Copy(locked, optional)
	problems = append(problems, setDiff("in the SBOM but not the payload's lock", sbomSet, locked)...)
	return sbomSet, c.result(RuleSBOM, SBOMName, problems)
}

// checkNotices: the notices are at their names; the index covers every
// package of the SBOM (with a license file, or listed without one); the
// text names each package the index lists as name@version at the start
// of a line, as piship release writes it.
func (c *checker) checkNotices(rel *releasejson.Metadata, sbomSet map[string]bool, sbomOK bool) {
	if p := append(docPath("notices.path", rel.Notices.Path, NoticesName), docPath("notices.index", rel.Notices.Index, NoticesIndexName)...); p != nil {
		c.result(RuleNotices, releasejson.Name, p)
		return
	}
	raw, ok := c.read(RuleNotices, NoticesIndexName)
	if !ok {
		return
	}
	var index struct {
		Packages []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"packages"`
		WithoutLicenseFile []string `json:"withoutLicenseFile"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		c.fail(RuleNotices, NoticesIndexName, "not JSON: %v", err)
		return
	}
	text, ok := c.read(RuleNotices, NoticesName)
	if !ok {
		return
	}
	covered := map[string]bool{}
	for _, p := range index.Packages {
		covered[p.Name+"@"+p.Version] = true
	}
	for _, p := range index.WithoutLicenseFile {
		covered[p] = true
	}
	var problems []string
	if sbomOK {
		problems = setDiff("in the SBOM but not the notices", sbomSet, covered)
	}
	named := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), MaxMetadataBytes)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 {
			named[f[0]] = true
		}
	}
	problems = append(problems, setDiff("in the notices index but not named in "+NoticesName, covered, named)...)
	c.result(RuleNotices, NoticesName, problems)
}

// checkVulnerabilities: vulnerabilities.json is where release.json says,
// agrees with it (failOn, verdict, allowUnavailable, counts), holds the
// lock's audit policy (failOn, allowUnavailable; failOn high without an
// audit block), has a verdict that follows from its findings
// (vulnreport.Report.Disagreements; a finding may say allowed only where the
// lock's allow entries name it), and the verdict lets a release ship: passed, or
// unavailable where the policy allows it.
func (c *checker) checkVulnerabilities(rel *releasejson.Metadata) {
	if p := docPath("vulnerabilities.path", rel.Vulnerabilities.Path, VulnerabilitiesName); p != nil {
		c.result(RuleVulnerabilities, releasejson.Name, p)
		return
	}
	raw, ok := c.read(RuleVulnerabilities, VulnerabilitiesName)
	if !ok {
		return
	}
	var rep vulnreport.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		c.fail(RuleVulnerabilities, VulnerabilitiesName, "not JSON: %v", err)
		return
	}
	var problems []string
	rv := rel.Vulnerabilities
	if rep.FailOn != rv.FailOn || rep.Verdict != rv.Verdict || rep.AllowUnavailable != rv.AllowUnavailable || !maps.Equal(rep.Counts, rv.Counts) {
		problems = append(problems, fmt.Sprintf("failOn %q, verdict %q, allowUnavailable %t, counts %v; release.json says %q, %q, %t, %v",
			rep.FailOn, rep.Verdict, rep.AllowUnavailable, rep.Counts, rv.FailOn, rv.Verdict, rv.AllowUnavailable, rv.Counts))
	}
	failOn, allowUnavailable := distribution.SeverityHigh, false
	var allow []distribution.LockAllow
	if l := c.out.Lock; l != nil && l.Audit != nil {
		failOn, allowUnavailable, allow = l.Audit.FailOn, l.Audit.AllowUnavailable, l.Audit.Allow
	}
	if c.out.Lock != nil && (rep.FailOn != failOn || rep.AllowUnavailable != allowUnavailable) {
		problems = append(problems, fmt.Sprintf("failOn %q and allowUnavailable %t, the lock's audit policy says %q and %t", rep.FailOn, rep.AllowUnavailable, failOn, allowUnavailable))
	}
	problems = append(problems, rep.Disagreements(func(f vulnreport.Finding) bool { return allowedBy(allow, f) })...)
	if len(problems) == 0 {
		switch {
		case rep.Verdict == vulnreport.Passed:
		case rep.Verdict == vulnreport.Unavailable && rep.AllowUnavailable:
		default:
			problems = append(problems, fmt.Sprintf("verdict is %q: a release ships with passed only (unavailable where audit.allow_unavailable allows it)", rep.Verdict))
		}
	}
	c.result(RuleVulnerabilities, VulnerabilitiesName, problems)
}

// allowedBy reports whether an allow entry of the lock names f (its id or
// an alias): the only way a finding may say it is allowed. (Whether the
// entry had expired was decided when the audit ran; release.json's
// created time is the content's, not the audit's clock, so it is not
// judged again here.)
func allowedBy(allow []distribution.LockAllow, f vulnreport.Finding) bool {
	return slices.ContainsFunc(allow, func(a distribution.LockAllow) bool {
		return strings.EqualFold(a.ID, f.ID) || slices.ContainsFunc(f.Aliases, func(x string) bool { return strings.EqualFold(x, a.ID) })
	})
}

func setDiff(what string, a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	if len(out) > 5 {
		out = append(out[:5:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return []string{what + ": " + strings.Join(out, ", ")}
}
