package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"piship.dev/piship/stages/npm"
)

// DefaultTimeout bounds one request to the registry when Options.Timeout
// is 0.
const DefaultTimeout = 30 * time.Second

// retryDelays are the pauses before the second and third attempt of a
// request answered 429 or 5xx, or refused; tests shorten them.
var retryDelays = []time.Duration{250 * time.Millisecond, 750 * time.Millisecond}

// maxRetryAfter caps how long a Retry-After header can make us wait;
// tests shorten it.
var maxRetryAfter = 2 * time.Second

// Options say where the registry is and how to reach it.
type Options struct {
	// Registry is the npm registry URL ("" means npm.DefaultRegistry).
	Registry string
	// Client makes the requests (nil: a client of its own).
	Client *http.Client
	// Now is the time allow entries and signing keys are checked against
	// (zero: time.Now()).
	Now time.Time
	// Timeout bounds each request, answer included (0: DefaultTimeout).
	Timeout time.Duration
	// DistDir is the distribution directory, against which the osv:
	// sources resolve.
	DistDir string
}

func (o Options) withDefaults() Options {
	if o.Registry == "" {
		o.Registry = npm.DefaultRegistry
	}
	if !strings.HasSuffix(o.Registry, "/") {
		o.Registry += "/"
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// request is one HTTP exchange.
type request struct {
	method, url string
	body        []byte
	header      map[string]string
	// limit bounds the answer's size.
	limit int64
}

// httpError is an exchange that did not give a usable answer.
type httpError struct {
	// Status is the final HTTP status, 0 when there was none.
	Status int
	Msg    string
}

func (e *httpError) Error() string { return e.Msg }

// fetch makes the request, retrying briefly on 429, 5xx and refused
// connections; each attempt is bounded by o.Timeout. A 2xx answer is
// returned; anything else is an *httpError saying what happened.
func (o Options) fetch(ctx context.Context, r request) ([]byte, error) {
	var last *httpError
	for attempt := 0; ; attempt++ {
		body, retryAfter, err := o.attempt(ctx, r)
		if err == nil {
			return body, nil
		}
		last = err
		if !retryable(err) || attempt >= len(retryDelays) {
			return nil, last
		}
		wait := retryDelays[attempt]
		if retryAfter > 0 {
			wait = min(retryAfter, maxRetryAfter)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, last
		case <-t.C:
		}
	}
}

func retryable(e *httpError) bool {
	switch {
	case e.Status == http.StatusTooManyRequests, e.Status >= 500:
		return true
	case e.Status == 0:
		return strings.Contains(e.Msg, "connection refused") || strings.Contains(e.Msg, "connection reset")
	}
	return false
}

func (o Options) attempt(ctx context.Context, r request) ([]byte, time.Duration, *httpError) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return nil, 0, &httpError{Msg: err.Error()}
	}
	req.Header.Set("User-Agent", "piship")
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		return nil, 0, &httpError{Msg: describeNetErr(ctx, err, o.Timeout)}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		var after time.Duration
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return nil, after, &httpError{Status: resp.StatusCode, Msg: fmt.Sprintf("answered %s", resp.Status)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, r.limit+1))
	if err != nil {
		return nil, 0, &httpError{Status: resp.StatusCode, Msg: "answer cut short: " + describeNetErr(ctx, err, o.Timeout)}
	}
	if int64(len(data)) > r.limit {
		return nil, 0, &httpError{Status: resp.StatusCode, Msg: fmt.Sprintf("answer larger than %d MiB", r.limit>>20)}
	}
	return data, 0, nil
}

// describeNetErr says why a request failed, in a sentence fragment.
func describeNetErr(ctx context.Context, err error, timeout time.Duration) string {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("timed out after %s", timeout)
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Error()
	}
	return err.Error()
}
