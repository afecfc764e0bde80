//go:build unix

package pipelines

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// terminalSize is the width in columns and the height in rows of the
// terminal w writes to (TIOCGWINSZ), zeros when w is not a terminal.
func terminalSize(w io.Writer) (cols, rows int) {
	f, ok := w.(*os.File)
	if !ok {
		return 0, 0
	}
	// Through SyscallConn: f.Fd() would switch the file to blocking mode.
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, 0
	}
	_ = rc.Control(func(fd uintptr) {
		if ws, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ); err == nil {
			cols, rows = int(ws.Col), int(ws.Row)
		}
	})
	return cols, rows
}
