package oci

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/release/releasejson"
)

// ReleaseFiles are the files of one target's release artifact, as piship
// release wrote them in its releases directory (releases), named as they
// stand there: the archive <name>.tar.zst, its sidecar <name>.tar.zst.sha256,
// <name>.build-info.json, and from the release directory <name>/release.json
// and <name>/notes.md, each when it exists but the archive and
// release.json, which must. So `oras pull` writes the same tree, and what
// an end user needs to check and install the target travels with it (the
// release directory's other files are inside the archive).
func ReleaseFiles(releases, archiveName string) ([]File, error) {
	name, ok := archive.TrimExt(archiveName)
	if !ok || archiveName != filepath.Base(archiveName) {
		return nil, fmt.Errorf("%s is not a release archive's name (<id>-<version>-<target>.tar.zst)", archiveName)
	}
	var files []File
	for _, f := range []struct {
		name     string
		required bool
	}{
		{archiveName, true},
		{archiveName + ".sha256", false},
		{filepath.Base(release.BuildInfoPath(releases, name)), false},
		{name + "/" + releasejson.Name, true},
		{name + "/" + releasejson.NotesName, false},
	} {
		p := filepath.Join(releases, filepath.FromSlash(f.name))
		fi, err := os.Lstat(p)
		switch {
		case err == nil && fi.Mode().IsRegular():
			files = append(files, File{Name: f.name, Path: p})
		case err == nil:
			return nil, fmt.Errorf("%s is not a regular file", p)
		case f.required || !errors.Is(err, os.ErrNotExist):
			return nil, err
		}
	}
	return files, nil
}

// HasBlob reports whether the repository holds the blob of digest (a
// "sha256:<hex>") of size bytes: what repo add --registry checks before a
// TUF target names the blob.
func (r *Repo) HasBlob(ctx context.Context, dgst string, size int64) (bool, error) {
	d, err := digest.Parse(dgst)
	if err != nil {
		return false, err
	}
	var desc ocispec.Descriptor
	err = r.Budget.Do(ctx, "check blob "+dgst, func(ctx context.Context) (err error) {
		desc, err = r.repo.Blobs().Resolve(ctx, d.String())
		return err
	})
	if IsNotFound(err) {
		return false, nil
	}
	return err == nil && desc.Size == size, err
}

// Describe names a repository's artifact in messages: oci://host/repo:tag.
func (r *Repo) Describe(tag string) string {
	return r.Ref.String() + ":" + strings.TrimPrefix(tag, ":")
}
