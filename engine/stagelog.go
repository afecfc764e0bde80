package engine

import (
	"bytes"
	"io"
	"sync"
)

// stageLog is one stage's Invocation.Log: it collects what the stage
// writes, from any of its goroutines (npm's output is copied by one of
// exec's), and passes it on as whole lines, one Write per batch of lines,
// so two stages' messages never mix within a line. flush writes an
// unfinished last line when the stage ends.
type stageLog struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (l *stageLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	i := bytes.LastIndexByte(l.buf, '\n')
	if i < 0 {
		return len(p), nil
	}
	_, err := l.w.Write(l.buf[:i+1])
	l.buf = append(l.buf[:0], l.buf[i+1:]...)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

func (l *stageLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		_, _ = l.w.Write(append(l.buf, '\n'))
		l.buf = nil
	}
}
