package oci

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/errcode"

	piErr "piship.dev/piship/stages/stage/errcode"
)

// The limits a registry may cost a run (issue 34: a registry that is down
// or slow must not hold a CI run hostage).
const (
	ConnectTimeout = 5 * time.Second
	RequestTimeout = 30 * time.Second
	RunBudget      = 60 * time.Second
)

// A release's transfer (publish, a split release's push, a merge's pull,
// repo add's check) is the run's point, not a cache's shortcut, and moves
// archives of tens of megabytes: its limits are larger; the connect limit
// stays ConnectTimeout.
const (
	TransferRequestTimeout = 10 * time.Minute
	TransferRunBudget      = 30 * time.Minute
)

// TransferBudget is a fresh budget with the release transfer's limits.
func TransferBudget() *Budget {
	return &Budget{Total: TransferRunBudget, Request: TransferRequestTimeout}
}

// Budget is what one run may spend waiting on registries: the time with at
// least one request in flight counts, up to RunBudget in all; one request
// is cut at RequestTimeout. The first failure that is not a plain "not
// found" marks the budget spent: every later call returns ErrDown at once,
// and Warn (if set) is told once, with the failure. A Budget is shared by
// every Repo of a run and safe for concurrent use.
type Budget struct {
	// Total is the run's allowance (RunBudget when zero).
	Total time.Duration
	// Request is one request's limit (RequestTimeout when zero).
	Request time.Duration
	// Warn receives the one warning when the registry is given up on.
	Warn func(msg string)

	mu       sync.Mutex
	inFlight int
	since    time.Time // when inFlight last went from 0 to 1
	used     time.Duration
	down     error
	warned   bool
}

// ErrDown is returned for every call after the budget gave up on the
// registry.
var ErrDown = errors.New("the registry was given up on earlier in this run")

// Down returns why the registry was given up on, or nil.
func (b *Budget) Down() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.down
}

// Used returns the time spent waiting on the registry so far.
func (b *Budget) Used() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.used
	if b.inFlight > 0 {
		u += time.Since(b.since)
	}
	return u
}

func (b *Budget) total() time.Duration {
	if b.Total > 0 {
		return b.Total
	}
	return RunBudget
}

func (b *Budget) request() time.Duration {
	if b.Request > 0 {
		return b.Request
	}
	return RequestTimeout
}

// Do runs one registry call of what (a few words: "pull cache entry
// i-0123") under the budget.
func (b *Budget) Do(ctx context.Context, what string, call func(ctx context.Context) error) error {
	b.mu.Lock()
	if b.down != nil {
		b.mu.Unlock()
		return fmt.Errorf("%s: %w", what, ErrDown)
	}
	used := b.used
	if b.inFlight > 0 {
		used += time.Since(b.since)
	} else {
		b.since = time.Now()
	}
	b.inFlight++
	left := b.total() - used
	b.mu.Unlock()

	limit := min(b.request(), left)
	cctx, cancel := context.WithTimeout(ctx, max(limit, 0))
	err := call(cctx)
	timedOut := cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
	cancel()

	b.mu.Lock()
	b.inFlight--
	if b.inFlight == 0 {
		b.used += time.Since(b.since)
	}
	var warn func(string)
	var msg string
	if err != nil && ctx.Err() == nil && (timedOut || !IsNotFound(err)) && givesUp(err, timedOut) && b.down == nil {
		why := err
		if timedOut {
			if limit < b.request() {
				why = fmt.Errorf("the run's %s for the registry is spent", b.total())
			} else {
				why = fmt.Errorf("no answer within %s", b.request())
			}
		}
		b.down = why
		if !b.warned && b.Warn != nil {
			b.warned = true
			warn = b.Warn
			msg = fmt.Sprintf("%s: %s: %v; going on without the registry for the rest of this run", piErr.RegistryUnavailable, what, why)
		}
	}
	b.mu.Unlock()
	if warn != nil {
		warn(msg)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// givesUp reports whether a failed call means the registry cannot serve
// this run: anything but a refusal of this one request (not found, a
// digest or manifest the registry rejects) does.
func givesUp(err error, timedOut bool) bool {
	if timedOut {
		return true
	}
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) {
		switch resp.StatusCode {
		case http.StatusNotFound, http.StatusBadRequest:
			return false
		}
		return true // 401/403 (credentials), 429, 5xx
	}
	if errors.Is(err, errdef.ErrNotFound) || errors.Is(err, errdef.ErrSizeExceedsLimit) {
		return false
	}
	var ie *IntegrityError
	return !errors.As(err, &ie)
}

// IsNotFound reports whether err says the registry does not have what was
// asked for (a tag, a manifest, a blob): a miss, not a failure.
func IsNotFound(err error) bool {
	if errors.Is(err, errdef.ErrNotFound) {
		return true
	}
	var resp *errcode.ErrorResponse
	return errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound
}

// IntegrityError is a blob or manifest whose bytes are not those its
// descriptor names (the registry's storage was changed or is damaged).
type IntegrityError struct {
	Digest string
	Err    error
}

func (e *IntegrityError) Error() string {
	return fmt.Sprintf("%s: blob %s is not what its digest names: %v", piErr.IntegrityFailed, e.Digest, e.Err)
}

func (e *IntegrityError) Unwrap() error { return e.Err }

// ErrorCode implements errcode.Coder.
func (e *IntegrityError) ErrorCode() string { return piErr.IntegrityFailed }
