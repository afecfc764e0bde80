package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/oci"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/stages/verify"
)

// Check holds a target pulled into dir (artifact a) to what a merge of w
// takes: its annotations name w's id and lock; its files are the target's
// release and nothing else (<name>.tar.zst, its sidecar, <name>.build-info.json,
// <name>/...); the archive passes verify-release's checks (its digest
// against the sidecar, the hardened extraction, the release rules); the
// release directory passes them too (with its shipped binaries against
// the build-info) and is the archive's (its checksums.txt the archive's,
// which covers release.json and the payload's inventory); release.json
// and the payload's piship.lock are w's id, version, target and lock.
// A failure is INTEGRITY_FAILED naming the target and the check.
func Check(ctx context.Context, w Want, a oci.Target, dir string) (MergedTarget, error) {
	target := a.Annotation(oci.AnnotationTarget)
	name := w.ID + "-" + w.Version + "-" + target
	fail := func(format string, args ...any) (MergedTarget, error) {
		return MergedTarget{}, errcode.Newf(errcode.IntegrityFailed, "release --merge: %s: "+format+": the registry's %s is not this checkout's release of %s; run `piship release DIST --target %s --to REGISTRY` on its runner from this commit again, then merge",
			append(append([]any{name}, args...), oci.TargetTag(w.Version, target), target, target)...)
	}
	if id := a.Annotation(oci.AnnotationID); id != w.ID {
		return fail("the artifact says it is a release of %q", id)
	}
	if l := a.Annotation(oci.AnnotationLockSHA256); l != w.LockSHA256 {
		return fail("it was built from a piship.lock with sha256 %s, and this checkout's is %s", l, w.LockSHA256)
	}
	arc, hasBuildInfo := "", false
	for _, f := range a.Files() {
		switch {
		case strings.HasPrefix(f, name+"/"):
		case f == name+buildInfoSuffix:
			hasBuildInfo = true
		case strings.HasSuffix(f, ".sha256"):
		default:
			if base, ok := archive.TrimExt(f); ok && base == name && arc == "" {
				arc = f
				continue
			}
			return fail("it holds %s, which is no part of the target's release", f)
		}
	}
	if arc == "" || !fileExists(filepath.Join(dir, arc+".sha256")) {
		return fail("it holds no archive %s with its sidecar", name+archive.V2.Ext())
	}
	for _, f := range a.Files() {
		if strings.HasSuffix(f, ".sha256") && !strings.HasPrefix(f, name+"/") && f != arc+".sha256" {
			return fail("it holds %s, which is no part of the target's release", f)
		}
	}
	arcPath, relDir := filepath.Join(dir, arc), filepath.Join(dir, name)

	rep, err := verify.Release(ctx, arcPath, verify.Options{})
	if err != nil {
		return MergedTarget{}, err
	}
	if err := rep.Err(); err != nil {
		return fail("the archive: %v", err)
	}
	drep, err := verify.Release(ctx, relDir, verify.Options{})
	if err != nil {
		return MergedTarget{}, err
	}
	if err := drep.Err(); err != nil {
		return fail("the release directory: %v", err)
	}
	sum, err := cache.HashFile(filepath.Join(relDir, release.ChecksumsName))
	if err != nil || sum != rep.Files[release.ChecksumsName] {
		return fail("the release directory's %s is not the archive's (%v)", release.ChecksumsName, err)
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
	mt := MergedTarget{Target: target, Name: name, Path: relDir, Archive: arcPath, SHA256: rep.SHA256, ArchiveBytes: fi.Size(),
		Files: rel.Payload.Files, Runner: rel.Runner, Smoke: smoke(rel.Tests)}
	if hasBuildInfo {
		mt.BuildInfo = filepath.Join(dir, name+buildInfoSuffix)
		var bi release.BuildInfo
		if err := canon.ReadJSON(mt.BuildInfo, &bi); err != nil {
			return fail("%s: %v", name+buildInfoSuffix, err)
		}
		mt.RuntimeCache = bi.RuntimeCache
	}
	return mt, nil
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
