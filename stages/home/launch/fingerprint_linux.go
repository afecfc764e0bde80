package launch

import (
	"io/fs"
	"syscall"
)

// sysFingerprint adds the change time and file index, which a write that
// restores the modification time still moves.
func sysFingerprint(fi fs.FileInfo, fp *fingerprint) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		fp.ChangeTime = st.Ctim.Sec*1e9 + st.Ctim.Nsec
		fp.Device, fp.Inode = uint64(st.Dev), st.Ino
	}
}
