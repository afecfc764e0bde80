package atomicfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is what OpenRegular and ReadRegular return (wrapped in a
// *NotRegularError) for a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError names the path and what stands there instead.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file: piship reads only regular files; replace it with the file itself", e.Path, KindOf(e.Mode))
}

func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

// KindOf names what a file of mode m is, for a message that says "x is
// KindOf(m)": "a named pipe (FIFO)", "a symbolic link", "a directory" ...
func KindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a plain file (" + m.Type().String() + ")"
}

// OpenRegular opens path for reading only if it is a regular file (a
// symbolic link to one is followed): the one way piship opens a file it
// reads by a name a user, a release or a home supplies. The open does not
// block (O_NONBLOCK where the platform has it: a named pipe with no writer
// would otherwise hang the open, and with it the command, forever), and
// the type is checked on the opened descriptor (fstat) before a byte is
// read, so a FIFO, a device or a socket swapped in after any earlier
// check is refused too, with a *NotRegularError.
func OpenRegular(path string) (*os.File, error) {
	return regular(os.OpenFile(path, os.O_RDONLY|nonblock, 0))
}

// regular returns f when it is a regular file, checked on the descriptor;
// else it closes f.
func regular(f *os.File, err error) (*os.File, error) {
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: f.Name(), Mode: fi.Mode()}
	}
	return f, nil
}

// OpenRegularIn is OpenRegular of name inside root (os.Root's rules:
// nothing outside it is reached).
func OpenRegularIn(root *os.Root, name string) (*os.File, error) {
	return regular(root.OpenFile(name, os.O_RDONLY|nonblock, 0))
}

// ReadRegular reads the regular file at path (OpenRegular) whole; max > 0
// refuses one larger than max bytes.
func ReadRegular(path string, max int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if max > 0 && fi.Size() > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	r := io.Reader(f)
	if max > 0 {
		r = io.LimitReader(f, max+1)
	}
	data, err := io.ReadAll(r)
	if err == nil && max > 0 && int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return data, err
}
