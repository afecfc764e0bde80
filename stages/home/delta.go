package home

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/delta"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/release"
)

// sourceDelta is a source built from the installed version and a delta
// (InstallOptions.Delta). The receipt records it as receipt.SourceArchive
// with the release archive's signed digest: the tree it builds is that
// archive's, file for file.
const sourceDelta = "delta"

// identifyDelta is identify for an update that downloaded a delta.
func identifyDelta(o *InstallOptions) (*source, error) {
	if o.ID == "" || o.Version == "" {
		return nil, receipt.Errorf(receipt.CodeConfigInvalid, "a delta update names the distribution and the version it installs")
	}
	if err := receipt.CheckID(o.ID); err != nil {
		return nil, err
	}
	if !receipt.ValidVersion(o.Version) {
		return nil, receipt.Errorf(receipt.CodeConfigInvalid, "%q is not a semantic version", o.Version)
	}
	path, err := filepath.Abs(o.Delta.Path)
	if err != nil {
		return nil, receipt.Errorf(receipt.CodeConfigInvalid, "%s: %v", o.Delta.Path, err)
	}
	s := &source{kind: sourceDelta, path: path, id: o.ID, version: o.Version, target: o.HostTarget,
		expectSHA: o.Delta.ArchiveSHA256, expectWhy: "the signed TUF target"}
	if o.Update != nil {
		// Under the maintenance lock already (Install takes it before
		// identify for an update): list the base beside the header.
		s.deltaBase = listBase(o)
	}
	// The header says what the new version holds (the free space check);
	// one that cannot be read leaves it unsized, and placing the delta
	// then fails and falls back to the archive.
	if f, err := atomicfs.OpenRegular(path); err == nil {
		s.delta, _ = delta.ReadHeader(f)
		f.Close()
	}
	return s, nil
}

// placeDelta builds dest from the active installed version and the delta:
// the installed tree, listed with the digests its release claims (listBase,
// started by identify), must be the delta's base (Apply checks it first);
// then Apply writes every file of the new tree, each installed file hashed
// as it is read and each written one as it is written. Apply takes the
// header identify read. Any error makes Install fall back to the archive.
func placeDelta(ctx context.Context, o *InstallOptions, s *source, dest string) (*archive.Extracted, error) {
	if s.deltaBase == nil {
		s.deltaBase = listBase(o)
	}
	base, tree, err := s.deltaBase()
	if err != nil {
		return nil, err
	}
	f, err := atomicfs.OpenRegular(s.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	o.progressf("%s %s: building it from the installed %s and the delta %s", s.id, s.version, base.Version, filepath.Base(s.path))
	ex, err := delta.Apply(ctx, f, base.Dir, tree, dest, delta.ApplyOptions{Writers: o.Writers, Header: s.delta})
	if err != nil {
		return nil, err
	}
	ex.SHA256 = o.Delta.ArchiveSHA256
	return ex, nil
}

// listBase starts listing the installed release a delta update starts
// from (the active version, which must be the delta's from-version) with
// the digests its release claims, and returns the wait for it: identify
// reads the delta's header meanwhile, on the other core (the listing is
// ~1,000 directories and 16,000 lstats of Pi's). No file is hashed here:
// Apply hashes every installed file it keeps, copies or patches from as
// it reads it, so a file changed since the install still stops the
// delta, before anything of it is kept. It starts in identify only for
// an update, which holds the maintenance lock from before identify, so
// the receipt read here is the one placing sees; otherwise placeDelta
// starts it under the lock.
func listBase(o *InstallOptions) func() (*receipt.Release, delta.Tree, error) {
	type listed struct {
		base *receipt.Release
		tree delta.Tree
		err  error
	}
	done := make(chan listed, 1)
	home, id, from := o.Homes.Install, o.ID, o.Delta.From
	go func() {
		var l listed
		defer func() { done <- l }()
		rc, err := receipt.Read(home, id)
		if err != nil {
			l.err = err
			return
		}
		base := rc.Find(from)
		if rc.Active != from || base == nil {
			l.err = fmt.Errorf("the active version is %s, and the delta starts from %s", rc.Active, from)
			return
		}
		l.base = base
		sums, err := release.Claimed(base.Dir)
		if err != nil {
			l.err = fmt.Errorf("cannot read the installed %s's checksums in %s: %w", base.Version, base.Dir, err)
			return
		}
		if l.tree, err = delta.ListTree(context.Background(), base.Dir, sums); err != nil {
			l.err = fmt.Errorf("the installed %s in %s is not the tree its release lists: %w", base.Version, base.Dir, err)
		}
	}()
	var once sync.Once
	var l listed
	return func() (*receipt.Release, delta.Tree, error) {
		once.Do(func() { l = <-done })
		return l.base, l.tree, l.err
	}
}

// deltaFallback is Install's one retry after a delta failed with err: the
// partial directory at placeAt is discarded, the update says so (in its
// output and as a span event on ctx), and the archive is downloaded and
// identified as the source instead.
func (o *InstallOptions) deltaFallback(ctx context.Context, s *source, placeAt string, cause error) (*source, error) {
	o.logf("%s %s: the delta from %s cannot be used (%v): downloading the full archive instead", s.id, s.version, o.Delta.From, cause)
	o.discard(ctx, s.id, s.version, placeAt)
	DeltaFallback(ctx, o.Delta.From, cause.Error())
	if o.Delta.Fallback == nil {
		return nil, receipt.Errorf(receipt.CodeUpdate, "%s %s: the delta from %s cannot be used, and no archive can be fetched instead: %w; nothing was installed", s.id, s.version, o.Delta.From, cause)
	}
	arc, err := o.Delta.Fallback(ctx)
	if err != nil {
		return nil, err
	}
	o.Source, o.SHA256, o.Delta = arc, o.Delta.ArchiveSHA256, nil
	ns, err := identify(o)
	if err != nil {
		return nil, err
	}
	return ns, nil
}

// fromArchive says the source's release is an archive's tree (the
// archive itself, or a delta to it): it is recorded and reused by the
// archive's digest.
func (s *source) fromArchive() bool { return s.kind == receipt.SourceArchive || s.kind == sourceDelta }

// recorded is the receipt's source of s: a delta builds the archive's tree.
func (s *source) recorded() string {
	if s.kind == sourceDelta {
		return receipt.SourceArchive
	}
	return s.kind
}

// treeDigest is the receipt's TreeSHA256 of the release written into dir:
// from what the extraction or Apply reported while writing it (digests,
// sizes, modes, directories), or for a directory install from a listing
// of dir with the digests the copy computed; "" when it cannot be had,
// and an update then takes the archive.
func treeDigest(dir string, put *archive.Extracted) string {
	if t, ok := delta.TreeOf(put); ok {
		return t.Digest()
	}
	t, err := delta.ListTree(context.Background(), dir, put.Files)
	if err != nil {
		return ""
	}
	return t.Digest()
}

// downloaded is the update's download Install was given: the delta, or
// the archive (Source).
func (o *InstallOptions) downloaded() string {
	if o.Delta != nil {
		return o.Delta.Path
	}
	return o.Source
}

// DeltaFallback records on ctx's span that an update takes the release
// archive instead of the delta from version from, and why
// (DeltaFallbackEvent): the one place update_check (a delta it does not
// download) and Install (a delta it cannot use) say it.
func DeltaFallback(ctx context.Context, from, why string) {
	trace.SpanFromContext(ctx).AddEvent(DeltaFallbackEvent, trace.WithAttributes(
		attribute.String("piship.delta.from", from), attribute.String("piship.delta.reason", why)))
}
