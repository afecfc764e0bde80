package tuf

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/atomicfs/swap"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/proc"
)

// The trusted metadata store moves whole. go-tuf writes each trusted file
// as it verifies it, so a kill between its writes would leave a new
// timestamp beside an old snapshot in trust/<id>/. Update therefore lets
// go-tuf work on a copy (UpdateOptions.StageDir, a sibling of TrustDir)
// and, once the refresh and the archive verified, swaps the copy and TrustDir in one
// rename (Linux's RENAME_EXCHANGE; elsewhere two renames, see commitStage).
// A reader of TrustDir sees the old store or the new one, never a mix.

// StagePrefix starts the name of a store being updated beside trustDir:
// <trust>/.<id>.updating-<pid>-<rand>, pid the updating process's. The
// refresh runs outside the install home's maintenance lock (it may wait on
// the network), so updates, installs and doctor run beside it: each update
// has a stage of its own, the exchange that commits one is atomic, and a
// stage is garbage only once its process is gone (StaleStages), as a
// killed update leaves it.
func StagePrefix(trustDir string) string {
	return filepath.Join(filepath.Dir(trustDir), "."+filepath.Base(trustDir)+".updating-")
}

// StaleStages lists the stages beside trustDir whose update is no longer
// running (its pid is gone, or the name carries none): what the next
// update, doctor and uninstall remove.
func StaleStages(trustDir string) []string {
	all, _ := filepath.Glob(StagePrefix(trustDir) + "*")
	var out []string
	for _, p := range all {
		rest := strings.TrimPrefix(p, StagePrefix(trustDir))
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || (pid != os.Getpid() && !proc.Exists(pid)) {
			out = append(out, p)
		}
	}
	return out
}

// newStage removes the stages killed updates left and returns a new one
// holding a copy of the regular files of trustDir (none when trustDir
// does not exist yet).
func newStage(trustDir string) (string, error) {
	for _, p := range StaleStages(trustDir) {
		if err := os.RemoveAll(p); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(filepath.Dir(trustDir), 0o755); err != nil {
		return "", err
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	stage := StagePrefix(trustDir) + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(rnd[:])
	if err := os.Mkdir(stage, 0o755); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(trustDir)
	if errors.Is(err, os.ErrNotExist) {
		return stage, nil
	}
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(trustDir, e.Name()), filepath.Join(stage, e.Name())); err != nil {
			return "", err
		}
	}
	return stage, nil
}

func copyFile(from, to string) error {
	in, err := atomicfs.OpenRegular(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// commitStage puts stage at trustDir. With a store already there the two
// are exchanged in one rename and the old store (now at stage) removed; a
// kill before the removal leaves it under the stage's name, which the next
// update or doctor removes (StagePrefix). Where the exchange is not
// available, trustDir is renamed aside first: a kill between the two
// renames leaves no store, and the next update starts again from the root
// the lock pins and verifies forward, so nothing unverified is trusted.
func commitStage(trustDir, stage string) error {
	prev, err := CommitStaged(trustDir, stage)
	if err != nil || prev == "" {
		return err
	}
	return os.RemoveAll(prev)
}

// CommitStaged puts a store Update left staged (UpdateOptions.Defer,
// Result.Stage) at trustDir, as Update would have, but keeps the store it
// replaces: prev is where that one now is ("" when trustDir held none),
// for the caller to remove once its own commit is done, or to put back
// with RestoreStaged when that commit failed. An update defers this
// commit until install accepted the archive, so a refused archive leaves
// trustDir byte for byte as it was.
func CommitStaged(trustDir, stage string) (prev string, err error) {
	if _, err := os.Lstat(trustDir); errors.Is(err, os.ErrNotExist) {
		return "", os.Rename(stage, trustDir)
	}
	xerr := swap.Exchange(stage, trustDir)
	if xerr == nil {
		return stage, nil
	}
	aside := stage + ".old"
	if err := os.Rename(trustDir, aside); err != nil {
		return "", fmt.Errorf("exchange: %v; rename aside: %w", xerr, err)
	}
	if err := os.Rename(stage, trustDir); err != nil {
		_ = os.Rename(aside, trustDir)
		return "", err
	}
	return aside, nil
}

// RestoreStaged undoes CommitStaged: the store at prev goes back to
// trustDir (none when prev is ""), and the committed one is removed.
func RestoreStaged(trustDir, prev string) error {
	gone := StagePrefix(trustDir) + strconv.Itoa(os.Getpid()) + "-" + canon.RandomHex(4) + ".undone"
	if prev == "" {
		if err := os.Rename(trustDir, gone); err != nil {
			return err
		}
		return os.RemoveAll(gone)
	}
	if err := swap.Exchange(prev, trustDir); err != nil {
		if err := os.Rename(trustDir, gone); err != nil {
			return err
		}
		if err := os.Rename(prev, trustDir); err != nil {
			return err
		}
		return os.RemoveAll(gone)
	}
	return os.RemoveAll(prev)
}
