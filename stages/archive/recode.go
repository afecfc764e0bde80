package archive

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"piship.dev/piship/cache/atomicfs"
)

// Recode writes the archive src again in format to, at dst (through a
// temporary sibling and a rename): the same tree and entry mtime, so the
// result is what Create of that tree in that format writes, byte for
// byte. src is read by Extract, under every rule of an install, into a
// temporary directory beside dst that Recode removes. It is how `piship
// repo add --v1-twin` makes the v1 archive of a v2 release.
func Recode(ctx context.Context, dst, src string, to Format) error {
	mtime, err := entryMTime(src)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".recode-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	f, err := atomicfs.OpenRegular(src)
	if err != nil {
		return err
	}
	defer f.Close()
	tree := filepath.Join(tmp, "tree")
	if _, err := Extract(ctx, f, tree, Limits{}); err != nil {
		return err
	}
	_, err = Create(ctx, dst, tree, Options{Format: to, MTime: mtime})
	return err
}

// entryMTime is the mtime of the first entry after the declaration of the
// archive at path: Write gives every entry the same one.
func entryMTime(path string) (int64, error) {
	f, err := atomicfs.OpenRegular(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r, _, err := NewTarReader(f, Limits{})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return 0, nil // an empty tree: any mtime writes the same bytes
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		if h.Typeflag != tar.TypeXGlobalHeader {
			return h.ModTime.Unix(), nil
		}
	}
}
