package distribution

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"piship.dev/piship/stages/semver"
	"piship.dev/piship/stages/stage/errcode"
)

// VersionOptions are what a command says about the release version: the
// --version and --snapshot flags of piship release and piship build.
type VersionOptions struct {
	// Version is --version: the release version as given, a semantic
	// version (no leading v).
	Version string
	// Snapshot is --snapshot: a pre-release version made from the commit
	// at HEAD (SnapshotVersion), for a release to try, never to publish.
	Snapshot bool
	// OrSnapshot takes the snapshot version when nothing else names one
	// (no flag, no version written, no tag at HEAD) instead of refusing:
	// piship build, whose payload is tried, never published.
	OrSnapshot bool
}

// ResolvedVersion is a release version and where it came from.
type ResolvedVersion struct {
	Version string
	// From says where: "--version", "distribution.hcl", "git tag v1.2.3",
	// "--snapshot (commit 0123456789ab)".
	From string
	// Snapshot is true for a --snapshot version (semver.IsSnapshot).
	Snapshot bool
}

// ResolveVersion is the one rule that names a release's version, which
// every stage and command that needs it (release_inputs, dist_inputs, the
// release metadata, the SBOM, the smoke tests) applies, in this order:
//
//  1. o.Version (--version), a semantic version;
//  2. o.Snapshot (--snapshot): SnapshotVersion of the commit at HEAD;
//  3. distribution.hcl's version, when written;
//  4. the git tag at HEAD of the distribution's directory: vX.Y.Z or
//     X.Y.Z (GoReleaser's rule: one leading v is dropped, the rest must be
//     a semantic version); with several, the highest;
//  5. with o.OrSnapshot, the snapshot version of HEAD;
//  6. else CONFIG_INVALID, naming why git gave none (git is not installed,
//     the directory is in no repository, HEAD has no such tag) and the
//     ways out: a tag, --version, or --snapshot.
//
// distribution.hcl's version is recorded in piship.lock, which the
// payload carries and a release's identity rule holds to release.json: so
// --version or --snapshot with a different version written in
// distribution.hcl is refused (CONFIG_INVALID), not overridden.
func (d *Distribution) ResolveVersion(ctx context.Context, o VersionOptions) (ResolvedVersion, error) {
	if o.Version != "" && o.Snapshot {
		return ResolvedVersion{}, errcode.Newf(errcode.UsageInvalid, "--version and --snapshot exclude each other: give one")
	}
	var r ResolvedVersion
	switch {
	case o.Version != "":
		if !semverRE().MatchString(o.Version) {
			msg := fmt.Sprintf("--version %q is not a semantic version MAJOR.MINOR.PATCH[-pre][+build]", o.Version)
			if fix := fixVersion(o.Version); fix != "" {
				msg += fmt.Sprintf(": did you mean %q?", fix)
			}
			return ResolvedVersion{}, errcode.Newf(errcode.ConfigInvalid, "%s", msg)
		}
		r = ResolvedVersion{Version: o.Version, From: "--version"}
	case o.Snapshot && d.Version != "":
		return ResolvedVersion{}, conflict(d, "--snapshot", "a snapshot version")
	case o.Snapshot:
		v, sha, err := SnapshotVersion(ctx, d.Dir)
		if err != nil {
			return ResolvedVersion{}, err
		}
		r = ResolvedVersion{Version: v, From: fmt.Sprintf("--snapshot (commit %s)", sha), Snapshot: true}
	case d.Version != "":
		return ResolvedVersion{Version: d.Version, From: FileName}, nil
	default:
		v, tag, err := TagVersion(ctx, d.Dir)
		if err != nil && o.OrSnapshot {
			if sv, sha, serr := SnapshotVersion(ctx, d.Dir); serr == nil {
				return ResolvedVersion{Version: sv, From: fmt.Sprintf("snapshot of commit %s (no version tag at HEAD)", sha), Snapshot: true}, nil
			}
		}
		if err != nil {
			return ResolvedVersion{}, errcode.Newf(errcode.ConfigInvalid,
				"%s writes no version and %v: tag the commit (git tag v1.0.0), or give the version with --version 1.0.0, or make a snapshot release to try with --snapshot (never published)",
				d.File, err)
		}
		return ResolvedVersion{Version: v, From: "git tag " + tag}, nil
	}
	if d.Version != "" && d.Version != r.Version {
		return ResolvedVersion{}, conflict(d, r.From, r.Version)
	}
	return r, nil
}

// conflict refuses a version from a flag that differs from the one
// distribution.hcl writes.
func conflict(d *Distribution, from, version string) error {
	return errcode.Newf(errcode.ConfigInvalid,
		"%s: version %q is written, and %s asks for %s: piship.lock records the written version, so a release can carry no other; remove version from %s and run piship lock to name each release by its git tag, --version or --snapshot",
		d.Pos("version"), d.Version, from, version, FileName)
}

// TagVersion is the version of the git tag at HEAD of dir's repository
// (git tag --points-at HEAD, run in dir): of the tags vX.Y.Z or X.Y.Z
// there, the highest, as X.Y.Z, and the tag as written. The error says why
// there is none, in words that follow "and ": git is not installed, dir
// is in no repository, HEAD has no tag, or its tags are no versions.
func TagVersion(ctx context.Context, dir string) (version, tag string, err error) {
	out, err := git(ctx, dir, "tag", "--points-at", "HEAD")
	if err != nil {
		return "", "", err
	}
	var best semver.Version
	var others []string
	for _, t := range strings.Fields(out) {
		s := strings.TrimPrefix(t, "v")
		v, perr := semver.Parse(s)
		if perr != nil {
			others = append(others, t)
			continue
		}
		if tag == "" || semver.Compare(v, best) > 0 {
			best, version, tag = v, s, t
		}
	}
	switch {
	case tag != "":
		return version, tag, nil
	case len(others) > 0:
		return "", "", fmt.Errorf("the tags at HEAD of %s (%s) are no versions vX.Y.Z", dir, strings.Join(others, ", "))
	}
	sha, err := git(ctx, dir, "rev-parse", "--short=12", "HEAD")
	if err != nil {
		return "", "", err
	}
	return "", "", fmt.Errorf("HEAD (commit %s) of the git repository at %s has no version tag", strings.TrimSpace(sha), dir)
}

// SnapshotVersion is the snapshot version of the commit at HEAD of dir's
// repository and that commit's 12-digit short hash:
// <next>-snapshot.g<sha>, where <next> is the newest version tag reachable
// from HEAD (git describe --tags --abbrev=0) with its patch raised by one
// (v1.2.3 -> 1.2.4; a pre-release tag keeps its MAJOR.MINOR.PATCH), or
// 0.0.0 without one. It is a valid semantic version whose pre-release
// starts with "snapshot" (semver.IsSnapshot), ordered after the tag it
// follows and before the next release; "g" keeps the hash an
// alphanumeric identifier (a hash of digits alone with a leading zero
// is no valid pre-release). Uncommitted changes do not show in it.
func SnapshotVersion(ctx context.Context, dir string) (version, sha string, err error) {
	out, err := git(ctx, dir, "rev-parse", "--short=12", "HEAD")
	if err != nil {
		return "", "", errcode.Newf(errcode.ConfigInvalid, "--snapshot makes the version from the commit at HEAD, and %v: commit the distribution in a git repository, or give the version with --version", err)
	}
	sha = strings.TrimSpace(out)
	next := semver.Version{}
	if tag, err := git(ctx, dir, "describe", "--tags", "--abbrev=0", "HEAD"); err == nil {
		if v, perr := semver.Parse(strings.TrimPrefix(strings.TrimSpace(tag), "v")); perr == nil {
			next = semver.Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch}
			if len(v.Pre) == 0 {
				next.Patch++
			}
		}
	}
	next.Pre = []string{semver.SnapshotPre, "g" + sha}
	return next.String(), sha, nil
}

// git runs git with args in dir and returns its stdout, or an error that
// says, in words following "and ", why git gave nothing.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	// Its messages are read below: in the C locale, never a translation;
	// and it never waits for a password.
	cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.String(), nil
	}
	if errors.Is(err, exec.ErrNotFound) {
		return "", fmt.Errorf("git is not installed (no git on PATH) to read the tag of %s", dir)
	}
	msg := strings.TrimSpace(stderr.String())
	if strings.Contains(msg, "not a git repository") {
		return "", fmt.Errorf("%s is in no git repository", dir)
	}
	if strings.Contains(msg, "ambiguous argument 'HEAD'") || strings.Contains(msg, "unknown revision") {
		return "", fmt.Errorf("the git repository at %s has no commit yet", dir)
	}
	if msg == "" {
		msg = err.Error()
	}
	return "", fmt.Errorf("git %s in %s failed: %s", strings.Join(args, " "), dir, msg)
}
