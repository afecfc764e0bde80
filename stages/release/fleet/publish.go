package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/oci"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/stages/tuf"
)

// Published is a release set as Publish left it in the registry, as the
// registry answers it (each tag read back after the push).
type Published struct {
	ID, Version string
	// IndexTag and IndexDigest name the image index over the targets.
	IndexTag, IndexDigest string
	Targets               []PublishedTarget
}

// PublishedTarget is one target's artifact.
type PublishedTarget struct {
	Target, Tag, Digest, LockSHA256 string
	// ArchiveBlob is the distribution API URL of the archive's blob (what
	// repo add --registry names in the TUF target).
	ArchiveBlob string
	// Layers are the artifact's files in order: name, digest, size.
	Layers []PublishedFile
}

// PublishedFile is one layer of a published artifact.
type PublishedFile struct {
	Name, Digest string
	Bytes        int64
}

// Publish pushes every target of set (verified by the caller: verify.Set)
// as its artifact (ArtifactOf), each read back, then the image index over
// them tagged with the version, as Homebrew keeps its bottles on GHCR.
func Publish(ctx context.Context, repo *oci.Repo, set *release.Sums) (*Published, error) {
	p := &Published{ID: set.ID, Version: set.Version}
	pushErr := func(what string, err error) error {
		var ie *oci.IntegrityError
		if errors.Is(err, context.Canceled) || errors.As(err, &ie) {
			return err
		}
		done := ""
		if len(p.Targets) > 0 {
			done = fmt.Sprintf("; the %s pushed before stay (publishing again is harmless: the same bytes give the same digests)", canon.Count(len(p.Targets), "target"))
		}
		return errcode.Newf(errcode.RegistryUnavailable, "pushing %s to %s: %v%s", what, repo.Ref, err, done)
	}
	descs := make([]ocispec.Descriptor, 0, len(set.Entries))
	for _, en := range set.Entries {
		name := en.Name.ID + "-" + en.Name.Version + "-" + en.Name.Target
		a, err := ArtifactOf(filepath.Join(set.Dir(), name), filepath.Join(set.Dir(), en.Archive))
		if err != nil {
			return p, fmt.Errorf("%w: nothing more was pushed", err)
		}
		if a.Release.Distribution.ID != set.ID || a.Release.Distribution.Version != set.Version {
			return p, errcode.Newf(errcode.ConfigInvalid, "%s is not of the set %s (%s %s): nothing more was pushed", a, set.Path, set.ID, set.Version)
		}
		desc, err := repo.PushTarget(ctx, a.Files, a.Annotations)
		if err != nil {
			return p, pushErr(en.Archive, err)
		}
		got, err := repo.FetchTarget(ctx, set.Version, en.Name.Target)
		if err != nil {
			return p, pushErr(en.Archive, err)
		}
		tag := oci.TargetTag(set.Version, en.Name.Target)
		if got.Desc.Digest != desc.Digest {
			return p, errcode.Newf(errcode.RegistryUnavailable, "%s answers %s for %s after piship pushed %s: another publish of the same version ran at once; publish again", repo.Ref, got.Desc.Digest, tag, desc.Digest)
		}
		t := PublishedTarget{Target: en.Name.Target, Tag: tag, Digest: desc.Digest.String(), LockSHA256: a.Release.LockSHA256,
			ArchiveBlob: repo.BlobURL(got.Manifest.Layers[0].Digest.String())}
		for i, l := range got.Manifest.Layers {
			t.Layers = append(t.Layers, PublishedFile{Name: got.Files()[i], Digest: l.Digest.String(), Bytes: l.Size})
		}
		p.Targets = append(p.Targets, t)
		descs = append(descs, desc)
	}
	ix, err := repo.PushIndex(ctx, set.Version, descs, map[string]string{oci.AnnotationID: set.ID, oci.AnnotationVersion: set.Version})
	if err != nil {
		return p, pushErr("the index of "+set.Version, err)
	}
	p.IndexTag, p.IndexDigest = oci.VersionTag(set.Version), ix.Digest.String()
	return p, nil
}

// ServedFrom names, in each release, the blob of its archive in repo
// (repo add --registry), after checking the registry holds it with the
// archive's size: a TUF target never names a blob that is not there.
func ServedFrom(ctx context.Context, repo *oci.Repo, rels []tuf.Release) error {
	for i, rel := range rels {
		sum, err := cache.HashFile(rel.Archive)
		if err != nil {
			return errcode.Newf(errcode.ConfigInvalid, "cannot read the release archive %s: %v", rel.Archive, err)
		}
		fi, err := os.Stat(rel.Archive)
		if err != nil {
			return errcode.Newf(errcode.ConfigInvalid, "cannot read the release archive %s: %v", rel.Archive, err)
		}
		has, err := repo.HasBlob(ctx, "sha256:"+sum, fi.Size())
		if err != nil {
			return errcode.Newf(errcode.RegistryUnavailable, "%s: asking for the blob of %s: %v: nothing was published", repo.Ref, filepath.Base(rel.Archive), err)
		}
		if !has {
			return errcode.Newf(errcode.ConfigInvalid, "%s holds no blob sha256:%s of %d bytes, the archive %s: push the release there first (piship publish RELEASE_DIR --to %s); nothing was published", repo.Ref, sum, fi.Size(), filepath.Base(rel.Archive), repo.Ref)
		}
		rels[i].RegistryBlob = repo.BlobURL("sha256:" + sum)
	}
	return nil
}
