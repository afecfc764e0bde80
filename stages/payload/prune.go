package payload

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Constraint is a locked package's os/cpu lists (npm semantics: entries
// name allowed values, "!x" entries excluded ones).
type Constraint struct{ OS, CPU []string }

// Excludes reports whether the package cannot run on platform/arch.
func (c Constraint) Excludes(platform, arch string) bool {
	return !allowed(c.OS, platform) || !allowed(c.CPU, arch)
}

func allowed(list []string, v string) bool {
	if len(list) == 0 {
		return true
	}
	positive := false
	for _, e := range list {
		if neg, ok := strings.CutPrefix(e, "!"); ok {
			if neg == v {
				return false
			}
			continue
		}
		positive = true
		if e == v {
			return true
		}
	}
	return !positive
}

// Prune removes, below root (the runtime root holding node_modules/), every
// locked package whose os/cpu excludes platform/arch, and every
// node_modules/.bin directory (links for npm scripts, which a payload never
// runs). pkgs maps lock package paths ("node_modules/a/node_modules/b") to
// their constraints. It returns the removed paths, sorted.
func Prune(ctx context.Context, root string, pkgs map[string]Constraint, platform, arch string) ([]string, error) {
	var removed []string
	for p, c := range pkgs {
		if p == "" || !c.Excludes(platform, arch) {
			continue
		}
		removed = append(removed, path.Clean(p))
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".bin" && filepath.Base(filepath.Dir(p)) == "node_modules" {
			rel, _ := filepath.Rel(root, p)
			removed = append(removed, filepath.ToSlash(rel))
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(removed)
	for _, r := range removed {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := os.RemoveAll(filepath.Join(root, filepath.FromSlash(r))); err != nil {
			return nil, err
		}
	}
	return removed, nil
}

// PruneEmptyDirs removes every directory below root that holds nothing
// (after removing its empty subdirectories), deepest first, and returns
// how many went. The bundler leaves the directory skeleton of the packages
// it folded into chunks; each empty directory would cost every install a
// mkdir for nothing.
func PruneEmptyDirs(root string) (int, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	removed := 0
	for i := len(dirs) - 1; i >= 0; i-- { // children come after parents in walk order
		entries, err := os.ReadDir(dirs[i])
		if err != nil {
			return removed, err
		}
		if len(entries) == 0 {
			if err := os.Remove(dirs[i]); err != nil {
				return removed, err
			}
			removed++
		}
	}
	return removed, nil
}
