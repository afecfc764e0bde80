// Package releasejson is release.json, the document a release says what
// it is in: its schema (piship-release/v1), its name in a release
// directory, its type and the one strict reader (Parse) that install,
// verify-release, doctor (through stages/release's rules) and
// piship repo add (stages/tuf.ReleaseOf) hold it to. It imports only the standard
// library, so any package, stages/tuf among them, can use it without an
// import cycle.
package releasejson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"piship.dev/piship/cache/canon"
)

// Schema is release.json's schema.
const Schema = "piship-release/v1"

// Name is release.json's name in a release directory and archive.
const Name = "release.json"

// NotesName is the release notes piship release writes beside release.json
// (release.NotesName, whose rules say what it is), named here so that
// stages/tuf (piship repo add) finds it without the build's packages.
const NotesName = "notes.md"

// Metadata is release.json: what a release is and what qualified it. Every
// field derives from the release's content, never from the cache or the
// clock, so a cold and a warm release write the same bytes.
type Metadata struct {
	Schema       string `json:"schema"`
	Distribution struct {
		ID      string `json:"id"`
		Name    string `json:"name"`
		Version string `json:"version"`
		Command string `json:"command"`
	} `json:"distribution"`
	Tool struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"tool"`
	Runtime struct {
		Package string `json:"package"`
		Version string `json:"version"`
	} `json:"runtime"`
	LockSHA256    string `json:"lockSha256"`
	Target        string `json:"target"`
	Channel       string `json:"channel"`
	Created       string `json:"created"`
	Qualification string `json:"qualification"`
	Payload       struct {
		Path            string `json:"path"`
		InventorySHA256 string `json:"inventorySha256"`
		Files           int    `json:"files"`
	} `json:"payload"`
	Tests []TestResult `json:"tests"`
	// Runner names the CI runner that built this target and ran its smoke
	// tests (piship release --runner, or --target's default: RUNNER_NAME,
	// else the host name); absent from a release that names none. The
	// tests' verdicts are that runner's: a target smoke-tested on its own
	// OS passes where another host records not-run.
	Runner string `json:"runner,omitempty"`
	SBOM   struct {
		Path     string `json:"path"`
		SHA256   string `json:"sha256"`
		Packages int    `json:"packages"`
	} `json:"sbom"`
	Notices struct {
		Path  string `json:"path"`
		Index string `json:"index"`
	} `json:"notices"`
	Vulnerabilities struct {
		Path             string         `json:"path"`
		FailOn           string         `json:"failOn"`
		Verdict          string         `json:"verdict"`
		AllowUnavailable bool           `json:"allowUnavailable"`
		Counts           map[string]int `json:"counts"`
	} `json:"vulnerabilities"`
	PackageAudits PackageAudits    `json:"packageAudits"`
	Signatures    SignatureSummary `json:"signatures"`
}

// PackageAudits is the audit verdict of the distribution's vendored
// package locks, as release.json records it. CheckPackageAudits is its
// rule.
type PackageAudits struct {
	Verdict string `json:"verdict"`
	// Locks is how many package locks were read and audited.
	Locks  int    `json:"locks"`
	Reason string `json:"reason,omitempty"`
	// Packages are the audited locks, one per vendored package.
	Packages []PackageAudit `json:"packages,omitempty"`
}

// PackageAudit is one vendored package's lock audit.
type PackageAudit struct {
	Name string `json:"name"`
	// Lock is its package-lock.json (relative to the distribution
	// directory) and LockSHA256 its digest.
	Lock       string `json:"lock"`
	LockSHA256 string `json:"lockSha256"`
	// Verdict is passed, failed or unavailable; Packages how many
	// installed packages the lock holds, Findings what was found.
	Verdict  string `json:"verdict"`
	Packages int    `json:"packages"`
	Findings int    `json:"findings"`
	Reason   string `json:"reason,omitempty"`
}

// Verdicts of PackageAudits.
const (
	AuditPassed        = "passed"
	AuditFailed        = "failed"
	AuditUnavailable   = "unavailable"
	AuditNotApplicable = "not-applicable"
)

// TestResult is one smoke test's outcome: passed, failed, or not-run
// with the reason (a target this host cannot run).
type TestResult struct {
	Name   string `json:"name"`
	Result string `json:"result"`
	Reason string `json:"reason,omitempty"`
}

// Results of a smoke test.
const (
	TestPassed = "passed"
	TestFailed = "failed"
	TestNotRun = "not-run"
)

// SignatureSummary is the signature verdict as release.json records it.
type SignatureSummary struct {
	Verdict string   `json:"verdict"`
	Missing []string `json:"missing"`
	Reason  string   `json:"reason"`
}

// Parse reads release.json strictly: the schema, no unknown
// fields, every required field, qualified.
func Parse(raw []byte) (*Metadata, error) {
	var rel Metadata
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rel); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the release.json object")
	}
	var missing []string
	for name, val := range map[string]string{
		"schema": rel.Schema, "distribution.id": rel.Distribution.ID, "distribution.version": rel.Distribution.Version,
		"distribution.command": rel.Distribution.Command, "lockSha256": rel.LockSHA256, "target": rel.Target,
		"created": rel.Created, "payload.inventorySha256": rel.Payload.InventorySHA256,
	} {
		if val == "" {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	switch {
	case rel.Schema != Schema:
		return nil, fmt.Errorf("schema is %q, expected %q", rel.Schema, Schema)
	case len(missing) > 0:
		return nil, fmt.Errorf("missing fields: %s", strings.Join(missing, ", "))
	case rel.Qualification != "qualified":
		return nil, fmt.Errorf("qualification is %q: only qualified releases install or verify", rel.Qualification)
	}
	if err := CheckPackageAudits(rel.PackageAudits); err != nil {
		return nil, err
	}
	return &rel, nil
}

// CheckPackageAudits is the rule of a package audit verdict: one of the
// four, a verdict about audits (passed, failed) only with at least one
// lock read, not-applicable only with none, and a reason for
// not-applicable and unavailable. A release that says passed for audits
// that never ran states something false; it is refused.
func CheckPackageAudits(a PackageAudits) error {
	switch a.Verdict {
	case AuditPassed, AuditFailed:
		if a.Locks < 1 {
			return fmt.Errorf("packageAudits.verdict is %q with %s read: a verdict about audits needs at least one audited lock", a.Verdict, canon.Count(a.Locks, "package lock"))
		}
	case AuditNotApplicable:
		if a.Locks != 0 {
			return fmt.Errorf("packageAudits.verdict is not-applicable but %s %s read", canon.Count(a.Locks, "package lock"), canon.Verb(a.Locks, "was", "were"))
		}
	case AuditUnavailable:
		if a.Locks < 1 {
			return fmt.Errorf("packageAudits.verdict is unavailable with no package lock read: with none it is not-applicable")
		}
	default:
		return fmt.Errorf("packageAudits.verdict is %q: expected passed, failed, unavailable or not-applicable", a.Verdict)
	}
	if a.Reason == "" && (a.Verdict == AuditNotApplicable || a.Verdict == AuditUnavailable) {
		return fmt.Errorf("packageAudits.verdict is %s without a reason", a.Verdict)
	}
	if len(a.Packages) != a.Locks {
		return fmt.Errorf("packageAudits names %s but says %d %s read", canon.Count(len(a.Packages), "package lock"), a.Locks, canon.Verb(a.Locks, "was", "were"))
	}
	for _, p := range a.Packages {
		if p.Name == "" || p.Lock == "" || len(p.LockSHA256) != 64 {
			return fmt.Errorf("packageAudits.packages: %q names no lock and its digest", p.Name)
		}
		switch p.Verdict {
		case AuditPassed, AuditFailed, AuditUnavailable:
		default:
			return fmt.Errorf("packageAudits.packages: %s has verdict %q: expected passed, failed or unavailable", p.Name, p.Verdict)
		}
	}
	return nil
}
