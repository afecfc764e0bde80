package atomicfs

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"time"
)

// The Windows retry schedules: the waits before each retry of a refused
// rename.
var (
	// InstallDelays (25+50+100+200+400+800 ms, about 1.6 s) serve
	// install, update, rollback, the receipt and the shims: a user waits
	// on them.
	InstallDelays = []time.Duration{
		25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
		200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
	}
	// CacheDelays (InstallDelays then 1.5 s twice, about 4.5 s) serve
	// build output (the staging directory renamed into place) and the
	// runtime cache: large fresh trees a scanner takes longer to let go
	// of, written by a build nobody waits on interactively.
	CacheDelays = []time.Duration{
		25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
		200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1500 * time.Millisecond, 1500 * time.Millisecond,
	}
)

// Renamer renames with a retry policy. The zero value renames once with
// os.Rename. Tests inject Rename (to fail) and Sleep (to record the waits).
type Renamer struct {
	Rename    func(from, to string) error // nil: os.Rename
	Delays    []time.Duration             // waits before each retry
	Retryable func(error) bool            // which errors are retried (nil: none)
	Sleep     func(time.Duration)         // nil: time.Sleep
	// StopIfExists gives up as soon as the destination exists: a
	// directory another process renamed there first will not go away.
	StopIfExists bool
}

// WindowsRenamer retries what Retryable accepts after each of delays.
func WindowsRenamer(delays []time.Duration) Renamer {
	return Renamer{Delays: delays, Retryable: Retryable}
}

// ImmediateRenamer fails at once: what every platform but Windows uses.
func ImmediateRenamer() Renamer { return Renamer{} }

// DefaultRenamer is WindowsRenamer(delays) on Windows and
// ImmediateRenamer elsewhere.
func DefaultRenamer(delays []time.Duration) Renamer {
	if runtime.GOOS == "windows" {
		return WindowsRenamer(delays)
	}
	return ImmediateRenamer()
}

// Do renames from to to, retrying as the policy says. It returns the last
// error (an *os.LinkError from os.Rename).
func (r Renamer) Do(from, to string) error {
	rename, sleep := r.Rename, r.Sleep
	if rename == nil {
		rename = os.Rename
	}
	if sleep == nil {
		sleep = time.Sleep
	}
	for i := 0; ; i++ {
		err := rename(from, to)
		if err == nil || i >= len(r.Delays) || r.Retryable == nil || !r.Retryable(err) {
			return err
		}
		if r.StopIfExists {
			if _, serr := os.Lstat(to); serr == nil {
				return err
			}
		}
		sleep(r.Delays[i])
	}
}

// Retryable reports a rename failure that a handle held for a moment
// causes: EPERM, EBUSY, EACCES (access denied) and, on Windows, sharing
// and lock violations.
func Retryable(err error) bool {
	return errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EBUSY) ||
		errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) || platformRetryable(err)
}
