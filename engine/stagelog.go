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
	if err := writeLines(&l.buf, p, l.w.Write); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeLines appends p to *buf, hands the complete lines *buf then holds
// to write in one call, and keeps the unfinished rest in *buf.
func writeLines(buf *[]byte, p []byte, write func([]byte) (int, error)) error {
	*buf = append(*buf, p...)
	i := bytes.LastIndexByte(*buf, '\n')
	if i < 0 {
		return nil
	}
	_, err := write((*buf)[:i+1])
	*buf = append((*buf)[:0], (*buf)[i+1:]...)
	return err
}

func (l *stageLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		_, _ = l.w.Write(append(l.buf, '\n'))
		l.buf = nil
	}
}
