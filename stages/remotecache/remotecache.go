// Package remotecache is piship's remote cache on an OCI registry: the
// cache.Remote that --remote-cache oci://host[:port]/repo hands the run
// (cmd/piship), so a CI fleet shares the action cache's entries and the
// runtime cache's installed trees (i-) and bundles (b-).
//
// # An entry on the registry
//
// Each entry is one OCI artifact (artifactType ArtifactType) tagged by its
// key: "a-<64 hex>" for an action entry, the runtime key itself ("i-..."
// or "b-...") for a runtime one. Its config is OCI's empty one (what
// registries accept for any artifact); its first layer, the listing
// (ConfigMediaType), lists the entry: area, key, the local metadata file's
// bytes (entry.json or manifest.json), every directory, every file with
// its path, mode, size and sha256 (or, for a symbolic link, its target),
// and the packs. Its other layers hold the distinct file contents:
//
//   - a content of packMax (1 MiB) or more is a layer of its own
//     (LayerMediaType), content-addressed;
//   - the smaller ones travel in packs (PackMediaType): taken in the order
//     of their sha256, a pack is their bytes one after the other, ending
//     after a content whose sha256's second byte is 0 (one in 256, so
//     ~256 contents a pack) or before one that would take it over 8 MiB.
//     The listing records each pack's digest, size and contents in order.
//
// An npm ci tree of 15,000 small files is thus ~60 requests each way, not
// 15,000. The packing is deterministic (the same tree gives the same blobs
// on every machine) and content-defined (where a pack ends depends only on
// the contents' own digests), so two entries that share most files share
// most blobs: adding or removing a file changes the one pack that holds
// it, and a blob that many entries hold is stored once in the repository
// and pushed once.
//
// # Trust
//
// Integrity is not origin. A writer signs, with its cache key (an ed25519
// key from piship keygen), the statement
//
//	piship-remote-cache/v2\n<tag>\n<listing digest>
//
// and puts the signature and the key's fingerprint in the manifest's
// annotations (AnnotationSignature, AnnotationKey). A reader takes an entry
// only when it is signed by a key it pins (--remote-cache-trust), for the
// very tag it asked for; the listing is read only through its digest;
// each pack is fetched once and split as it streams, and every content is
// verified against the sha256 and size the signed listing records before
// it is placed (each pack, and each layer of its own, against its digest
// too). The local cache then checks the pulled entry as any of its own.
// Anything short of that (no entry, unsigned, signed by another key, a
// wrong signature, an entry of an older schema (v1: one layer per file), a
// listing or blob whose bytes differ, a blob the manifest names that the
// registry no longer has, the registry down) is a *cache.RemoteMiss with
// the reason: the stage runs.
package remotecache

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/parallel"
	"piship.dev/piship/stages/oci"
	"piship.dev/piship/stages/signkey"
	"piship.dev/piship/stages/stage/errcode"
)

// The media types and annotations of an entry.
const (
	ArtifactType        = "application/vnd.piship.cache.v1"
	ConfigMediaType     = "application/vnd.piship.cache.config.v1+json"
	LayerMediaType      = "application/vnd.piship.cache.file.v1"
	PackMediaType       = "application/vnd.piship.cache.pack.v1"
	AnnotationSignature = "dev.piship.cache.signature"
	AnnotationKey       = "dev.piship.cache.key"
	configSchema        = "piship-remote-cache/v2"
	statementPrefix     = "piship-remote-cache/v2"
	// oldStatementPrefix is what piship signed before packs: such an
	// entry is a miss that says so.
	oldStatementPrefix = "piship-remote-cache/v1"
	// maxConfig is the largest config read (a tree of ~100k files).
	maxConfig = 32 << 20
)

// metadataName is each area's metadata file, carried in the config.
var metadataName = map[string]string{cache.AreaAction: "entry.json", cache.AreaRuntime: "manifest.json"}

// File is one file of an entry, as the config lists it.
type File struct {
	Path   string `json:"path"`
	Mode   uint32 `json:"mode"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	Link   string `json:"link,omitempty"`
}

// Config is an entry's config blob.
type Config struct {
	Schema string `json:"schema"`
	Area   string `json:"area"`
	Key    string `json:"key"`
	// Metadata is the bytes of the entry's metadata file (MetadataName).
	Metadata     string   `json:"metadata"`
	MetadataName string   `json:"metadataName"`
	Dirs         []string `json:"dirs"`
	Files        []File   `json:"files"`
	// Packs are the pack layers, in the order of their contents' sha256.
	Packs []Pack `json:"packs"`
}

// Store is the remote cache in one repository of a registry.
type Store struct {
	Repo *oci.Repo
	// Signer signs what Push writes (nil: Push refuses; a read-only run).
	Signer ed25519.PrivateKey
	// Trusted are the keys whose entries Pull takes, by fingerprint.
	Trusted map[string]ed25519.PublicKey
	// Parallel is how many blobs move at once (8 when zero).
	Parallel int
}

// New returns the store in repo; signer may be nil (read only). The
// signer's own key is trusted as well as trusted.
func New(repo *oci.Repo, signer ed25519.PrivateKey, trusted []ed25519.PublicKey) *Store {
	s := &Store{Repo: repo, Signer: signer, Trusted: map[string]ed25519.PublicKey{}}
	for _, k := range trusted {
		s.Trusted[signkey.Fingerprint(k)] = k
	}
	if signer != nil {
		pub := signer.Public().(ed25519.PublicKey)
		s.Trusted[signkey.Fingerprint(pub)] = pub
	}
	return s
}

func (s *Store) String() string { return s.Repo.Ref.String() }

func (s *Store) parallel() int {
	if s.Parallel > 0 {
		return s.Parallel
	}
	return 8
}

// Tag is the tag of the entry for key in area.
func Tag(area, key string) (string, error) {
	switch {
	case area == cache.AreaAction && cache.IsDigest(key):
		return "a-" + key, nil
	case area == cache.AreaRuntime && cache.IsRuntimeKey(key):
		return key, nil
	}
	return "", fmt.Errorf("remote cache: no tag for %s key %q", area, key)
}

// Statement is what the writer signs for the entry at tag whose config has
// digest configDigest.
func Statement(tag, configDigest string) []byte {
	return []byte(statementPrefix + "\n" + tag + "\n" + configDigest)
}

// Push writes the local entry in srcDir as the artifact for key, signed.
func (s *Store) Push(ctx context.Context, area, key, srcDir string) error {
	if s.Signer == nil {
		return errcode.Newf(errcode.ConfigInvalid, "remote cache %s: writing needs --remote-cache-key FILE (a piship keygen key)", s)
	}
	tag, err := Tag(area, key)
	if err != nil {
		return err
	}
	cfg, blobs, err := describe(area, key, srcDir)
	if err != nil {
		return err
	}
	if _, err := s.Repo.PushBlobs(ctx, blobs, s.parallel()); err != nil {
		return err
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	// The listing is the first layer and the manifest's config the empty
	// one, as OCI 1.1 advises for artifacts: registries that refuse an
	// unknown config media type (BuildKit's cache met them) take it.
	cb := oci.BytesBlob(data, ConfigMediaType)
	if _, err := s.Repo.PushBlobs(ctx, []oci.Blob{cb}, 1); err != nil {
		return err
	}
	layers := make([]ocispec.Descriptor, 0, len(blobs)+1)
	layers = append(layers, cb.Desc)
	for _, b := range blobs {
		layers = append(layers, b.Desc)
	}
	sig := ed25519.Sign(s.Signer, Statement(tag, cb.Desc.Digest.String()))
	m := oci.Manifest{
		ArtifactType: ArtifactType,
		Layers:       layers,
		Annotations: map[string]string{
			AnnotationSignature: base64.StdEncoding.EncodeToString(sig),
			AnnotationKey:       signkey.Fingerprint(s.Signer.Public().(ed25519.PublicKey)),
		},
	}
	_, err = s.Repo.PushManifest(ctx, m, tag)
	return err
}

// describe lists the entry in dir: its config, and its blobs sorted by
// digest: the packs of the distinct contents under packMax bytes, and one
// blob per larger one.
func describe(area, key, dir string) (*Config, []oci.Blob, error) {
	meta := metadataName[area]
	if meta == "" {
		return nil, nil, fmt.Errorf("remote cache: unknown area %q", area)
	}
	data, err := os.ReadFile(filepath.Join(dir, meta))
	if err != nil {
		return nil, nil, fmt.Errorf("remote cache: reading the entry %s: %w", key, err)
	}
	cfg := &Config{Schema: configSchema, Area: area, Key: key, Metadata: string(data), MetadataName: meta, Dirs: []string{}, Files: []File{}, Packs: []Pack{}}
	byDigest := map[digest.Digest]oci.Blob{}
	paths := map[digest.Digest]string{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." || rel == meta {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch t := info.Mode(); {
		case t.IsDir():
			cfg.Dirs = append(cfg.Dirs, rel)
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			cfg.Files = append(cfg.Files, File{Path: rel, Link: target})
		case t.IsRegular():
			b, err := oci.FileBlob(p, LayerMediaType)
			if err != nil {
				return err
			}
			byDigest[b.Desc.Digest] = b
			paths[b.Desc.Digest] = p
			cfg.Files = append(cfg.Files, File{Path: rel, Mode: uint32(t.Perm()), Size: b.Desc.Size, SHA256: b.Desc.Digest.Encoded()})
		default:
			return fmt.Errorf("%s is not a regular file, directory or symbolic link", rel)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("remote cache: reading the entry %s: %w", key, err)
	}
	sort.Strings(cfg.Dirs)
	sort.Slice(cfg.Files, func(i, j int) bool { return cfg.Files[i].Path < cfg.Files[j].Path })
	contents := make([]content, 0, len(byDigest))
	for d, b := range byDigest {
		contents = append(contents, content{sha: d.Encoded(), size: b.Desc.Size, path: paths[d]})
	}
	sort.Slice(contents, func(i, j int) bool { return contents[i].sha < contents[j].sha })
	packs, large := group(contents)
	blobs := make([]oci.Blob, 0, len(packs)+len(large))
	for _, cs := range packs {
		b, p, err := packBlob(cs)
		if err != nil {
			return nil, nil, fmt.Errorf("remote cache: reading the entry %s: %w", key, err)
		}
		blobs = append(blobs, b)
		cfg.Packs = append(cfg.Packs, p)
	}
	for _, c := range large {
		blobs = append(blobs, byDigest[digest.NewDigestFromEncoded(digest.SHA256, c.sha)])
	}
	sort.Slice(blobs, func(i, j int) bool { return blobs[i].Desc.Digest < blobs[j].Desc.Digest })
	return cfg, blobs, nil
}

// Pull places the entry for key in dstDir (which must not exist) and
// returns the digests of the files it placed (every content was checked
// against the signed listing as it was written), or returns a
// *cache.RemoteMiss saying why it cannot.
func (s *Store) Pull(ctx context.Context, area, key, dstDir string) (cache.Pulled, error) {
	tag, err := Tag(area, key)
	if err != nil {
		return nil, cache.Misses("%v", err)
	}
	m, _, err := s.Repo.FetchManifest(ctx, tag)
	if err != nil {
		return nil, s.miss("no entry", tag, err)
	}
	cfgDesc, err := s.trust(tag, m)
	if err != nil {
		return nil, err
	}
	data, err := s.Repo.FetchBytes(ctx, cfgDesc, maxConfig)
	if err != nil {
		return nil, s.miss("its config", tag, err)
	}
	var cfg Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, cache.Misses("%s:%s: the config is not JSON: %v", s, tag, err)
	}
	pl, err := check(&cfg, area, key, m)
	if err != nil {
		return nil, cache.Misses("%s:%s: %v", s, tag, err)
	}
	if err := s.place(ctx, &cfg, pl, dstDir); err != nil {
		os.RemoveAll(dstDir)
		return nil, s.miss("a blob", tag, err)
	}
	pulled := make(cache.Pulled, len(cfg.Files))
	for _, f := range cfg.Files {
		if f.Link == "" {
			pulled[f.Path] = f.SHA256
		}
	}
	return pulled, nil
}

// miss turns a registry failure into a miss: not found (no entry, or an
// evicted blob), damaged bytes, the registry given up on.
func (s *Store) miss(what, tag string, err error) error {
	var ie *oci.IntegrityError
	switch {
	case errors.As(err, &ie):
		return cache.Misses("%s:%s: blob %s is not what its digest names (damaged in the registry); discarded", s, tag, ie.Digest)
	case oci.IsNotFound(err) && what == "no entry":
		return cache.Misses("%s has no entry %s", s, tag)
	case oci.IsNotFound(err):
		return cache.Misses("%s:%s is incomplete: %s the manifest names is gone from the registry (evicted): %v", s, tag, what, err)
	case errors.Is(err, oci.ErrDown):
		return cache.Misses("%s was given up on earlier in this run", s)
	}
	return cache.Misses("%s:%s: %v", s, tag, err)
}

// trust checks the manifest's artifact type and signature: signed by a
// pinned key, for tag, over its config's digest. It returns the config's
// descriptor.
func (s *Store) trust(tag string, m ocispec.Manifest) (ocispec.Descriptor, error) {
	if m.ArtifactType != ArtifactType || len(m.Layers) == 0 || m.Layers[0].MediaType != ConfigMediaType {
		return ocispec.Descriptor{}, cache.Misses("%s:%s is not a piship cache entry (artifactType %q)", s, tag, m.ArtifactType)
	}
	listing := m.Layers[0]
	sig64, fp := m.Annotations[AnnotationSignature], m.Annotations[AnnotationKey]
	if sig64 == "" || fp == "" {
		return listing, cache.Misses("%s:%s is unsigned", s, tag)
	}
	pub, ok := s.Trusted[fp]
	if !ok {
		return listing, cache.Misses("%s:%s is signed by key %s, which is not pinned (--remote-cache-trust)", s, tag, fp)
	}
	sig, err := base64.StdEncoding.DecodeString(sig64)
	if err == nil && !ed25519.Verify(pub, Statement(tag, listing.Digest.String()), sig) &&
		ed25519.Verify(pub, []byte(oldStatementPrefix+"\n"+tag+"\n"+listing.Digest.String()), sig) {
		return listing, cache.Misses("%s:%s is of schema %s (written by an older piship), not this schema (%s)", s, tag, oldStatementPrefix, configSchema)
	}
	if err != nil || !ed25519.Verify(pub, Statement(tag, listing.Digest.String()), sig) {
		return listing, cache.Misses("%s:%s: the signature by key %s does not verify (altered manifest or config)", s, tag, fp)
	}
	return listing, nil
}

// plan is where each content of a checked listing comes from: a pack
// (Config.Packs, fetched through packs) or a layer of its own (large).
type plan struct {
	sizes map[string]int64              // sha256 -> size
	packs []ocispec.Descriptor          // the layer of each Config.Packs
	large map[string]ocispec.Descriptor // sha256 -> its own layer
}

// check holds the signed listing to the entry asked for and to safe paths,
// and says where each file's content comes from: every content is in one
// pack or a layer of its own, the sizes agreeing.
func check(cfg *Config, area, key string, m ocispec.Manifest) (*plan, error) {
	if cfg.Schema != configSchema || cfg.Area != area || cfg.Key != key || cfg.MetadataName != metadataName[area] {
		return nil, fmt.Errorf("the config is for %s %s (schema %q), not %s %s", cfg.Area, cfg.Key, cfg.Schema, area, key)
	}
	layers := map[digest.Digest]ocispec.Descriptor{}
	for _, l := range m.Layers {
		if l.Digest.Algorithm() == digest.SHA256 && l.Digest.Validate() == nil {
			layers[l.Digest] = l
		}
	}
	dirs := map[string]bool{}
	for _, d := range cfg.Dirs {
		if cache.CheckOutputPath(d) != nil || (path.Dir(d) != "." && !dirs[path.Dir(d)]) {
			return nil, fmt.Errorf("directory %q is not a clean path below a listed directory", d)
		}
		dirs[d] = true
	}
	pl := &plan{sizes: map[string]int64{}, large: map[string]ocispec.Descriptor{}}
	for _, f := range cfg.Files {
		if cache.CheckOutputPath(f.Path) != nil || f.Path == cfg.MetadataName || dirs[f.Path] || (path.Dir(f.Path) != "." && !dirs[path.Dir(f.Path)]) {
			return nil, fmt.Errorf("file %q is not a clean path below a listed directory", f.Path)
		}
		if f.Link != "" {
			if strings.HasPrefix(f.Link, "/") || filepath.IsAbs(f.Link) {
				return nil, fmt.Errorf("symbolic link %q points outside the entry (%s)", f.Path, f.Link)
			}
			continue
		}
		size, seen := pl.sizes[f.SHA256]
		if f.Mode&^0o777 != 0 || f.Size < 0 || (seen && size != f.Size) || digest.NewDigestFromEncoded(digest.SHA256, f.SHA256).Validate() != nil {
			return nil, fmt.Errorf("file %q: mode %o, sha256 %q, %d bytes is not a file the listing can hold", f.Path, f.Mode, f.SHA256, f.Size)
		}
		pl.sizes[f.SHA256] = f.Size
	}
	packed := map[string]bool{}
	for _, p := range cfg.Packs {
		l, ok := layers[digest.Digest(p.Digest)]
		if !ok || l.Size != p.Size {
			return nil, fmt.Errorf("incomplete: no layer is the pack %s (%d bytes)", p.Digest, p.Size)
		}
		var sum int64
		for _, c := range p.Contents {
			size, ok := pl.sizes[c]
			if !ok || packed[c] || size >= packMax {
				return nil, fmt.Errorf("pack %s lists sha256 %s, which no file holds, another pack holds too, or of %d bytes (packs hold contents under %d)", p.Digest, c, size, packMax)
			}
			packed[c] = true
			sum += size
		}
		if sum != p.Size {
			return nil, fmt.Errorf("pack %s is %d bytes, its contents %d", p.Digest, p.Size, sum)
		}
		pl.packs = append(pl.packs, l)
	}
	for _, f := range cfg.Files {
		if f.Link != "" || packed[f.SHA256] {
			continue
		}
		l, ok := layers[digest.NewDigestFromEncoded(digest.SHA256, f.SHA256)]
		if !ok || l.Size != f.Size {
			return nil, fmt.Errorf("incomplete: no pack or layer holds %s (sha256 %s, %d bytes)", f.Path, f.SHA256, f.Size)
		}
		pl.large[f.SHA256] = l
	}
	return pl, nil
}

// place writes the entry into dst: the metadata, the directories, each
// distinct content fetched once (each pack streamed and split, each larger
// content on its own, verified while it streams) and linked or copied to
// the other paths that hold it, the symbolic links.
func (s *Store) place(ctx context.Context, cfg *Config, pl *plan, dst string) error {
	if err := os.Mkdir(dst, 0o777); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dst, cfg.MetadataName), []byte(cfg.Metadata), 0o644); err != nil {
		return err
	}
	for _, d := range cfg.Dirs {
		if err := os.Mkdir(filepath.Join(dst, filepath.FromSlash(d)), 0o755); err != nil {
			return err
		}
	}
	first := map[string]int{} // sha256 -> the first file holding it
	var large []int           // the first file of each content with a layer of its own
	for i, f := range cfg.Files {
		if f.Link == "" {
			if _, ok := first[f.SHA256]; !ok {
				first[f.SHA256] = i
				if _, ok := pl.large[f.SHA256]; ok {
					large = append(large, i)
				}
			}
		}
	}
	// The large contents first: they take longest.
	err := parallel.ForEach(ctx, len(large)+len(cfg.Packs), s.parallel(), func(j int) error {
		if j >= len(large) {
			p := cfg.Packs[j-len(large)]
			paths := make([]string, len(p.Contents))
			modes := make([]fs.FileMode, len(p.Contents))
			for i, sha := range p.Contents {
				f := cfg.Files[first[sha]]
				paths[i], modes[i] = filepath.Join(dst, filepath.FromSlash(f.Path)), fs.FileMode(f.Mode)
			}
			return s.Repo.FetchStream(ctx, pl.packs[j-len(large)], func(r io.Reader) error {
				return unpack(r, p, pl.sizes, paths, modes)
			})
		}
		f := cfg.Files[large[j]]
		p := filepath.Join(dst, filepath.FromSlash(f.Path))
		if err := s.Repo.FetchTo(ctx, pl.large[f.SHA256], p, fs.FileMode(f.Mode)); err != nil {
			return err
		}
		return os.Chmod(p, fs.FileMode(f.Mode))
	})
	if err != nil {
		return err
	}
	for i, f := range cfg.Files {
		p := filepath.Join(dst, filepath.FromSlash(f.Path))
		switch {
		case f.Link != "":
			if err := os.Symlink(f.Link, p); err != nil {
				return err
			}
		case first[f.SHA256] != i:
			src := filepath.Join(dst, filepath.FromSlash(cfg.Files[first[f.SHA256]].Path))
			if err := copyFile(src, p, fs.FileMode(f.Mode)); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyFile copies src (a file just fetched and verified) to dst.
func copyFile(src, dst string, perm fs.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, perm); err != nil {
		return err
	}
	return os.Chmod(dst, perm)
}
