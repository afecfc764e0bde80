package home

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/home/receipt"
)

// What an install needs beyond the bytes of the release's files.
const (
	// entryOverhead is counted for every file and directory: the block a
	// file system rounds each up to (4 KiB on ext4, APFS and NTFS), which
	// is most of a node_modules tree's size on disk.
	entryOverhead = 4 << 10
	// spaceMargin covers the receipt, its temp sibling and the shims.
	spaceMargin = 1 << 20
)

// checkSpace refuses, before anything is written, an install the file
// system of appDir cannot hold (asked of its nearest existing directory,
// so it creates none): the expanded size of the release (an
// archive's declaration, see archive.Declared, or a directory's files),
// each file and directory counted a block more, plus o.LauncherBytes and
// spaceMargin. An archive without a declaration (written by an older
// piship) cannot say its expanded size: it needs twice its bytes, as
// before, plus the launcher, and Extract's ceiling (archive.Limits)
// bounds what it writes. It opens the archive (source.open), and the
// extraction goes on from that read, held to the declaration it sized
// on. The refusal is CONFIG_UNAVAILABLE.
func (o *InstallOptions) checkSpace(s *source, appDir string) error {
	var need int64
	var what string
	switch {
	case s.kind == receipt.SourceArchive:
		if err := s.open(o.archiveLimits()); err != nil {
			return err
		}
		d := s.archive.Declared()
		if d == nil {
			need = 2*s.size + o.LauncherBytes
			what = fmt.Sprintf("twice the %d bytes of the archive, which does not declare its expanded size, plus %d for the launcher", s.size, o.LauncherBytes)
			break
		}
		need = d.Bytes + int64(d.Files+d.Dirs)*entryOverhead + o.LauncherBytes + spaceMargin
		what = fmt.Sprintf("the archive expands to %d bytes in %d files and %d directories, each counted %d bytes more, plus %d for the launcher and %d of margin",
			d.Bytes, d.Files, d.Dirs, entryOverhead, o.LauncherBytes, spaceMargin)
	case s.delta != nil:
		h := s.delta
		need = h.Bytes + int64(h.Files+h.Dirs)*entryOverhead + o.LauncherBytes + spaceMargin
		what = fmt.Sprintf("the delta builds %d bytes in %d files and %d directories beside the installed version, each counted %d bytes more, plus %d for the launcher and %d of margin",
			h.Bytes, h.Files, h.Dirs, entryOverhead, o.LauncherBytes, spaceMargin)
	case s.tree != nil:
		t := s.tree
		need = t.bytes + int64(len(t.files)+len(t.dirs))*entryOverhead + o.LauncherBytes + spaceMargin
		what = fmt.Sprintf("the release holds %d bytes in %d files and %d directories, each counted %d bytes more, plus %d for the launcher and %d of margin",
			t.bytes, len(t.files), len(t.dirs), entryOverhead, o.LauncherBytes, spaceMargin)
	default:
		return nil
	}
	dir := existingDir(appDir)
	free, err := o.FreeSpace(dir)
	if err != nil {
		if !errors.Is(err, errors.ErrUnsupported) {
			o.logf("warning: cannot tell the free space of %s: %v", dir, err)
		}
		return nil
	}
	if free < need {
		return receipt.Errorf(receipt.CodeUnavailable, "not enough free space to install %s %s: %d bytes free in %s, %d needed (%s): free some space, or set PISHIP_INSTALL_HOME to another file system",
			s.id, s.version, free, dir, need, what)
	}
	return nil
}

// existingDir is the nearest directory at or above path that exists: the
// file system path would be created on.
func existingDir(path string) string {
	for {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			return path
		}
		parent := filepath.Dir(path)
		if parent == path {
			return path
		}
		path = parent
	}
}

// open opens the archive s names for extraction, reading its first
// header (the declaration): checkSpace sizes on it and place extracts
// from the same read. Install closes it.
func (s *source) open(lim archive.Limits) error {
	f, err := atomicfs.OpenRegular(s.path)
	if errors.Is(err, atomicfs.ErrNotRegular) {
		return receipt.Errorf(receipt.CodeConfigInvalid, "%w", err)
	}
	if err != nil {
		return receipt.Errorf(receipt.CodeUnavailable, "cannot read %s: %w", s.path, err)
	}
	a, err := archive.Open(f, lim)
	if err != nil {
		f.Close()
		if _, ok := archive.IsIntegrity(err); ok {
			return receipt.Errorf(receipt.CodeIntegrity, "%s: %w", filepath.Base(s.path), err)
		}
		return receipt.Errorf(receipt.CodeUnavailable, "cannot read %s: %w", s.path, err)
	}
	s.file, s.archive = f, a
	return nil
}

// close closes the archive open opened, if it did.
func (s *source) close() {
	if s.archive != nil {
		s.archive.Close()
		s.file.Close()
		s.archive, s.file = nil, nil
	}
}
