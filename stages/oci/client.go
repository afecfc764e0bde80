package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/retry"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/stage/errcode"
)

// Repo is one repository of a registry, every call of it made under its
// Budget.
type Repo struct {
	Ref    Ref
	Budget *Budget
	repo   *remote.Repository
}

// Options configure Open.
type Options struct {
	// Budget is the run's budget, shared by its repositories (a fresh one
	// when nil).
	Budget *Budget
	// DockerConfig is the Docker config file to read credentials from
	// (default: $DOCKER_CONFIG/config.json or ~/.docker/config.json).
	DockerConfig string
}

// Open returns the repository ref names. It makes no request: the first
// call does, under the budget.
func Open(ref Ref, opts Options) (*Repo, error) {
	r, err := remote.NewRepository(ref.Host + "/" + ref.Repository)
	if err != nil {
		return nil, errcode.Newf(errcode.ConfigInvalid, "%s: %v", ref, err)
	}
	r.PlainHTTP = loopback(ref.Host)
	var store credentials.Store
	if opts.DockerConfig != "" {
		store, err = credentials.NewStore(opts.DockerConfig, credentials.StoreOptions{})
	} else {
		store, err = credentials.NewStoreFromDocker(credentials.StoreOptions{})
	}
	if err != nil {
		return nil, errcode.Newf(errcode.ConfigInvalid, "%s: the Docker config file (credentials) cannot be read: %v; fix it or point DOCKER_CONFIG at a good one", ref, err)
	}
	r.Client = &auth.Client{
		Client:     &http.Client{Transport: retry.NewTransport(transport())},
		Header:     http.Header{"User-Agent": {"piship"}},
		Cache:      auth.NewCache(),
		Credential: credentials.Credential(store),
	}
	b := opts.Budget
	if b == nil {
		b = &Budget{}
	}
	return &Repo{Ref: ref, Budget: b, repo: r}, nil
}

// transport is http.DefaultTransport's settings with the connect limits.
func transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = ConnectTimeout
	t.MaxIdleConnsPerHost = 16
	return t
}

// Blob is one blob to push: its descriptor and how to read it.
type Blob struct {
	Desc ocispec.Descriptor
	// Open returns its bytes (read once per push attempt).
	Open func() (io.ReadCloser, error)
}

// FileBlob describes the file at path as a blob of mediaType, hashing it.
func FileBlob(path, mediaType string) (Blob, error) {
	f, err := atomicfs.OpenRegular(path)
	if err != nil {
		return Blob{}, err
	}
	defer f.Close()
	d, n, err := digestOf(f)
	if err != nil {
		return Blob{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return Blob{
		Desc: ocispec.Descriptor{MediaType: mediaType, Digest: d, Size: n},
		Open: func() (io.ReadCloser, error) { return atomicfs.OpenRegular(path) },
	}, nil
}

// BytesBlob is data as a blob of mediaType.
func BytesBlob(data []byte, mediaType string) Blob {
	return Blob{
		Desc: ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))},
		Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
	}
}

func digestOf(r io.Reader) (digest.Digest, int64, error) {
	d := digest.SHA256.Digester()
	n, err := io.Copy(d.Hash(), r)
	return d.Digest(), n, err
}

// PushBlobs pushes every blob the registry does not have yet, up to
// parallel at once (the distribution API has no batch upload: one HEAD, and
// a POST and PUT per missing blob). It returns how many were uploaded.
func (r *Repo) PushBlobs(ctx context.Context, blobs []Blob, parallel int) (uploaded int, err error) {
	seen := map[digest.Digest]bool{}
	var todo []Blob
	for _, b := range blobs {
		if !seen[b.Desc.Digest] {
			seen[b.Desc.Digest] = true
			todo = append(todo, b)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(parallel, 1))
	up := make([]bool, len(todo))
	for i, b := range todo {
		g.Go(func() error {
			var has bool
			if err := r.Budget.Do(gctx, "check blob "+b.Desc.Digest.String(), func(ctx context.Context) (err error) {
				has, err = r.repo.Exists(ctx, b.Desc)
				return err
			}); err != nil {
				return err
			}
			if has {
				return nil
			}
			up[i] = true
			return r.Budget.Do(gctx, "push blob "+b.Desc.Digest.String(), func(ctx context.Context) error {
				rc, err := b.Open()
				if err != nil {
					return err
				}
				defer rc.Close()
				return r.repo.Push(ctx, b.Desc, rc)
			})
		})
	}
	err = g.Wait()
	for _, u := range up {
		if u {
			uploaded++
		}
	}
	return uploaded, err
}

// Manifest is an image manifest (OCI 1.1) as piship writes it: the empty
// config when Config is nil, no creation time, so equal content gives an
// equal digest.
type Manifest struct {
	ArtifactType string
	Config       *Blob // nil: the empty config ({}, application/vnd.oci.empty.v1+json)
	Layers       []ocispec.Descriptor
	Annotations  map[string]string
	Subject      *ocispec.Descriptor
}

// EmptyConfig is the OCI empty descriptor's blob.
var EmptyConfig = BytesBlob([]byte("{}"), ocispec.MediaTypeEmptyJSON)

// Encode returns the manifest's bytes.
func (m Manifest) Encode() ([]byte, error) {
	cfg := EmptyConfig
	if m.Config != nil {
		cfg = *m.Config
	}
	layers := m.Layers
	if layers == nil {
		layers = []ocispec.Descriptor{}
	}
	return json.Marshal(ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: m.ArtifactType,
		Config:       cfg.Desc,
		Layers:       layers,
		Subject:      m.Subject,
		Annotations:  m.Annotations,
	})
}

// PushManifest pushes the manifest's config (its layers must be pushed
// already: PushBlobs) and the manifest, and tags it when tag is not empty.
func (r *Repo) PushManifest(ctx context.Context, m Manifest, tag string) (ocispec.Descriptor, error) {
	if tag != "" {
		if err := checkTag(tag); err != nil {
			return ocispec.Descriptor{}, err
		}
	}
	cfg := EmptyConfig
	if m.Config != nil {
		cfg = *m.Config
	}
	if _, err := r.PushBlobs(ctx, []Blob{cfg}, 1); err != nil {
		return ocispec.Descriptor{}, err
	}
	data, err := m.Encode()
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return r.PushManifestBytes(ctx, ocispec.MediaTypeImageManifest, data, tag)
}

// PushManifestBytes pushes a manifest or index as given and tags it.
func (r *Repo) PushManifestBytes(ctx context.Context, mediaType string, data []byte, tag string) (ocispec.Descriptor, error) {
	desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	err := r.Budget.Do(ctx, "push manifest "+desc.Digest.String(), func(ctx context.Context) error {
		if tag == "" {
			return r.repo.Manifests().Push(ctx, desc, bytes.NewReader(data))
		}
		return r.repo.PushReference(ctx, desc, bytes.NewReader(data), tag)
	})
	return desc, err
}

// maxManifest is the largest manifest or index read (distribution's own
// limit is 4 MiB).
const maxManifest = 4 << 20

// Resolve returns the descriptor a tag points at.
func (r *Repo) Resolve(ctx context.Context, tag string) (ocispec.Descriptor, error) {
	if err := checkTag(tag); err != nil {
		return ocispec.Descriptor{}, err
	}
	var desc ocispec.Descriptor
	err := r.Budget.Do(ctx, "resolve "+tag, func(ctx context.Context) (err error) {
		desc, err = r.repo.Resolve(ctx, tag)
		return err
	})
	return desc, err
}

// FetchManifest resolves tag and returns its image manifest, checked
// against the digest the registry resolved it to, and that digest's
// descriptor.
func (r *Repo) FetchManifest(ctx context.Context, tag string) (ocispec.Manifest, ocispec.Descriptor, error) {
	desc, err := r.Resolve(ctx, tag)
	if err != nil {
		return ocispec.Manifest{}, desc, err
	}
	var m ocispec.Manifest
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return m, desc, fmt.Errorf("%s:%s is a %s, not an image manifest", r.Ref, tag, desc.MediaType)
	}
	if desc.Size > maxManifest {
		return m, desc, fmt.Errorf("%s:%s: the manifest is %d bytes, over %d", r.Ref, tag, desc.Size, maxManifest)
	}
	data, err := r.fetch(ctx, "fetch manifest "+tag, desc, true)
	if err != nil {
		return m, desc, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, desc, fmt.Errorf("%s:%s: the manifest is not JSON: %v", r.Ref, tag, err)
	}
	return m, desc, nil
}

// FetchIndex returns the image index tag points at (checked as above).
func (r *Repo) FetchIndex(ctx context.Context, tag string) (ocispec.Index, ocispec.Descriptor, error) {
	desc, err := r.Resolve(ctx, tag)
	var ix ocispec.Index
	if err != nil {
		return ix, desc, err
	}
	if desc.MediaType != ocispec.MediaTypeImageIndex || desc.Size > maxManifest {
		return ix, desc, fmt.Errorf("%s:%s is a %s of %d bytes, not an image index", r.Ref, tag, desc.MediaType, desc.Size)
	}
	data, err := r.fetch(ctx, "fetch index "+tag, desc, true)
	if err != nil {
		return ix, desc, err
	}
	if err := json.Unmarshal(data, &ix); err != nil {
		return ix, desc, fmt.Errorf("%s:%s: the index is not JSON: %v", r.Ref, tag, err)
	}
	return ix, desc, nil
}

// FetchBytes returns a blob of at most max bytes, checked against its
// descriptor.
func (r *Repo) FetchBytes(ctx context.Context, desc ocispec.Descriptor, max int64) ([]byte, error) {
	if desc.Size > max {
		return nil, fmt.Errorf("%s: blob %s is %d bytes, over the %d expected", r.Ref, desc.Digest, desc.Size, max)
	}
	return r.fetch(ctx, "fetch blob "+desc.Digest.String(), desc, false)
}

func (r *Repo) fetch(ctx context.Context, what string, desc ocispec.Descriptor, manifest bool) ([]byte, error) {
	var data []byte
	err := r.Budget.Do(ctx, what, func(ctx context.Context) error {
		var rc io.ReadCloser
		var err error
		if manifest {
			rc, err = r.repo.Manifests().Fetch(ctx, desc)
		} else {
			rc, err = r.repo.Blobs().Fetch(ctx, desc)
		}
		if err != nil {
			return err
		}
		defer rc.Close()
		data, err = content.ReadAll(rc, desc)
		return integrity(desc, err)
	})
	return data, err
}

// integrity turns a content check's failure into an IntegrityError.
func integrity(desc ocispec.Descriptor, err error) error {
	if err != nil && (errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return &IntegrityError{Digest: desc.Digest.String(), Err: err}
	}
	return err
}

// FetchTo writes a blob to path (mode perm) through a temporary file in
// its directory, renamed into place only once every byte matched the
// descriptor's digest and size.
func (r *Repo) FetchTo(ctx context.Context, desc ocispec.Descriptor, path string, perm os.FileMode) error {
	return r.Budget.Do(ctx, "fetch blob "+desc.Digest.String(), func(ctx context.Context) error {
		rc, err := r.repo.Blobs().Fetch(ctx, desc)
		if err != nil {
			return err
		}
		defer rc.Close()
		f, err := atomicfs.Create(path, perm, atomicfs.Options{})
		if err != nil {
			return err
		}
		defer f.Abort()
		vr := content.NewVerifyReader(rc, desc)
		if _, err := io.Copy(f, vr); err != nil {
			return integrity(desc, err)
		}
		if err := vr.Verify(); err != nil {
			return integrity(desc, err)
		}
		return f.Commit()
	})
}

// FetchStream hands a blob's bytes to read as they stream, then checks
// every byte against the descriptor's digest and size (what read left
// unread is read too): an *IntegrityError when they differ. read must
// check what it keeps on its own (the remote cache's packs: each content
// against the sha256 its listing records), since it sees the bytes before
// the blob's digest is known to match.
func (r *Repo) FetchStream(ctx context.Context, desc ocispec.Descriptor, read func(io.Reader) error) error {
	return r.Budget.Do(ctx, "fetch blob "+desc.Digest.String(), func(ctx context.Context) error {
		rc, err := r.repo.Blobs().Fetch(ctx, desc)
		if err != nil {
			return err
		}
		defer rc.Close()
		vr := content.NewVerifyReader(rc, desc)
		if err := read(vr); err != nil {
			return integrity(desc, err)
		}
		if _, err := io.Copy(io.Discard, vr); err != nil {
			return integrity(desc, err)
		}
		return integrity(desc, vr.Verify())
	})
}

// Tags lists the repository's tags.
func (r *Repo) Tags(ctx context.Context) ([]string, error) {
	var tags []string
	err := r.Budget.Do(ctx, "list tags", func(ctx context.Context) error {
		return r.repo.Tags(ctx, "", func(t []string) error {
			tags = append(tags, t...)
			return nil
		})
	})
	return tags, err
}
