package delta

import "context"

// ListTree lists the tree in dir (walkTree's rules) with the sha256 of
// each file taken from sums (slash path -> hex: what archive.Extract and
// Apply computed while writing the files) instead of reading them again;
// sizes and exec bits are the files' as they stand. A file sums does not
// name, or a sum of a file that is not there, is an error: the listing
// would not be the tree's. Install records this listing's digest (the
// receipt's treeSha256) without hashing the release a second time.
func ListTree(ctx context.Context, dir string, sums map[string]string) (Tree, error) {
	t, err := walkTree(ctx, dir)
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
