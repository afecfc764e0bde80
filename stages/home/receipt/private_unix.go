//go:build unix

package receipt

import (
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

func privateTempName() string { return "piship-" + strconv.Itoa(os.Getuid()) }

// ownedPrivately: owned by this user, not writable by group or others.
func ownedPrivately(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid() && fi.Mode().Perm()&0o022 == 0
}
