package oci

import (
	"context"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

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
