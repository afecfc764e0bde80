package home

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/home/receipt"
)

// shimMarker starts the comment line that identifies a piship shim of id;
// a file without it is never replaced or removed.
func shimMarker(id string) string { return "piship command shim for " + id + ":" }

// shQuote quotes s for POSIX sh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// launchVerb is what goes between the launcher and the id: nothing for
// the dedicated launcher binary (piship-launch ID -- ARGS), the launch
// subcommand for the piship binary (piship launch ID -- ARGS).
func launchVerb(launcher string) string {
	base := strings.TrimSuffix(strings.ToLower(filepath.Base(launcher)), ".exe")
	if base == "piship-launch" {
		return " "
	}
	return " launch "
}

// ShimScript is the POSIX sh command shim of id.
func ShimScript(launcher, id string, h receipt.Homes) string {
	return "#!/bin/sh\n" +
		"# " + shimMarker(id) + " runs the active release through piship launch.\n" +
		"# Written by piship install; piship uninstall removes it.\n" +
		receipt.EnvInstallHome + "=" + shQuote(h.Install) + "\n" +
		receipt.EnvBinHome + "=" + shQuote(h.Bin) + "\n" +
		receipt.EnvStateHome + "=" + shQuote(h.State) + "\n" +
		"export " + receipt.EnvInstallHome + " " + receipt.EnvBinHome + " " + receipt.EnvStateHome + "\n" +
		"exec " + shQuote(launcher) + launchVerb(launcher) + shQuote(id) + " -- \"$@\"\n"
}

// ShimCmd is the Windows command shim of id (<command>.cmd).
func ShimCmd(launcher, id string, h receipt.Homes) string {
	esc := func(s string) string { return strings.ReplaceAll(s, "%", "%%") }
	return "@echo off\r\n" +
		"rem " + shimMarker(id) + " runs the active release through piship launch.\r\n" +
		"setlocal\r\n" +
		"set \"" + receipt.EnvInstallHome + "=" + esc(h.Install) + "\"\r\n" +
		"set \"" + receipt.EnvBinHome + "=" + esc(h.Bin) + "\"\r\n" +
		"set \"" + receipt.EnvStateHome + "=" + esc(h.State) + "\"\r\n" +
		"\"" + esc(launcher) + "\"" + launchVerb(launcher) + id + " -- %*\r\n" +
		"exit /b %ERRORLEVEL%\r\n"
}

func shimPaths(binHome, command string) []string {
	return []string{filepath.Join(binHome, command), filepath.Join(binHome, command+".cmd")}
}

// writeShims writes <bin>/<command> and, for a win32 target,
// <bin>/<command>.cmd, each through a temporary sibling and a rename. A
// file there that is not a piship shim of id is refused, not replaced.
func (o *Options) writeShims(id, command, target string) ([]string, error) {
	launcher, err := o.launcher()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Homes.Bin, 0o755); err != nil {
		return nil, receipt.Errorf(receipt.CodeUnavailable, "cannot create the bin home %s: %w", o.Homes.Bin, err)
	}
	paths := shimPaths(o.Homes.Bin, command)
	files := []struct {
		path, text string
		mode       os.FileMode
	}{{paths[0], ShimScript(launcher, id, o.Homes), 0o755}}
	if strings.HasPrefix(target, "win32-") {
		files = append(files, struct {
			path, text string
			mode       os.FileMode
		}{paths[1], ShimCmd(launcher, id, o.Homes), 0o755})
	}
	var written []string
	for _, f := range files {
		if old, err := atomicfs.ReadRegular(f.path, 0); err == nil {
			if bytes.Equal(old, []byte(f.text)) {
				written = append(written, f.path)
				continue
			}
			if !bytes.Contains(old, []byte(shimMarker(id))) {
				return nil, receipt.Errorf(receipt.CodeUnavailable, "%s exists and is not a piship command shim of %s: remove or rename it, then install again", f.path, id)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, receipt.Errorf(receipt.CodeUnavailable, "cannot read %s: %w", f.path, err)
		}
		if err := o.writeFile(f.path, []byte(f.text), f.mode); err != nil {
			return nil, receipt.Errorf(receipt.CodeUnavailable, "cannot write the command shim %s: %w", f.path, err)
		}
		written = append(written, f.path)
	}
	return written, nil
}

// removeShims removes <bin>/<command>(.cmd) when they are shims of id.
func (o *Options) removeShims(id, command string) []string {
	var removed []string
	for _, p := range shimPaths(o.Homes.Bin, command) {
		if isShimOf(p, id) && os.Remove(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

func isShimOf(path, id string) bool {
	f, err := atomicfs.OpenRegular(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, _ := f.Read(buf)
	return bytes.Contains(buf[:n], []byte(shimMarker(id)))
}

// writeFile replaces path with data through a temporary sibling.
func (o *Options) writeFile(path string, data []byte, mode os.FileMode) error {
	return atomicfs.WriteFile(path, data, mode, atomicfs.Options{Renamer: *o.Renamer})
}

// checkShims checks the command shim(s) of the active release r: a
// missing one is recreated, one that is not what piship writes (though it
// carries piship's marker) rewritten, both reported as found and
// repaired; one that piship wrote for another launcher or homes is
// rewritten as a routine refresh; a file that is not a piship shim of id
// is reported and left alone.
func (o *Options) checkShims(rep *DoctorReport, id string, r *receipt.Release) {
	launcher, err := o.launcher()
	if err != nil {
		rep.found(DoctorShimMissing, o.Homes.Bin, "cannot tell what the shim of %s should be: %v", id, err)
		return
	}
	paths := shimPaths(o.Homes.Bin, r.Command)
	type want struct {
		path, text string
		parse      func(string) (string, receipt.Homes, bool)
		write      func(string, receipt.Homes) string
	}
	ws := []want{{paths[0], ShimScript(launcher, id, o.Homes), func(s string) (string, receipt.Homes, bool) { return parseShimScript(s, id) }, func(l string, h receipt.Homes) string { return ShimScript(l, id, h) }}}
	if strings.HasPrefix(r.Target, "win32-") {
		ws = append(ws, want{paths[1], ShimCmd(launcher, id, o.Homes), func(s string) (string, receipt.Homes, bool) { return parseShimCmd(s, id) }, func(l string, h receipt.Homes) string { return ShimCmd(l, id, h) }})
	}
	var rewrite []DoctorItem
	for _, w := range ws {
		b, err := atomicfs.ReadRegular(w.path, 0)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			rep.found(DoctorShimMissing, w.path, "the command shim of %s is missing: the command does not run", id)
			rewrite = append(rewrite, DoctorItem{DoctorShimMissing, w.path, "recreated"})
		case err != nil:
			rep.found(DoctorShimModified, w.path, "cannot read the command shim of %s: %v", id, err)
		case string(b) == w.text:
		case !bytes.Contains(b, []byte(shimMarker(id))):
			rep.found(DoctorShimForeign, w.path, "this is not a piship command shim of %s, so %s does not run it: remove or rename it, then run piship doctor %s", id, r.Command, id)
		default:
			if l, h, ok := w.parse(string(b)); ok && w.write(l, h) == string(b) {
				rewrite = append(rewrite, DoctorItem{DoctorShimOutdated, w.path, fmt.Sprintf("rewritten: it ran %s with homes %s, %s, %s", l, h.Install, h.Bin, h.State)})
				continue
			}
			rep.found(DoctorShimModified, w.path, "the command shim of %s is not what piship writes: something changed it", id)
			rewrite = append(rewrite, DoctorItem{DoctorShimModified, w.path, "rewritten"})
		}
	}
	if len(rewrite) == 0 {
		return
	}
	if _, err := o.writeShims(id, r.Command, r.Target); err != nil {
		for _, it := range rewrite {
			rep.found(it.Code, it.Path, "could not be rewritten: %v", err)
		}
		return
	}
	rep.Repaired = append(rep.Repaired, rewrite...)
}

// parseShimScript reads the launcher and homes out of a POSIX sh shim of
// id as ShimScript writes it (false when it is not one).
func parseShimScript(s, id string) (string, receipt.Homes, bool) {
	var h receipt.Homes
	var launcher string
	vals := map[string]*string{receipt.EnvInstallHome: &h.Install, receipt.EnvBinHome: &h.Bin, receipt.EnvStateHome: &h.State}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && vals[k] != nil {
			if u, ok := shUnquote(v); ok {
				*vals[k] = u
			}
		}
		if rest, ok := strings.CutPrefix(line, "exec "); ok {
			if l, _, ok := shWord(rest); ok {
				launcher = l
			}
		}
	}
	ok := launcher != "" && h.Install != "" && h.Bin != "" && h.State != ""
	return launcher, h, ok
}

// shUnquote undoes shQuote ("" and false when s is not its output).
func shUnquote(s string) (string, bool) {
	w, rest, ok := shWord(s)
	return w, ok && rest == ""
}

// shWord reads one word of shQuote's output from the start of s: quoted
// runs and escaped quotes, up to a space or the end. It returns the word
// and what follows it.
func shWord(s string) (string, string, bool) {
	var b strings.Builder
	i := 0
	for i < len(s) && s[i] != ' ' {
		switch {
		case s[i] == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", "", false
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case strings.HasPrefix(s[i:], `\'`):
			b.WriteByte('\'')
			i += 2
		default:
			return "", "", false
		}
	}
	return b.String(), s[i:], i > 0
}

// parseShimCmd reads the launcher and homes out of a Windows shim of id as
// ShimCmd writes it.
func parseShimCmd(s, id string) (string, receipt.Homes, bool) {
	var h receipt.Homes
	var launcher string
	unesc := func(v string) string { return strings.ReplaceAll(v, "%%", "%") }
	vals := map[string]*string{receipt.EnvInstallHome: &h.Install, receipt.EnvBinHome: &h.Bin, receipt.EnvStateHome: &h.State}
	for _, line := range strings.Split(s, "\r\n") {
		if rest, ok := strings.CutPrefix(line, `set "`); ok {
			if k, v, ok := strings.Cut(strings.TrimSuffix(rest, `"`), "="); ok && vals[k] != nil {
				*vals[k] = unesc(v)
			}
		}
		if rest, ok := strings.CutPrefix(line, `"`); ok {
			if l, _, ok := strings.Cut(rest, `"`); ok {
				launcher = unesc(l)
			}
		}
	}
	ok := launcher != "" && h.Install != "" && h.Bin != "" && h.State != ""
	return launcher, h, ok
}
