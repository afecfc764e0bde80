package home

import (
	"cmp"
	"context"
	"errors"
	"path/filepath"

	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/tuf"
	"piship.dev/piship/stages/updatesource"
	"piship.dev/piship/tracing/phase"
)

// fetchFromRepository is the source of a repair without --from when no
// archive of the release is kept: the archive is fetched from the
// distribution's TUF repository (the updates block of the installed lock,
// which must be the lock the receipt recorded) into apps/<id>/.downloads,
// found by the receipt's archive digest and verified as an update's
// download is (tuf.FetchRelease: the same client, the trusted metadata
// read, not moved). It is then the kept archive of the next repair. none
// is the refusal to return when the release cannot be fetched this way
// (a directory install, a lock without updates).
func (s *repairSource) fetchFromRepository(ctx context.Context, none error) (string, error) {
	rec := s.rec
	if rec.ArchiveSHA256 == "" {
		return "", none // a directory install: no archive was ever published for it
	}
	raw, err := installedLock(rec)
	if errors.Is(err, errLockModified) {
		return "", receipt.Errorf(receipt.CodeUnavailable, "no archive of %s %s is kept, and its lock %s is damaged, so its update repository is not known: run piship repair %s --from <its archive, or its release directory>", s.id, rec.Version, filepath.Join(rec.Payload, distribution.LockFileName), s.id)
	}
	if err != nil {
		return "", receipt.Errorf(receipt.CodeUnavailable, "no archive of %s %s is kept, and the lock that names its update repository cannot be read (%v): run piship repair %s --from <its archive, or its release directory>", s.id, rec.Version, err, s.id)
	}
	lock, err := distribution.ParseLock(raw)
	if err != nil {
		return "", receipt.Errorf(receipt.CodeUnavailable, "no archive of %s %s is kept, and its lock cannot be read (%v): run piship repair %s --from <its archive, or its release directory>", s.id, rec.Version, err, s.id)
	}
	root, err := lock.UpdateRoot()
	if err != nil || lock.Updates == nil || lock.Updates.Source == "" {
		return "", none
	}
	limits, err := updatesource.ParseLimits("", "")
	if err != nil {
		return "", err
	}
	dir := receipt.DownloadsDir(s.o.Homes.Install, s.id)
	fctx, ph := phase.Start(ctx, "tuf fetch")
	res, err := tuf.FetchRelease(fctx, tuf.UpdateOptions{
		Repository: lock.Updates.Source, TrustDir: receipt.TrustDir(s.o.Homes.Install, s.id), ExpectRootSHA256: root,
		Channel: cmp.Or(rec.Channel, lock.Updates.Channel, "stable"), Target: cmp.Or(rec.Target, platform.HostTarget()),
		DownloadDir: dir, Limits: limits,
	}, rec.ArchiveSHA256)
	ph.End(err)
	if err != nil {
		code, msg := receipt.CodeUnavailable, err.Error()
		var te *tuf.Error
		if errors.As(err, &te) {
			code, msg = te.Code, te.Msg
		}
		return "", receipt.Errorf(code, "no archive of %s %s is kept in %s, and fetching it from %s failed: %s; or run piship repair %s --from <its archive, or its release directory>", s.id, rec.Version, dir, lock.Updates.Source, msg, s.id)
	}
	s.o.progressf("%s %s: fetched %s from %s (verified by its TUF repository)", s.id, rec.Version, filepath.Base(res.Archive), lock.Updates.Source)
	return res.Archive, nil
}
