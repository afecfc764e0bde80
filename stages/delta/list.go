package delta

import (
	"cmp"
	"context"
	"slices"

	"piship.dev/piship/stages/archive"
)

// ListTree lists the tree in dir (walkTree's rules but the path rules:
// the tree was written by Extract or Apply, which applied them, and a
// listing that is not the expected one fails on its digest) with the
// sha256 of
// each file taken from sums (slash path -> hex: what archive.Extract and
// Apply computed while writing the files) instead of reading them again;
// sizes and exec bits are the files' as they stand. A file sums does not
// name, or a sum of a file that is not there, is an error: the listing
// would not be the tree's. Install records this listing's digest (the
// receipt's treeSha256) without hashing the release a second time.
func ListTree(ctx context.Context, dir string, sums map[string]string) (Tree, error) {
	t, err := walkTree(ctx, dir, false)
	if err != nil {
		return Tree{}, err
	}
	for i := range t.Files {
		f := &t.Files[i]
		sum, ok := sums[f.Path]
		if !ok {
			return Tree{}, &Error{Reason: ReasonTree, Path: f.Path, Detail: "no sha256 was recorded for it while it was written"}
		}
		f.SHA256 = sum
	}
	if len(sums) != len(t.Files) {
		return Tree{}, &Error{Reason: ReasonTree, Detail: "a file whose sha256 was recorded while it was written is missing"}
	}
	return t, nil
}

// TreeOf is the tree an extraction or an Apply wrote, from what it
// reports (archive.Extracted's Files, Sizes, Executables and DirNames),
// without reading the directory; ok is false when the producer did not
// report sizes and directories (ListTree lists the directory then).
func TreeOf(ex *archive.Extracted) (t Tree, ok bool) {
	if ex.Sizes == nil || len(ex.Sizes) != len(ex.Files) {
		return Tree{}, false
	}
	exec := make(map[string]bool, len(ex.Executables))
	for _, p := range ex.Executables {
		exec[p] = true
	}
	t.Files = make([]File, 0, len(ex.Files))
	for p, sum := range ex.Files {
		size, ok := ex.Sizes[p]
		if !ok {
			return Tree{}, false
		}
		t.Files = append(t.Files, File{Path: p, Size: size, Exec: exec[p], SHA256: sum})
	}
	slices.SortFunc(t.Files, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
	t.Dirs = slices.Clone(ex.DirNames)
	return t, true
}
