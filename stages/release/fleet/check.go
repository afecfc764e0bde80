package fleet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/oci"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/stages/verify"
)

// Check holds a target pulled from the repository from into dir (artifact a) to what a merge of w
// takes, and makes its release directory: its annotations name w's id
// and lock; its files are the target's release and nothing else
// (ArtifactOf's: <name>.tar.zst, its sidecar, <name>.build-info.json, and
// of the directory release.json, which must be the archive's, and what the
// archive does not hold: release.OutsideArchive);
// the archive's digest is its sidecar's and its name says w's id, version
// and target; the archive is extracted under the archive rules into
// <name>/ (the release directory is the archive's, byte for byte) beside
// the pushed files; the directory passes verify-release's checks (the
// release rules, its shipped binaries against the build-info); its
// release.json and payload/piship.lock are w's id, version, target and
// lock. A failure is INTEGRITY_FAILED naming the target and the check.
func Check(ctx context.Context, w Want, from oci.Ref, a oci.Target, dir string) (MergedTarget, error) {
	target := a.Annotation(oci.AnnotationTarget)
	name := w.ID + "-" + w.Version + "-" + target
	fail := func(format string, args ...any) (MergedTarget, error) {
		return MergedTarget{}, errcode.Errorf(errcode.IntegrityFailed, "release --merge: %s: "+format+": the registry's %s is not this checkout's release of %s; run `piship release DIST --target %s --to %s` on its runner from this commit again, then merge",
			append(append([]any{name}, args...), oci.TargetTag(w.Version, target), target, target, from)...)
	}
	if id := a.Annotation(oci.AnnotationID); id != w.ID {
		return fail("the artifact says it is a release of %q", id)
	}
	if l := a.Annotation(oci.AnnotationLockSHA256); l != w.LockSHA256 {
		return fail("it was built from a piship.lock with sha256 %s, and this checkout's is %s", l, w.LockSHA256)
	}
	arc, hasBuildInfo := "", false
	files := a.Files()
	for _, f := range files {
		if base, ok := archive.TrimExt(f); ok && base == name && arc == "" {
			arc = f
		}
	}
	for _, f := range files {
		switch rest, inDir := strings.CutPrefix(f, name+"/"); {
		case inDir && (release.OutsideArchive(rest) || rest == releasejson.Name), f == arc, arc != "" && f == arc+".sha256":
		case f == release.BuildInfoName(name):
			hasBuildInfo = true
		default:
			return fail("it holds %s, which is no part of the target's release beside its archive", f)
		}
	}
	if arc == "" || !slices.Contains(files, arc+".sha256") {
		return fail("it holds no archive %s with its sidecar", name+archive.V2.Ext())
	}
	arcPath, relDir := filepath.Join(dir, arc), filepath.Join(dir, name)

	n, why := release.ParseArchiveName(arc)
	if why != "" || n != (release.Identity{ID: w.ID, Version: w.Version, Target: target}) {
		return fail("its archive's name %s is not %s's (%s)", arc, name, why)
	}
	x, err := extract(ctx, arcPath, relDir)
	if err != nil {
		return fail("the archive: %w", err)
	}
	side, err := atomicfs.ReadRegular(arcPath+".sha256", 0)
	if err != nil {
		return MergedTarget{}, errcode.Newf(errcode.ConfigUnavailable, "release --merge: %v", err)
	}
	sum, err := release.ParseSidecar(side, arc)
	if err != nil {
		return fail("%w", err)
	}
	if sum != x.SHA256 {
		return fail("the archive's sha256 is %s, its sidecar says %s", x.SHA256, sum)
	}
	rep, err := verify.Release(ctx, relDir, verify.Options{})
	if err != nil {
		return MergedTarget{}, err
	}
	if err := rep.Err(); err != nil {
		return fail("the release: %w", err)
	}

	var rel releasejson.Metadata
	if err := canon.ReadJSON(filepath.Join(relDir, releasejson.Name), &rel); err != nil {
		return fail("%s: %v", releasejson.Name, err)
	}
	if rel.Distribution.ID != w.ID || rel.Distribution.Version != w.Version || rel.Target != target {
		return fail("its %s says %s %s for %s", releasejson.Name, rel.Distribution.ID, rel.Distribution.Version, rel.Target)
	}
	if rel.LockSHA256 != w.LockSHA256 {
		return fail("its %s records the piship.lock sha256 %s, and this checkout's is %s", releasejson.Name, rel.LockSHA256, w.LockSHA256)
	}
	if l, err := cache.HashFile(filepath.Join(relDir, "payload", "piship.lock")); err != nil || l != w.LockSHA256 {
		return fail("its payload's piship.lock (sha256 %s) is not this checkout's %s (%v)", l, w.LockSHA256, err)
	}
	if r := a.Annotation(oci.AnnotationRunner); r != rel.Runner {
		return fail("the artifact names the runner %q and its %s %q", r, releasejson.Name, rel.Runner)
	}

	fi, err := os.Stat(arcPath)
	if err != nil {
		return MergedTarget{}, err
	}
	mt := MergedTarget{Target: target, Name: name, Path: relDir, Archive: arcPath, SHA256: x.SHA256, ArchiveBytes: fi.Size(),
		Files: rel.Payload.Files, Runner: rel.Runner, Smoke: smoke(rel.Tests)}
	if hasBuildInfo {
		mt.BuildInfo = release.BuildInfoPath(dir, name)
		var bi release.BuildInfo
		if err := canon.ReadJSON(mt.BuildInfo, &bi); err != nil {
			return fail("%s: %v", filepath.Base(mt.BuildInfo), err)
		}
		mt.RuntimeCache = bi.RuntimeCache
	}
	return mt, nil
}

// extract extracts the archive at arc (hardened: stages/archive's rules)
// into relDir, where the pushed files beside the archive's stand: they
// are set aside first and put back among the extracted files after.
func extract(ctx context.Context, arc, relDir string) (*archive.Extracted, error) {
	beside := relDir + ".beside"
	if err := os.Rename(relDir, beside); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	f, err := atomicfs.OpenRegular(arc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	x, err := archive.Extract(ctx, f, relDir, archive.Limits{})
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(beside)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, e := range entries {
		if e.Name() == releasejson.Name {
			// The artifact carries release.json for its readers; the
			// archive's is the release's, and they must be one.
			pushed, err := os.ReadFile(filepath.Join(beside, e.Name()))
			if err != nil {
				return nil, err
			}
			if inside, err := os.ReadFile(filepath.Join(relDir, e.Name())); err != nil || !bytes.Equal(pushed, inside) {
				return nil, fmt.Errorf("the %s pushed beside the archive is not the archive's (%v)", releasejson.Name, err)
			}
			continue
		}
		if _, err := os.Lstat(filepath.Join(relDir, e.Name())); err == nil {
			return nil, fmt.Errorf("%s is both in the archive and beside it", e.Name())
		}
		if err := os.Rename(filepath.Join(beside, e.Name()), filepath.Join(relDir, e.Name())); err != nil {
			return nil, err
		}
	}
	return x, os.RemoveAll(beside)
}

// smoke says what release.json's tests say, as piship release prints it:
// passed, none, or not-run: <the first reason>.
func smoke(tests []releasejson.TestResult) string {
	if len(tests) == 0 {
		return "none"
	}
	for _, t := range tests {
		if t.Result != releasejson.TestPassed {
			if t.Reason != "" {
				return t.Result + ": " + t.Reason
			}
			return t.Result
		}
	}
	return releasejson.TestPassed
}

// String is a one-line account of a merged target.
func (t MergedTarget) String() string {
	runner := "no runner named"
	if t.Runner != "" {
		runner = "runner " + t.Runner
	}
	return fmt.Sprintf("%s: %s (archive %s, sha256 %s; smoke %s, %s)", t.Target, t.Path, filepath.Base(t.Archive), t.SHA256, t.Smoke, runner)
}
