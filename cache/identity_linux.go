package cache

import (
	"fmt"
	"os"
	"syscall"
)

// fileIdentity is device, inode, size, mtime and ctime (ns) of path.
func fileIdentity(path string) (string, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%d:%d:%d:%d:%d", st.Dev, st.Ino, st.Size, st.Mtim.Nano(), st.Ctim.Nano()), true
}
