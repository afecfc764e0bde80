package home

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/tuf"
)

// UpdateAbandoned is what an update that failed outside the maintenance
// lock (the TUF refresh and the download run without it) checks under
// it: when id is no longer installed (an uninstall ran meanwhile), it
// removes what the update left behind it (an empty apps/<id>/.downloads
// and apps/<id>, a trusted store it committed, its stale stages) so the
// uninstall stays complete, and returns the not-installed error to report
// instead of the failure's. Otherwise it returns nil: the failure stands.
func UpdateAbandoned(ctx context.Context, o Options, id string) error {
	home := o.Homes.Install
	unlock, err := receipt.TakeMaintenance(ctx, home, id, o.LockWait)
	if err != nil {
		return nil
	}
	defer unlock()
	if _, err := receipt.Read(home, id); !errors.Is(err, receipt.ErrNotInstalled) {
		return nil
	}
	dropTrustOfUninstalled(home, id)
	removeEmptyAppDir(receipt.AppDir(home, id))
	return receipt.Errorf(receipt.CodeUpdate, "%s is not installed in %s any more (it was uninstalled while the update ran): nothing was installed; run piship install to install it again", id, home)
}

// dropTrustOfUninstalled removes trust/<id>/ (renamed away first, as
// uninstall does) and the stale stages beside it, for an id with no
// receipt. The caller holds the maintenance lock.
func dropTrustOfUninstalled(home, id string) {
	dir := receipt.TrustDir(home, id)
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
		gone := filepath.Join(filepath.Dir(dir), receipt.UninstallingPrefix(id)+canon.RandomHex(4))
		if os.Rename(dir, gone) == nil {
			os.RemoveAll(gone)
		}
	}
	for _, p := range tuf.StaleStages(dir) {
		os.RemoveAll(p)
	}
}
