package updatesource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"
)

// Limits bound every network read of a Source, so a server that accepts a
// connection and then says nothing, or trickles a byte at a time, ends an
// update with UPDATE_FAILED (ReasonTimeout) naming the limit that fired
// instead of hanging. A zero field takes its DefaultLimits value.
type Limits struct {
	// Connect bounds establishing the connection: the name lookup (https
	// only), TCP and the TLS handshake.
	Connect time.Duration
	// Header bounds the wait for the response headers once the request
	// is written.
	Header time.Duration
	// Idle bounds the gap between two reads of the body that bring bytes.
	Idle time.Duration
	// Document bounds the whole fetch of a channel document or its
	// signature file, retries included.
	Document time.Duration
	// Archive bounds the whole download of a release archive.
	Archive time.Duration
}

// DefaultLimits are the limits of an update that sets none: generous for
// a slow link, short enough that a dead server is noticed.
var DefaultLimits = Limits{
	Connect:  10 * time.Second,
	Header:   30 * time.Second,
	Idle:     30 * time.Second,
	Document: 2 * time.Minute,
	Archive:  10 * time.Minute,
}

// MaxLimit is the largest value ParseLimits accepts.
const MaxLimit = 24 * time.Hour

// ParseLimits returns DefaultLimits changed by the `--timeout` and
// `--max-time` settings of an update (empty: unchanged). timeout, a
// duration such as "30s", sets the connect, header and idle limits: the
// longest piship waits for a connection, for the response headers or for
// the next byte. maxTime sets the overall budget of each file fetched (the
// channel document, its signatures, the archive). Each must be more than
// zero and at most MaxLimit; anything else is CONFIG_INVALID.
func ParseLimits(timeout, maxTime string) (Limits, error) {
	l := DefaultLimits
	parse := func(flag, v string) (time.Duration, error) {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		switch {
		case err != nil:
			return 0, configErr("--%s %q is not a duration: write it like 30s, 2m or 1h", flag, v)
		case d <= 0 || d > MaxLimit:
			return 0, configErr("--%s %s is out of range: give more than 0 and at most %s", flag, v, MaxLimit)
		}
		return d, nil
	}
	if timeout != "" {
		d, err := parse("timeout", timeout)
		if err != nil {
			return Limits{}, err
		}
		l.Connect, l.Header, l.Idle = d, d, d
	}
	if maxTime != "" {
		d, err := parse("max-time", maxTime)
		if err != nil {
			return Limits{}, err
		}
		l.Document, l.Archive = d, d
	}
	return l, nil
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	for _, f := range []struct{ v, def *time.Duration }{
		{&l.Connect, &d.Connect}, {&l.Header, &d.Header}, {&l.Idle, &d.Idle}, {&l.Document, &d.Document}, {&l.Archive, &d.Archive},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return l
}

// limitError is the cause a fetch's context is canceled with when a limit
// fires; fail turns it into what the user sees.
type limitError struct {
	msg string // names the limit: connect, header or idle timeout, or overall budget
}

func (e *limitError) Error() string { return e.msg }

// fail is the UPDATE_FAILED of a limit that fired.
func (e *limitError) fail() *Error {
	return &Error{Code: CodeUpdateFailed, Reason: ReasonTimeout, Msg: e.msg, Err: e}
}

// fetch is one file's request(s) and body under the limits: the overall
// budget runs from the first request to Close, and each attempt has its
// connect, header and idle timers, all of which cancel ctx with a
// *limitError as its cause.
type fetch struct {
	ctx    context.Context // canceled with the cause when a limit fires
	cancel context.CancelCauseFunc
	budget *time.Timer
	limits Limits
	loc    string // the URL, for messages
	origin string // scheme://host:port, for messages

	mu   sync.Mutex
	n    int64 // body bytes read
	idle *time.Timer
}

func (s *Source) startFetch(ctx context.Context, name string, budget time.Duration, what string) *fetch {
	l := s.limits
	f := &fetch{limits: l, loc: s.location(name), origin: originOf(s.base)}
	f.ctx, f.cancel = context.WithCancelCause(ctx)
	f.budget = time.AfterFunc(budget, func() {
		f.mu.Lock()
		n := f.n
		f.mu.Unlock()
		f.cancel(&limitError{msg: fmt.Sprintf(
			"%s did not arrive within the %s overall budget for %s (%d bytes read): the server at %s is too slow; check the channel URL and the network, or raise --max-time",
			f.loc, fmtDur(budget), what, n, f.origin)})
	})
	return f
}

// cause is the limit that fired, if one did.
func (f *fetch) cause() *limitError {
	var le *limitError
	if errors.As(context.Cause(f.ctx), &le) {
		return le
	}
	return nil
}

// after maps an error of a request or a body read: the limit that fired,
// else the parent context's error, else nil (the caller words err).
func (f *fetch) after(parent context.Context, err error) error {
	if le := f.cause(); le != nil {
		return le.fail()
	}
	if parent.Err() != nil {
		return parent.Err()
	}
	return nil
}

// stop ends the fetch: its timers and context.
func (f *fetch) stop() {
	f.budget.Stop()
	f.mu.Lock()
	if f.idle != nil {
		f.idle.Stop()
	}
	f.mu.Unlock()
	f.cancel(context.Canceled)
}

// do sends req (made with f.ctx) with the connect and header timers
// armed; on success the idle timer starts.
func (f *fetch) do(c *http.Client, req *http.Request) (*http.Response, error) {
	l := f.limits
	var mu sync.Mutex
	var header *time.Timer
	connect := time.AfterFunc(l.Connect, func() {
		f.cancel(&limitError{msg: fmt.Sprintf(
			"cannot connect to %s for %s within the %s connect timeout: check the channel URL and that the server is up, or raise --timeout",
			f.origin, f.loc, fmtDur(l.Connect))})
	})
	trace := &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { connect.Stop() },
		WroteRequest: func(httptrace.WroteRequestInfo) {
			mu.Lock()
			defer mu.Unlock()
			if header != nil { // written again on a retried connection
				header.Stop()
			}
			header = time.AfterFunc(l.Header, func() {
				f.cancel(&limitError{msg: fmt.Sprintf(
					"the server at %s sent no response headers for %s within the %s header timeout: check the channel URL, or raise --timeout",
					f.origin, f.loc, fmtDur(l.Header))})
			})
		},
	}
	resp, err := c.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	connect.Stop()
	mu.Lock()
	if header != nil {
		header.Stop()
	}
	mu.Unlock()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.idle = time.AfterFunc(l.Idle, f.idleFired)
	f.mu.Unlock()
	resp.Body = &timedBody{ReadCloser: resp.Body, f: f}
	return resp, nil
}

func (f *fetch) idleFired() {
	f.mu.Lock()
	n := f.n
	f.mu.Unlock()
	f.cancel(&limitError{msg: fmt.Sprintf(
		"the server at %s sent no byte of %s for %s (the idle timeout), after %d bytes: check the channel URL and the network, or raise --timeout",
		f.origin, f.loc, fmtDur(f.limits.Idle), n)})
}

// timedBody restarts the idle timer on every read that brings bytes and
// reports a limit that fired as its UPDATE_FAILED.
type timedBody struct {
	io.ReadCloser
	f *fetch
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	f := b.f
	if n > 0 {
		f.mu.Lock()
		f.n += int64(n)
		f.idle.Reset(f.limits.Idle)
		f.mu.Unlock()
	}
	if err != nil && err != io.EOF {
		if le := f.cause(); le != nil {
			return n, le.fail()
		}
	}
	return n, err
}

func (b *timedBody) Close() error {
	err := b.ReadCloser.Close()
	b.f.mu.Lock()
	b.f.idle.Stop()
	b.f.mu.Unlock()
	return err
}

// fetchBody is the body open returns: closing it ends the fetch.
type fetchBody struct {
	io.ReadCloser
	f *fetch
}

func (b *fetchBody) Close() error {
	err := b.ReadCloser.Close()
	b.f.stop()
	return err
}

func fmtDur(d time.Duration) string { return d.Round(time.Millisecond).String() }

// Dialer opens a TCP connection to address (host:port); net.Dialer's
// DialContext is one. SourceOptions.Dial lets a test see every address a
// source dials.
type Dialer func(ctx context.Context, network, address string) (net.Conn, error)

// dialer is the transport's DialContext. For plain http it dials only
// loopback addresses and never asks a resolver: the host must be a literal
// loopback IP or localhost (any case, one optional trailing dot), which is
// dialed as 127.0.0.1, then ::1; any other host (a redirect cannot reach
// here with one, see checkRedirect) and any connection whose remote
// address is not loopback is NETWORK_DENIED. https dials as usual.
func (s *Source) dialer(raw Dialer) Dialer {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if s.base.Scheme != "http" {
			return raw(ctx, network, address)
		}
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, newErr(CodeNetworkDenied, ReasonPolicy, "plain http to %q is refused: not a host and port", address)
		}
		ips, ok := loopbackAddrs(host)
		if !ok {
			return nil, newErr(CodeNetworkDenied, ReasonPolicy, "plain http to %s is refused; only loopback hosts may be reached without TLS", host)
		}
		var firstErr error
		for _, ip := range ips {
			conn, err := raw(ctx, network, net.JoinHostPort(ip, port))
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			if !remoteIsLoopback(conn) {
				conn.Close()
				return nil, newErr(CodeNetworkDenied, ReasonPolicy, "plain http to %s reached %s, which is not a loopback address: refused", address, conn.RemoteAddr())
			}
			return conn, nil
		}
		return nil, firstErr
	}
}

func remoteIsLoopback(c net.Conn) bool {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackAddrs is the rule of plain http: the literal addresses to dial
// for host, and whether host may be reached without TLS at all. A literal
// loopback IP (127.0.0.0/8 written as four decimal numbers, ::1, the
// IPv4-mapped form) is itself; the name localhost, in any case with one
// optional trailing dot, is 127.0.0.1 then ::1 without a lookup; nothing
// else is (localhost.example, 127.1, 0x7f.0.0.1, a name that some
// resolver maps to loopback).
func loopbackAddrs(host string) ([]string, bool) {
	h := host // u.Hostname() and net.SplitHostPort strip an IPv6's brackets
	if strings.EqualFold(strings.TrimSuffix(h, "."), "localhost") {
		return []string{"127.0.0.1", "::1"}, true
	}
	if strings.Contains(h, "%") { // a zone: not a plain literal
		return nil, false
	}
	ip := net.ParseIP(h)
	if ip == nil || !ip.IsLoopback() {
		return nil, false
	}
	return []string{ip.String()}, true
}

// isLoopback reports whether plain http may reach host (see loopbackAddrs).
func isLoopback(host string) bool {
	_, ok := loopbackAddrs(host)
	return ok
}
