package contentstore

import (
	"io/fs"
	"syscall"
	"time"
)

// linkCount returns the link count and change time of fi.
func linkCount(fi fs.FileInfo) (uint64, time.Time, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, time.Time{}, false
	}
	return uint64(st.Nlink), time.Unix(st.Ctim.Unix()), true
}
