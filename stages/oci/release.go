package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// How piship keeps releases in a registry, as Homebrew keeps bottles on
// GHCR: one artifact per target of a version (its archive, the archive's
// sidecars, release.json, whatever else the publisher adds), tagged
// <version>-<target>, and an image index over a version's targets tagged
// <version>. Layers carry their file name in the standard title annotation,
// so `oras pull` writes the same files; their media types are the standard
// ones registries accept (BuildKit's users met registries that refuse
// unusual layer types), only the artifact type is piship's.
const (
	ReleaseArtifactType = "application/vnd.piship.release.v1"
	// The manifest's annotations (and the index entry's).
	AnnotationID         = "dev.piship.release.id"
	AnnotationVersion    = ocispec.AnnotationVersion // org.opencontainers.image.version
	AnnotationTarget     = "dev.piship.release.target"
	AnnotationLockSHA256 = "dev.piship.release.lockSha256"
	// AnnotationRunner names the CI runner that built and smoke-tested
	// the target (piship release --target --runner).
	AnnotationRunner = "dev.piship.release.runner"
	// AnnotationFileMode is a layer's: "0755" for an executable file
	// (a release's bin/ entries, its install.sh), so a pull writes it
	// executable again; absent for 0644.
	AnnotationFileMode = "dev.piship.file.mode"
)

// VersionTag is the tag of a version's index; TargetTag that of one
// target's artifact. A tag cannot hold "+", so semver build metadata
// (1.0.0+build.5) is written with "_" there.
func VersionTag(version string) string { return strings.ReplaceAll(version, "+", "_") }

// TargetTag is the tag of a version's artifact for target.
func TargetTag(version, target string) string { return VersionTag(version) + "-" + target }

// MediaTypeOf is the layer media type piship gives a release file.
func MediaTypeOf(name string) string {
	switch {
	case strings.HasSuffix(name, ".tar.zst"):
		return ocispec.MediaTypeImageLayerZstd
	case strings.HasSuffix(name, ".tar.gz"):
		return ocispec.MediaTypeImageLayerGzip
	case strings.HasSuffix(name, ".json"):
		return "application/json"
	case strings.HasSuffix(name, ".sha256"), strings.HasSuffix(name, ".txt"), strings.HasSuffix(name, ".md"), strings.HasSuffix(name, "SHA256SUMS"):
		return "text/plain"
	}
	return "application/octet-stream"
}

// File is one file of a release artifact: Name is its slash-separated
// relative name in the artifact (the layer's title), Path where it is,
// Exec whether it is executable (AnnotationFileMode).
type File struct {
	Name string
	Path string
	Exec bool
}

// CheckName refuses a name a pull could not write safely under its
// directory: absolute, with "..", empty or unclean.
func CheckName(name string) error {
	if name == "" || path.IsAbs(name) || strings.Contains(name, "\\") || path.Clean(name) != name || name == "." || strings.HasPrefix(name, "../") || name == ".." {
		return fmt.Errorf("%q is not a clean relative file name", name)
	}
	return nil
}

// PushTarget pushes files (in that order, as layers) as the artifact of
// one target, with annotations (AnnotationID, AnnotationVersion,
// AnnotationTarget, AnnotationLockSHA256 and any other), tagged
// TargetTag(version, target). Blobs go up in parallel, the manifest last,
// so a tag never names an artifact with a missing blob.
func (r *Repo) PushTarget(ctx context.Context, files []File, annotations map[string]string) (ocispec.Descriptor, error) {
	version, target := annotations[AnnotationVersion], annotations[AnnotationTarget]
	if version == "" || target == "" {
		return ocispec.Descriptor{}, fmt.Errorf("oci: a release artifact needs the %s and %s annotations", AnnotationVersion, AnnotationTarget)
	}
	blobs := make([]Blob, 0, len(files))
	layers := make([]ocispec.Descriptor, 0, len(files))
	seen := map[string]bool{}
	for _, f := range files {
		if err := CheckName(f.Name); err != nil {
			return ocispec.Descriptor{}, err
		}
		if seen[f.Name] {
			return ocispec.Descriptor{}, fmt.Errorf("oci: %s is given twice", f.Name)
		}
		seen[f.Name] = true
		b, err := FileBlob(f.Path, MediaTypeOf(f.Name))
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		b.Desc.Annotations = map[string]string{ocispec.AnnotationTitle: f.Name}
		if f.Exec {
			b.Desc.Annotations[AnnotationFileMode] = "0755"
		}
		blobs = append(blobs, b)
		layers = append(layers, b.Desc)
	}
	if _, err := r.PushBlobs(ctx, blobs, 8); err != nil {
		return ocispec.Descriptor{}, err
	}
	desc, err := r.PushManifest(ctx, Manifest{ArtifactType: ReleaseArtifactType, Layers: layers, Annotations: annotations}, TargetTag(version, target))
	if err != nil {
		return desc, err
	}
	desc.ArtifactType = ReleaseArtifactType
	desc.Annotations = annotations
	return desc, nil
}

// Target is a release artifact as a pull found it.
type Target struct {
	Desc     ocispec.Descriptor
	Manifest ocispec.Manifest
}

// Annotation returns one of the manifest's annotations.
func (t Target) Annotation(k string) string { return t.Manifest.Annotations[k] }

// Files returns the layers' names, in order.
func (t Target) Files() []string {
	var names []string
	for _, l := range t.Manifest.Layers {
		names = append(names, l.Annotations[ocispec.AnnotationTitle])
	}
	return names
}

// FetchTarget reads the artifact of version's target (a not-found error
// when the target was never pushed: IsNotFound).
func (r *Repo) FetchTarget(ctx context.Context, version, target string) (Target, error) {
	m, desc, err := r.FetchManifest(ctx, TargetTag(version, target))
	if err != nil {
		return Target{}, err
	}
	if m.ArtifactType != ReleaseArtifactType {
		return Target{}, fmt.Errorf("%s:%s is a %q artifact, not a piship release", r.Ref, TargetTag(version, target), m.ArtifactType)
	}
	if m.Annotations[AnnotationVersion] != version || m.Annotations[AnnotationTarget] != target {
		return Target{}, fmt.Errorf("%s:%s says it is %s for %s: the tag was moved to another release's artifact", r.Ref, TargetTag(version, target), m.Annotations[AnnotationVersion], m.Annotations[AnnotationTarget])
	}
	for _, l := range m.Layers {
		if err := CheckName(l.Annotations[ocispec.AnnotationTitle]); err != nil {
			return Target{}, fmt.Errorf("%s:%s: a layer's title: %v", r.Ref, TargetTag(version, target), err)
		}
	}
	return Target{Desc: desc, Manifest: m}, nil
}

// PullTarget writes every file of t under dir (creating directories),
// each checked against its digest as it streams, executable when its
// layer says 0755 (AnnotationFileMode); names are checked by
// FetchTarget. It returns the paths written, in layer order.
func (r *Repo) PullTarget(ctx context.Context, t Target, dir string) ([]string, error) {
	var paths []string
	for _, l := range t.Manifest.Layers {
		name := l.Annotations[ocispec.AnnotationTitle]
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return paths, err
		}
		perm := os.FileMode(0o644)
		if l.Annotations[AnnotationFileMode] == "0755" {
			perm = 0o755
		}
		if err := r.FetchTo(ctx, l, p, perm); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// PushIndex pushes the image index over a version's target artifacts
// (sorted by target, so the same targets give the same index) and tags it
// VersionTag(version).
func (r *Repo) PushIndex(ctx context.Context, version string, targets []ocispec.Descriptor, annotations map[string]string) (ocispec.Descriptor, error) {
	ts := slices.Clone(targets)
	slices.SortFunc(ts, func(a, b ocispec.Descriptor) int {
		return strings.Compare(a.Annotations[AnnotationTarget], b.Annotations[AnnotationTarget])
	})
	for i := range ts {
		ts[i].MediaType = ocispec.MediaTypeImageManifest
		ts[i].ArtifactType = ReleaseArtifactType
	}
	data, err := json.Marshal(ocispec.Index{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageIndex,
		ArtifactType: ReleaseArtifactType,
		Manifests:    ts,
		Annotations:  annotations,
	})
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return r.PushManifestBytes(ctx, ocispec.MediaTypeImageIndex, data, VersionTag(version))
}

// BlobURL is the distribution API address of a blob of this repository
// (GET it, with the registry's token step when it asks for one).
func (r *Repo) BlobURL(digest string) string {
	scheme := "https"
	if loopback(r.Ref.Host) {
		scheme = "http"
	}
	return scheme + "://" + r.Ref.Host + "/v2/" + r.Ref.Repository + "/blobs/" + digest
}
