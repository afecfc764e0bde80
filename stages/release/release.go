// Package release holds the rules of a release directory that the stages
// writing one, install, verify-release and doctor all follow: the names of
// its files, release.json's schema and document, which files checksums.txt
// covers, the digests of the piship binaries shipped beside install.sh, the
// unsigned <name>.build-info.json beside the release (buildinfo.go), the
// install.sh and install.ps1 beside the archives (bootstrap.go), and
// what a valid release is (rules.go). It is a domain package: it never
// imports the kind layer.
//
// # What a valid release is
//
// This table is the one statement of it. Check applies every row, in this
// order, to data: the digest of every file (computed by the consumer while
// it extracted, copied or walked them, so install reads no payload file a
// second time but the payload's package locks) and the bytes of the small
// metadata files (checked against their digests). Each rule is a verify-release check of the same
// name, and install's and doctor's errors name it in parentheses
// ("INTEGRITY_FAILED: hello 1.2.0: release refused (lock-entry): ...").
// Every refusal is INTEGRITY_FAILED.
//
//	rule                     what must hold
//	required-files           a release holds checksums.txt, release.json, sbom.spdx.json,
//	                         licenses/THIRD_PARTY_NOTICES.txt, licenses/index.json,
//	                         vulnerabilities.json, payload/piship.lock,
//	                         payload/metadata/inventory.json, payload/metadata/target.json
//	                         (a payload directory: the last three)
//	checksums                checksums.txt is sorted `<sha256>  <path>` lines, one per file
//	                         it covers (all but itself, payload/ but its inventory, and the
//	                         files outside the archive: the shipped piship binaries and
//	                         notes.md), no other, each digest right
//	release-json             release.json is piship-release/v1, no unknown field, every
//	                         required field, qualification "qualified"; packageAudits
//	                         says passed or failed only with a lock read, not-applicable
//	                         only with none (CheckPackageAudits)
//	inventory-path           every inventory entry is a slash path inside the payload (no
//	                         "..", ".", empty segment, "/" prefix, "\", ":"), with a sha256
//	payload-inventory        the payload's files are exactly the inventory's, each digest right
//	lock                     payload/piship.lock parses as piship-lock/v1, strictly
//	lock-entry               the lock's command is a file name; its runtime entry a slash
//	                         path inside the payload, listed in the inventory
//	target                   payload/metadata/target.json names a platform and an arch
//	release-matches-payload  release.json puts the payload at payload/ and binds the
//	                         inventory's and the lock's digests and the file count
//	sbom-matches-payload     release.json names sbom.spdx.json and binds its digest and package
//	                         count; it is an SPDX document with a described root listing
//	                         exactly the packages the payload's package locks install
//	                         (payload/package-lock.json, payload/pi-packages/*/package-lock.json;
//	                         an optional package may be left out)
//	notices-cover-sbom       release.json names licenses/THIRD_PARTY_NOTICES.txt and
//	                         licenses/index.json; the index covers every SBOM package, the
//	                         text names each indexed package (name@version opening a line)
//	vulnerabilities          release.json names vulnerabilities.json and agrees with it
//	                         (failOn, verdict, allowUnavailable, counts); its failOn and
//	                         allowUnavailable are the lock's audit policy (failOn high without
//	                         one); its verdict, counts and each finding's fails are recomputed
//	                         from the findings and failOn (vulnreport.Report.Disagreements), a finding
//	                         says allowed only where the lock's allow entries name it; and the
//	                         verdict lets it ship: passed, or unavailable when allowed
//	tests                    every test release.json records passed, or not-run with the
//	                         reason (a target its build host could not run)
//	signatures               the signature verdict is not failed
//	identity                 the archive's name (<id>-<version>-<target>.tar.zst, or what the
//	                         caller passes), release.json, the lock (id, version, command)
//	                         and target.json agree
//	signed-entry             (an update) the lock's digest is the lockSha256 of the signed
//	                         TUF target the update chose
//
// Who applies what:
//
//	install         every row, to the digests the extraction (or the copy) computed;
//	                before: archive.Extract's rules (stages/archive), the archive
//	                digest against --sha256 and the sidecar (ParseSidecar), the
//	                archive name (ParseArchiveName); after: the lock's trust of
//	                --expect-key and the host target
//	update          every row, as install, with the signed TUF target's lockSha256
//	                (signed-entry)
//	verify-release  every row, to the digests its extraction computed (or, for a
//	                directory, Scan); besides, the shipped binaries against build-info
//	repo add        the release-json row (releasejson.Parse), to the release.json
//	                in each archive it publishes (stages/tuf.ReleaseOf)
//	doctor          every row, to the installed version's directory as it stands
//	                (Scan), with the identity the receipt records; besides, the
//	                lock's digest against the receipt
//
// Until this table, each consumer had its own copy and they disagreed:
// install accepted an archive without checksums.txt, an SBOM or notices, an
// unqualified release.json, unknown release.json fields and a lock whose
// command differed from release.json's; verify-release accepted a lock entry
// ../../x, an absolute or missing entry and a command ../../bin/sh, and
// compared neither the archive's name nor the command; install accepted a
// sidecar naming another file; doctor checked the payload only. Later,
// the SBOM, notices and verdict rows were still verify-release's alone:
// install accepted a wrong SBOM digest, an SBOM of {} and empty notices,
// and both accepted a vulnerabilities.json whose verdict its own findings
// contradict and a release.json naming its SBOM ../../../../etc/passwd. Each row now
// holds for all three, decided the strict way; testdata/hostile is the corpus
// of one archive per rule that both install and verify-release must refuse.
package release

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/release/releasejson"
)

// release.json's document (its schema, name, type and strict reader,
// releasejson.Parse) is stages/release/releasejson, a leaf below
// stages/distribution, so that stages/tuf (piship repo add) reads it by the
// same rules without importing the build's packages.

// Release file names, relative to the release directory (slash paths).
const (
	SBOMName            = "sbom.spdx.json"
	NoticesName         = "licenses/THIRD_PARTY_NOTICES.txt"
	NoticesIndexName    = "licenses/index.json"
	VulnerabilitiesName = "vulnerabilities.json"
	InstallScriptName   = "install.sh"
	ChecksumsName       = "checksums.txt"
	// NotesName is the release notes piship release writes beside
	// release.json when the distribution is in a git repository
	// (stages/release/releasenotes). Like the shipped binaries it stays
	// outside the archive and checksums.txt (OutsideArchive): the archive's
	// bytes depend on the distribution alone, not on how much history a
	// clone holds; piship repo add publishes it as a TUF target of its own.
	NotesName = releasejson.NotesName
)

// OutsideArchive reports whether a release-relative slash path is a file a
// release directory holds beside the archive's files, not among them: the
// shipped piship binaries and notes.md. The archive does not hold them,
// checksums.txt does not cover them, Scan does not see them and install
// does not install them.
func OutsideArchive(p string) bool {
	return p == NotesName || IsShippedTool(p)
}

// ChecksumPaths lists the release files checksums.txt covers: all but
// checksums.txt itself, the payload (its inventory stands for it) and the
// files outside the archive (the shipped piship binaries, notes.md).
func ChecksumPaths(releaseDir string) ([]string, error) {
	files, err := payload.Walk(releaseDir)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range files {
		switch {
		case f.Path == ChecksumsName:
		case OutsideArchive(f.Path): // the binaries beside install.sh (build-info.json has their digests), notes.md
		case strings.HasPrefix(f.Path, "payload/") && f.Path != "payload/"+payload.InventoryName:
		default:
			paths = append(paths, f.Path)
		}
	}
	sort.Strings(paths)
	return paths, nil
}

// ToolDigest describes a shipped binary in build-info.json (and, by its
// cty tags, in release_publish's tools output).
type ToolDigest struct {
	Name   string `json:"name" cty:"name"`
	SHA256 string `json:"sha256" cty:"sha256"`
	Bytes  int64  `json:"bytes" cty:"bytes"`
}

// shippedToolNames are the names the piship binaries of a release
// directory have: a release for a win32 target carries piship.exe and
// piship-launch.exe, any other piship and piship-launch, wherever it was
// built or is verified (release_publish ships the installers a
// distribution pins for a foreign target).
var shippedToolNames = []string{InstallerName("linux-x64"), LauncherName("linux-x64"), InstallerName("win32-x64"), LauncherName("win32-x64")}

// HashTools describes the shipped binaries present in releaseDir.
func HashTools(releaseDir string) ([]ToolDigest, error) {
	var out []ToolDigest
	for _, name := range shippedToolNames {
		p := filepath.Join(releaseDir, name)
		fi, err := os.Stat(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sum, err := cache.HashFile(p) // streamed: the binaries are tens of MB
		if err != nil {
			return nil, err
		}
		out = append(out, ToolDigest{Name: name, SHA256: sum, Bytes: fi.Size()})
	}
	return out, nil
}

// IsShippedTool reports whether a release-relative slash path is one of
// the shipped binaries.
func IsShippedTool(p string) bool {
	return slices.Contains(shippedToolNames, p)
}

// SelfBinaryEnv names, in the run's environment (inv.Getenv), the path of
// the piship binary releases ship: the running piship command, as its
// main passes it to the run (not tests that run the CLI in-process, whose
// executable is a test binary). Empty ships nothing.
const SelfBinaryEnv = "PISHIP_SELF_BINARY"
