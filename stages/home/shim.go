package home

import (
	"bytes"
	"errors"
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
