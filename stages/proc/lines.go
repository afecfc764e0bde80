package proc

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// LinePrefixer writes whole lines to W, each prefixed; stdout and stderr
// share one, so it is locked. SkipBlank drops lines of only white space
// (npm starts its output with one).
type LinePrefixer struct {
	W         io.Writer
	Prefix    string
	SkipBlank bool
	mu        sync.Mutex
	buf       []byte
}

func (l *LinePrefixer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

// emit writes one line (without its newline), prefixed, unless it is
// blank and blank lines are skipped.
func (l *LinePrefixer) emit(line []byte) {
	if !l.SkipBlank || len(bytes.TrimSpace(line)) > 0 {
		fmt.Fprintf(l.W, "%s%s\n", l.Prefix, line)
	}
}

// Flush writes a final unterminated line.
func (l *LinePrefixer) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = nil
	}
}
