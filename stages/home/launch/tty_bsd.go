//go:build unix && !linux

package launch

import "os"

// foregroundTTY guesses: a standard descriptor that is a terminal means an
// interactive start, whose terminal signals node receives itself.
func foregroundTTY() bool {
	for _, f := range []*os.File{os.Stdin, os.Stdout, os.Stderr} {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return true
		}
	}
	return false
}
