package fleet

import (
	"fmt"
	"os"
	"path/filepath"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/oci"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/stage/errcode"
)

// Artifact is one target's release as an OCI artifact: the one rule for
// what a split release's runner pushes (Push) and what piship publish
// pushes (Publish), so a merge and an end user's `oras pull` read the same
// thing.
type Artifact struct {
	// Files are the layers, named as they stand in the releases
	// directory: <name>.tar.zst (or .tar.gz), its sidecar,
	// <name>.build-info.json when the release wrote one,
	// <name>/release.json, and the files the release directory holds beside
	// the archive's (release.OutsideArchive: notes.md, the shipped piship
	// binaries, executables marked so a pull restores them). The rest of
	// the release directory is the archive's.
	Files []oci.File
	// Annotations are the id, version, target, lock digest and runner
	// release.json records.
	Annotations map[string]string
	// Release is that release.json.
	Release releasejson.Metadata
}

// ArtifactOf describes the release published at dir
// (<releases>/<id>-<version>-<target>) with its archive arc. The archive's
// name and release.json must name the same release.
func ArtifactOf(dir, arc string) (*Artifact, error) {
	name := filepath.Base(dir)
	raw, err := atomicfs.ReadRegular(filepath.Join(dir, releasejson.Name), 1<<20)
	if err != nil {
		return nil, errcode.Newf(errcode.ConfigUnavailable, "cannot read the release %s: %v", name, err)
	}
	rel, err := releasejson.Parse(raw)
	if err != nil {
		return nil, errcode.Newf(errcode.ConfigInvalid, "%s: %v", filepath.Join(dir, releasejson.Name), err)
	}
	n, why := release.ParseArchiveName(filepath.Base(arc))
	if why != "" || n != (release.Identity{ID: rel.Distribution.ID, Version: rel.Distribution.Version, Target: rel.Target}) || n.ID+"-"+n.Version+"-"+n.Target != name {
		return nil, errcode.Newf(errcode.ConfigInvalid, "%s is release %s %s for %s, which is not the archive %s beside it (%s): release again",
			filepath.Join(dir, releasejson.Name), rel.Distribution.ID, rel.Distribution.Version, rel.Target, filepath.Base(arc), why)
	}
	a := &Artifact{Release: *rel, Files: []oci.File{
		{Name: filepath.Base(arc), Path: arc},
		{Name: filepath.Base(arc) + ".sha256", Path: arc + ".sha256"},
	}}
	if bi := release.BuildInfoPath(filepath.Dir(dir), name); fileExists(bi) {
		a.Files = append(a.Files, oci.File{Name: filepath.Base(bi), Path: bi})
	}
	a.Files = append(a.Files, oci.File{Name: name + "/" + releasejson.Name, Path: filepath.Join(dir, releasejson.Name)})
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, errcode.Newf(errcode.ConfigUnavailable, "cannot read the release directory %s: %v", dir, err)
	}
	for _, e := range entries {
		if !release.OutsideArchive(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			return nil, errcode.Newf(errcode.ConfigUnavailable, "%s in the release directory %s is not a regular file (%v): a release holds only files and directories", e.Name(), dir, err)
		}
		a.Files = append(a.Files, oci.File{Name: name + "/" + e.Name(), Path: filepath.Join(dir, e.Name()), Exec: info.Mode().Perm()&0o100 != 0})
	}
	for _, f := range a.Files[:2] {
		if !fileExists(f.Path) {
			return nil, errcode.Newf(errcode.ConfigUnavailable, "%s is missing: piship release writes it beside the release directory %s", f.Path, dir)
		}
	}
	a.Annotations = map[string]string{
		oci.AnnotationID: rel.Distribution.ID, oci.AnnotationVersion: rel.Distribution.Version, oci.AnnotationTarget: rel.Target,
		oci.AnnotationLockSHA256: rel.LockSHA256,
	}
	if rel.Runner != "" {
		a.Annotations[oci.AnnotationRunner] = rel.Runner
	}
	return a, nil
}

// String names the artifact's release: <id>-<version>-<target>.
func (a *Artifact) String() string {
	return fmt.Sprintf("%s-%s-%s", a.Release.Distribution.ID, a.Release.Distribution.Version, a.Release.Target)
}
