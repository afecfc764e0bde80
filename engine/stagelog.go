package engine

import (
	"bytes"
	"io"
	"sync"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"piship.dev/piship/tracing"
)

// stageLog is one stage's Invocation.Log: it collects what the stage
// writes, from any of its goroutines (npm's output is copied by one of
// exec's), and passes it on as whole lines, one Write per batch of lines,
// so two stages' messages never mix within a line. flush writes an
// unfinished last line when the stage ends.
//
// With a recording span, each line also becomes an event on it, at most
// tracing.MaxLogEvents of at most tracing.MaxLogLineBytes each; flush
// records how many were dropped. span is nil when tracing is off, so an
// untraced stage pays nothing for events.
type stageLog struct {
	mu      sync.Mutex
	w       io.Writer
	buf     []byte
	span    trace.Span
	events  int
	dropped int
}

func (l *stageLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := writeLines(&l.buf, p, l.write); err != nil {
		return 0, err
	}
	return len(p), nil
}

// write passes complete lines on, after recording them as events.
func (l *stageLog) write(lines []byte) (int, error) {
	if l.span != nil {
		for rest := lines; len(rest) > 0; {
			line := rest
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				line, rest = rest[:i], rest[i+1:]
			} else {
				rest = nil
			}
			l.event(line)
		}
	}
	return l.w.Write(lines)
}

// event records one line (without its newline) as a span event.
func (l *stageLog) event(line []byte) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if l.events >= tracing.MaxLogEvents {
		l.dropped++
		return
	}
	l.events++
	attrs := make([]attribute.KeyValue, 1, 2)
	if len(line) > tracing.MaxLogLineBytes {
		cut := tracing.MaxLogLineBytes
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut-- // never split a character
		}
		line = line[:cut]
		attrs = append(attrs, attribute.Bool(tracing.AttrLogTruncated, true))
	}
	attrs[0] = attribute.String(tracing.AttrLogLine, string(line))
	l.span.AddEvent(tracing.LogEventName, trace.WithAttributes(attrs...))
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

// flush writes an unfinished last line, and sets the dropped-events count
// on the span (before the stage's span ends).
func (l *stageLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		line := append(l.buf, '\n')
		_, _ = l.write(line)
		l.buf = nil
	}
	if l.span != nil && l.dropped > 0 {
		l.span.SetAttributes(attribute.Int(tracing.AttrEventsDropped, l.dropped))
	}
}
