package home

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/tracing/phase"
)

// RepairResult is what a repair did.
type RepairResult struct {
	ID, Version string
	// Source is where the good copies came from: the kept archive, the
	// archive or directory given; "" when nothing needed repair.
	Source string
	// Restored are the files written back (release-relative slash
	// paths); Removed the payload files that are not the release's.
	Restored, Removed []string
	// Modes are the paths of what decides what runs (runSurface) whose
	// mode was restored, each "path (old -> new)"; Records the release
	// records whose entry or command was restored from their lock.
	Modes, Records []string
}

// Repair restores the active release of id to what was installed: every
// file of its version directory that is missing or changed (the payload
// against its inventory, the inventory, the lock and release.json against
// the receipt's digests, the other release files against checksums.txt)
// is written again from the release's archive, and a payload file the
// inventory does not list is removed. from is the archive (.tar.zst, or an
// earlier piship's .tar.gz) or a
// directory (a release directory, or a payload) to take the files from;
// "" takes the archive of the release kept in apps/<id>/.downloads (an
// update's download), found by the receipt's archive digest, and when
// none is kept fetches it there from the distribution's TUF repository,
// verified as an update's download (fetchFromRepository). Each file
// is verified against its digest before it is placed, by a sibling
// temporary file and a rename, so a killed repair leaves every file
// either as it was or restored: the installation stays launchable or
// repairable. The state directory and everything outside the version
// directory are not touched.
//
// Then it restores the modes of everything that decides what runs
// (runSurface: the home, the receipt, apps/<id>/, the active and previous
// version directories, trust state, the kept launcher, the shims) to what
// piship writes, the executable bits as the receipt recorded them
// (restoreModes, one chmod per path), and a record of the active or
// previous release whose entry or command is not its lock's from the lock
// (restoreRecords: one receipt write under the launch gate). Neither
// needs a source.
//
// The rule while the release runs (a live lease): a repair that only
// restores missing files goes ahead, since no running process has them
// open; one that would replace or remove a file present is refused
// before anything is written (CONFIG_UNAVAILABLE naming the run), since
// the running process may have it loaded.
func Repair(ctx context.Context, o Options, id, from string) (*RepairResult, error) {
	// The copies are read only when something needs repair, but a from
	// that is not there is said at once, not at the next damage.
	if from != "" {
		if _, err := os.Stat(from); err != nil {
			return nil, receipt.Errorf(receipt.CodeConfigInvalid, "--from %s: %v: give the release's archive (%s) or directory", from, err, archive.V2.Ext())
		}
	}
	unlock, err := o.maintain(ctx, id)
	if err != nil {
		return nil, err
	}
	home := o.Homes.Install
	defer unlock()
	rc, err := receipt.Read(home, id)
	if err != nil {
		return nil, err
	}
	rec, err := rc.ActiveRelease()
	if err != nil {
		return nil, err
	}
	if err := receipt.CheckInside(home, id, rec); err != nil {
		return nil, err
	}
	res := &RepairResult{ID: id, Version: rec.Version}
	sweepRepairLeftovers(home, id, rec.Dir)

	_, ph := phase.Start(ctx, "scan")
	have, err := release.Scan(ctx, rec.Dir)
	ph.End(err)
	if err != nil {
		return nil, receipt.Errorf(receipt.CodeUnavailable, "cannot read %s: %v", rec.Dir, err)
	}
	src := &repairSource{o: &o, id: id, rec: rec, from: from}
	defer src.close()
	want, err := expectedFiles(ctx, rec, have, src)
	if err != nil {
		return nil, err
	}
	var damaged, unexpected []string
	for p, sum := range want {
		if have[p] != sum {
			damaged = append(damaged, p)
		}
	}
	for p := range have {
		if _, ok := want[p]; !ok && strings.HasPrefix(p, "payload/") {
			unexpected = append(unexpected, p)
		}
	}
	slices.Sort(damaged)
	slices.Sort(unexpected)
	// Modes (of everything that decides what runs, runSurface) and the
	// records' entry and command (against their locks) are restored
	// after the files; whether there is anything to do is known now.
	modes := modeFindings(o.runSurface(id, rc))
	drift := driftedRecords(home, id, rc)
	if len(damaged) == 0 && len(unexpected) == 0 && len(modes) == 0 && len(drift) == 0 {
		o.progressf("%s %s: nothing to repair", id, rec.Version)
		return res, nil
	}

	live, err := receipt.LiveLeasesOf(home, id, rec.Version)
	if err != nil {
		return nil, err
	}
	var running []string
	for _, l := range live {
		running = append(running, l.String())
	}
	if len(running) > 0 {
		var present []string
		for _, p := range damaged {
			if _, ok := have[p]; ok {
				present = append(present, p)
			}
		}
		present = append(present, unexpected...)
		if len(present) > 0 {
			return nil, receipt.Errorf(receipt.CodeUnavailable, "%s %s is running (%s): repairing it would replace %s it may have loaded (%s): quit it, then run piship repair %s", id, rec.Version, strings.Join(running, "; "), canon.Count(len(present), "file"), summarize(present), id)
		}
	}

	// Every good copy is checked before the first is placed: a source
	// that is not this release's changes nothing.
	cctx, ph := phase.Start(ctx, "check source")
	var wrong []string
	for _, p := range damaged {
		if err := src.check(cctx, p, want[p]); err != nil {
			if receipt.CodeOf(err) != receipt.CodeIntegrity {
				ph.End(err)
				return nil, err
			}
			wrong = append(wrong, p)
		}
	}
	ph.End(nil)
	if len(wrong) > 0 {
		return nil, receipt.Errorf(receipt.CodeIntegrity, "%s does not hold %s %s's copy of %s (%s): nothing was changed; repair from the archive of %s %s", src.shown, id, rec.Version, canon.Count(len(wrong), "file"), summarize(wrong), id, rec.Version)
	}

	rctx, ph := phase.Start(ctx, "restore")
	for _, p := range damaged {
		if err := rctx.Err(); err != nil {
			ph.End(err)
			return res, err
		}
		if err := src.restore(rctx, p, want[p]); err != nil {
			ph.End(err)
			return res, err
		}
		res.Restored = append(res.Restored, p)
	}
	for _, p := range unexpected {
		if err := os.Remove(filepath.Join(rec.Dir, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			ph.End(err)
			return res, receipt.Errorf(receipt.CodeUnavailable, "cannot remove %s: %v", p, err)
		}
		res.Removed = append(res.Removed, p)
	}
	ph.SetInt("restored", int64(len(res.Restored)))
	ph.End(nil)
	res.Source = src.shown
	if len(res.Restored)+len(res.Removed) > 0 {
		o.progressf("%s %s: restored %s, removed %d, from %s", id, rec.Version, canon.Count(len(res.Restored), "file"), len(res.Removed), src.shown)
	}
	// The modes, judged again now that the files are back (a restored
	// file has the mode of its source's copy, less any unsafe bit).
	if res.Modes, err = restoreModes(modeFindings(o.runSurface(id, rc))); err != nil {
		return res, err
	}
	if len(res.Modes) > 0 {
		o.progressf("%s %s: restored the mode of %s", id, rec.Version, canon.Count(len(res.Modes), "path"))
	}
	if res.Records, err = o.restoreRecords(ctx, id); err != nil {
		return res, err
	}
	for _, r := range res.Records {
		o.progressf("%s: restored the receipt's record from the lock: %s", id, r)
	}
	return res, nil
}

// repairTemp matches the temporary files restore writes beside a file.
var repairTemp = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\..+\.repair-[0-9a-f]{8}$`) })

// sweepRepairLeftovers removes what a killed repair left: its temporary
// files in the version directory and its archive staging directories.
// The caller holds the maintenance lock, so no repair is running.
func sweepRepairLeftovers(home, id, dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && repairTemp().MatchString(d.Name()) {
			os.Remove(p)
		}
		return nil
	})
	left, _ := filepath.Glob(filepath.Join(receipt.AppDir(home, id), receipt.StagingPrefix+"repair-*"))
	for _, p := range left {
		os.RemoveAll(p)
	}
}

func summarize(ps []string) string {
	if len(ps) > 5 {
		return strings.Join(ps[:5], ", ") + fmt.Sprintf(" and %d more", len(ps)-5)
	}
	return strings.Join(ps, ", ")
}

// expectedFiles is every file the version directory must hold with its
// digest, from what the receipt vouches for: release.json and the
// inventory by the receipt's digests (the installed copy when it is the
// one, else the source's), the payload by the inventory, the other
// release files by a checksums.txt that lists release.json with the
// receipt's digest.
func expectedFiles(ctx context.Context, rec *receipt.Release, have map[string]string, src *repairSource) (map[string]string, error) {
	want := map[string]string{}
	trusted := func(p, sum string) ([]byte, error) {
		if sum == "" { // an older receipt: the installed copy is all there is
			return atomicfs.ReadRegular(filepath.Join(rec.Dir, filepath.FromSlash(p)), 0)
		}
		want[p] = sum
		if have[p] == sum {
			return atomicfs.ReadRegular(filepath.Join(rec.Dir, filepath.FromSlash(p)), 0)
		}
		return src.read(ctx, p, sum)
	}
	raw, err := trusted(release.InventoryPath, rec.InventorySHA256)
	if err != nil {
		return nil, err
	}
	inv, err := release.ParseInventory(raw)
	if err != nil {
		return nil, receipt.Errorf(receipt.CodeIntegrity, "%v: reinstall the release", err)
	}
	for p, sum := range inv {
		want["payload/"+p] = sum
	}
	if rec.Source == receipt.SourcePayload {
		return want, nil
	}
	if _, err := trusted("release.json", rec.ReleaseSHA256); err != nil {
		return nil, err
	}
	// checksums.txt: the installed one if it lists release.json as the
	// receipt recorded it, else the source's under the same condition.
	sums, err := checksums(filepath.Join(rec.Dir, release.ChecksumsName), rec.ReleaseSHA256)
	if err != nil {
		data, serr := src.readAny(ctx, release.ChecksumsName)
		if serr != nil {
			return nil, err
		}
		if sums, err = parseChecksums(data, rec.ReleaseSHA256); err != nil {
			return nil, err
		}
		want[release.ChecksumsName] = canon.SHA256Hex(data)
	} else {
		want[release.ChecksumsName] = have[release.ChecksumsName]
	}
	for p, sum := range sums {
		if _, ok := want[p]; !ok {
			want[p] = sum
		}
	}
	return want, nil
}

func checksums(path, releaseSHA string) (map[string]string, error) {
	data, err := atomicfs.ReadRegular(path, 0)
	if err != nil {
		return nil, err
	}
	return parseChecksums(data, releaseSHA)
}

func parseChecksums(data []byte, releaseSHA string) (map[string]string, error) {
	out, err := release.ParseChecksums(data)
	if err != nil {
		return nil, receipt.Errorf(receipt.CodeIntegrity, "%v", err)
	}
	if releaseSHA != "" && out["release.json"] != releaseSHA {
		return nil, receipt.Errorf(receipt.CodeIntegrity, "%s does not list the installed release.json", release.ChecksumsName)
	}
	return out, nil
}

// repairSource is where a repair's good copies come from, opened on first
// use: a directory (a release directory or a payload), or an archive
// extracted once into apps/<id>/.staging-repair-* (with install's
// archive rules; removed at the end, or by doctor after a kill).
type repairSource struct {
	o       *Options
	id      string
	rec     *receipt.Release
	from    string
	dir     string // release-directory layout: payload/ below it
	payload bool   // dir is a payload (no release files)
	staging string
	shown   string
	err     error
	opened  bool
}

func (s *repairSource) open(ctx context.Context) error {
	if s.opened {
		return s.err
	}
	s.opened = true
	s.err = s.doOpen(ctx)
	return s.err
}

func (s *repairSource) doOpen(ctx context.Context) error {
	from := s.from
	if from == "" {
		kept, err := s.keptArchive()
		if err != nil {
			// None kept: fetched from the distribution's TUF repository.
			if kept, err = s.fetchFromRepository(ctx, err); err != nil {
				return err
			}
		}
		from = kept
	}
	fi, err := os.Stat(from)
	if err != nil {
		return receipt.Errorf(receipt.CodeUnavailable, "--from %s: %v", from, err)
	}
	s.shown = from
	if fi.IsDir() {
		s.dir = from
		if _, err := os.Stat(filepath.Join(from, "payload", "metadata", "inventory.json")); err != nil {
			if _, perr := os.Stat(filepath.Join(from, "metadata", "inventory.json")); perr != nil {
				return receipt.Errorf(receipt.CodeConfigInvalid, "--from %s is neither a release directory (payload/metadata/inventory.json) nor a payload (metadata/inventory.json)", from)
			}
			s.payload = true
		}
		return nil
	}
	f, err := atomicfs.OpenRegular(from)
	if err != nil {
		return receipt.Errorf(receipt.CodeUnavailable, "--from %s: %v", from, err)
	}
	defer f.Close()
	s.staging = filepath.Join(receipt.AppDir(s.o.Homes.Install, s.id), receipt.StagingPrefix+"repair-"+canon.RandomHex(4))
	ectx, ph := phase.Start(ctx, "extract")
	_, err = archive.Extract(ectx, f, s.staging, archive.Limits{})
	ph.End(err)
	if err != nil {
		return receipt.Errorf(receipt.CodeIntegrity, "%s is not a release archive piship can read: %v", from, err)
	}
	s.dir = s.staging
	return nil
}

// keptArchive finds the release's archive in apps/<id>/.downloads by the
// receipt's archive digest.
func (s *repairSource) keptArchive() (string, error) {
	dir := receipt.DownloadsDir(s.o.Homes.Install, s.id)
	none := receipt.Errorf(receipt.CodeUnavailable, "no archive of %s %s is kept in %s: run piship repair %s --from <its archive, or its release directory>", s.id, s.rec.Version, dir, s.id)
	if s.rec.ArchiveSHA256 == "" {
		return "", none
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if _, ok := archive.FormatOfName(e.Name()); !e.Type().IsRegular() || !ok {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if sum, err := cache.HashFile(p); err == nil && sum == s.rec.ArchiveSHA256 {
			return p, nil
		}
	}
	return "", none
}

// path is where the source holds release path p ("" when it cannot).
func (s *repairSource) path(p string) string {
	if s.payload {
		rel, ok := strings.CutPrefix(p, "payload/")
		if !ok {
			return ""
		}
		return filepath.Join(s.dir, filepath.FromSlash(rel))
	}
	return filepath.Join(s.dir, filepath.FromSlash(p))
}

func (s *repairSource) readAny(ctx context.Context, p string) ([]byte, error) {
	sp, err := s.source(ctx, p)
	if err != nil {
		return nil, err
	}
	return atomicfs.ReadRegular(sp, 0)
}

// source opens the source on first use and returns where it holds p.
func (s *repairSource) source(ctx context.Context, p string) (string, error) {
	if err := s.open(ctx); err != nil {
		return "", err
	}
	sp := s.path(p)
	if sp == "" {
		return "", receipt.Errorf(receipt.CodeUnavailable, "%s has no %s (a payload directory holds no release files): repair from the release's archive", s.shown, p)
	}
	return sp, nil
}

// read returns the source's p, which must have digest sum.
func (s *repairSource) read(ctx context.Context, p, sum string) ([]byte, error) {
	data, err := s.readAny(ctx, p)
	if err != nil {
		return nil, err
	}
	if got := canon.SHA256Hex(data); got != sum {
		return nil, receipt.Errorf(receipt.CodeIntegrity, "%s: %s is not the installed release's (sha256 %s, want %s): repair from the archive of %s %s", s.shown, p, got, sum, s.id, s.rec.Version)
	}
	return data, nil
}

// check hashes the source's p against sum.
func (s *repairSource) check(ctx context.Context, p, sum string) error {
	sp, err := s.source(ctx, p)
	if err != nil {
		return err
	}
	got, err := cache.HashFile(sp)
	if err != nil || got != sum {
		return receipt.Errorf(receipt.CodeIntegrity, "%s: %s is not the installed release's", s.shown, p)
	}
	return nil
}

// restore writes p from the source beside its place, verifying sum while
// copying, and renames it there.
func (s *repairSource) restore(ctx context.Context, p, sum string) error {
	sp, err := s.source(ctx, p)
	if err != nil {
		return err
	}
	in, err := atomicfs.OpenRegular(sp)
	if err != nil {
		return receipt.Errorf(receipt.CodeIntegrity, "%s has no %s (%v): repair from the archive of %s %s", s.shown, p, err, s.id, s.rec.Version)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return receipt.Errorf(receipt.CodeIntegrity, "%s: %s is not a regular file", s.shown, p)
	}
	dst := filepath.Join(s.rec.Dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return receipt.Errorf(receipt.CodeUnavailable, "cannot create %s: %v", filepath.Dir(dst), err)
	}
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".repair-"+canon.RandomHex(4))
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm()&0o755)
	if err != nil {
		return receipt.Errorf(receipt.CodeUnavailable, "cannot write beside %s: %v", dst, err)
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && hex.EncodeToString(h.Sum(nil)) != sum {
		err = receipt.Errorf(receipt.CodeIntegrity, "%s: %s is not the installed release's (its sha256 is %s, want %s): repair from the archive of %s %s", s.shown, p, hex.EncodeToString(h.Sum(nil)), sum, s.id, s.rec.Version)
	}
	if err == nil {
		err = s.o.Renamer.Do(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		if receipt.CodeOf(err) != "" {
			return err
		}
		return receipt.Errorf(receipt.CodeUnavailable, "cannot restore %s: %v", dst, err)
	}
	return nil
}

func (s *repairSource) close() {
	if s.staging != "" {
		os.RemoveAll(s.staging)
	}
}
