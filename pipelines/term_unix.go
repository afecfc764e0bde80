//go:build unix

package pipelines

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// terminalWidth is the width in columns of the terminal w writes to
// (TIOCGWINSZ), or 0 when w is not a terminal.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	// Through SyscallConn: f.Fd() would switch the file to blocking mode.
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	cols := 0
	_ = rc.Control(func(fd uintptr) {
		if ws, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ); err == nil {
			cols = int(ws.Col)
		}
	})
	return cols
}
