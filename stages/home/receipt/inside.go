package receipt

import (
	"path/filepath"
	"strings"
)

// CheckInside refuses a release record whose Dir or Payload is not inside
// apps/<id>/ of installHome: INTEGRITY_FAILED saying what to do. Both
// paths are cleaned and their symbolic links resolved (as are the install
// home's own), so a payload that is, or passes through, a link leading out
// of apps/<id> is refused like an absolute path elsewhere. A .retained-*
// directory under apps/<id>/ is inside; apps/<id> itself and its
// bookkeeping directories (.runtime-leases, .downloads) are not. The
// payload must lie inside the release's directory.
//
// It is the one rule of where an installed release may live: launch runs
// it on every start before reading anything of the payload, and doctor on
// every record it checks. A path that does not exist (yet) is compared as
// it is written, cleaned.
func CheckInside(installHome, id string, rel *Release) error {
	if err := CheckID(id); err != nil {
		return err
	}
	app := resolve(AppDir(installHome, id))
	dir, pay := resolve(rel.Dir), resolve(rel.Payload)
	refuse := func(what, p, resolved string) error {
		via := ""
		if filepath.Clean(p) != resolved {
			via = " (resolved: " + resolved + ")"
		}
		return Errorf(CodeIntegrity, "the receipt of %s puts the %s of %s at %s%s, outside %s: nothing of it is trusted or run; run piship doctor %s, then reinstall the release",
			id, what, rel.Version, p, via, AppDir(installHome, id), id)
	}
	if !within(app, dir) {
		return refuse("directory", rel.Dir, dir)
	}
	first, _, _ := strings.Cut(filepath.ToSlash(mustRel(app, dir)), "/")
	if first == LeasesName || first == DownloadsName {
		return refuse("directory", rel.Dir, dir)
	}
	if !within(app, pay) || !within(dir, pay) {
		return refuse("payload", rel.Payload, pay)
	}
	return nil
}

func mustRel(root, p string) string {
	r, _ := filepath.Rel(root, p)
	return r
}

// resolve cleans p and resolves the symbolic links of its longest existing
// prefix; what does not exist is kept as written.
func resolve(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p
	}
	return filepath.Join(resolve(parent), filepath.Base(p))
}
