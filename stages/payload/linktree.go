package payload

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"piship.dev/piship/stages/hardlink"
)

// LinkTree recreates the tree at src under dst (created if missing):
// directories are made, regular files hardlinked, or copied when linking is
// impossible (another filesystem, no permission, link limit: the
// stages/hardlink rule the runtime cache and the store follow). skip, if not
// nil, leaves out slash-separated relative paths (and everything below a
// skipped directory). Symlinks and special files are refused.
func LinkTree(src, dst string, skip ...func(rel string) bool) error {
	copyOnly := false
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		slash := filepath.ToSlash(rel)
		for _, s := range skip {
			if rel != "." && s(slash) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return errors.New("cannot link " + slash + ": not a regular file")
		}
		if !copyOnly {
			err := os.Link(p, target)
			if err == nil {
				return nil
			}
			switch hardlink.Classify(err) {
			case hardlink.CopyAll:
				copyOnly = true // the rest of this tree cannot be linked either
			case hardlink.Fail:
				return err
			}
		}
		return copyFile(p, target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// DistributionOwned reports whether rel is one of the payload paths that come from the distribution,
// not from the runtime: refreshed whenever the lock changes.
func DistributionOwned(rel string) bool {
	for _, p := range []string{"resources", "tools", "bin", "piship.lock", InventoryName, "metadata/target.json"} {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}
