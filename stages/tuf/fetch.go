package tuf

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"path"
	"path/filepath"
	"strings"

	"piship.dev/piship/stages/updatesource"
)

// FetchRelease downloads the archive whose sha256 is archiveSHA256 from
// the repository into o.DownloadDir: what `piship repair` does when no
// copy of the installed release is kept. It is verified as Update's
// download is: go-tuf's updater refreshes the metadata from the trusted
// root in o.TrustDir (or the pinned initial root, o.ExpectRootSHA256) with
// the same fetcher, bounds and checks, then the archive must be a target
// of the verified targets role on o.Channel for o.Target with that sha256,
// and it is streamed to a temporary sibling and renamed into place only
// when its length and sha256 are the signed ones. The trusted metadata is
// read and not written (as Update's Check): a repair does not move an
// installation's trust, an update does. o.Active and o.Check are not used.
func FetchRelease(ctx context.Context, o UpdateOptions, archiveSHA256 string) (*Result, error) {
	if err := o.check(true); err != nil {
		return nil, err
	}
	switch {
	case len(archiveSHA256) != 64 || strings.Trim(archiveSHA256, "0123456789abcdef") != "":
		return nil, configErr("the archive digest %q is not 64 lowercase hex digits", archiveSHA256)
	}
	o.Check = true // the trusted metadata is read, never written
	up, f, err := refresh(ctx, o, o.TrustDir)
	if err != nil {
		return nil, err
	}
	tm := up.GetTrustedMetadataSet()
	res := &Result{
		RootVersion: tm.Root.Signed.Version, TimestampVersion: tm.Timestamp.Signed.Version,
		SnapshotVersion: tm.Snapshot.Signed.Version, TargetsVersion: tm.Targets[RoleTargets].Signed.Version,
		TimestampExpires: tm.Timestamp.Signed.Expires,
	}
	for p, tf := range up.GetTopLevelTargets() {
		if tf.Custom == nil || hex.EncodeToString(tf.Hashes["sha256"]) != archiveSHA256 {
			continue
		}
		var c Custom
		if err := json.Unmarshal(*tf.Custom, &c); err != nil || c.Channel != o.Channel || c.For() != o.Target || c.ArchiveFormat() == "" {
			continue
		}
		if !plainTarget(p, c.Channel) {
			continue
		}
		base := path.Base(p)
		res.Release, res.TargetPath, res.Length, res.SHA256 = c, p, tf.Length, archiveSHA256
		if c.RegistryBlob != "" { // served from a registry: the update's download and its checks
			if err := download(ctx, f, p, tf.Length, archiveSHA256, o.DownloadDir, "archive", c.RegistryBlob); err != nil {
				return nil, err
			}
			res.Archive = filepath.Join(o.DownloadDir, base)
			return res, ctx.Err()
		}
		dir, _ := path.Split(p)
		sub, err := f.src.Sub("targets/" + strings.TrimSuffix(dir, "/"))
		if err != nil {
			return nil, err
		}
		dst := filepath.Join(o.DownloadDir, base)
		if err := sub.Download(ctx, archiveSHA256+"."+base, dst, tf.Length, archiveSHA256); err != nil {
			return nil, updateErr(ReasonIntegrity, err, "%s is not the archive the targets role signs for %s: %v; nothing was written", f.location("targets/"+dir+archiveSHA256+"."+base), p, err)
		}
		res.Archive = dst
		return res, ctx.Err()
	}
	return nil, updateErr(ReasonNoRelease, nil, "%s publishes no release with sha256 %s on channel %s for target %s (targets version %d): the publisher removed it, or the installed release was never published there", f.src, archiveSHA256, o.Channel, o.Target, res.TargetsVersion)
}

// blobSource opens the registry blob target p names
// (Custom.RegistryBlob), which must be the blob of the sha256 the targets
// role signs for p: nothing the registry says is trusted, and a URL that
// names another digest is the repository's mistake, refused before any
// request.
func (f *fetcher) blobSource(blob, sha, p string) (*updatesource.Source, string, error) {
	got, err := updatesource.ParseBlobURL(blob)
	if err != nil {
		if e, ok := updatesource.AsError(err); ok && e.Code == updatesource.CodeNetworkDenied {
			return nil, "", err
		}
		return nil, "", updateErr(ReasonMalformed, err, "target %s of %s names the registry blob %s, which piship cannot fetch (%v): report it to the publisher", p, f.src, blob, err)
	}
	if got != sha {
		return nil, "", updateErr(ReasonMalformed, nil, "target %s of %s names the registry blob %s, not the blob of the sha256 it signs (%s): the repository is inconsistent; report it to the publisher", p, f.src, blob, sha)
	}
	return updatesource.OpenBlob(blob, f.opts)
}
