package receipt

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"time"
)

// WindowsRenameDelays is how long a Windows rename refused with EPERM,
// EBUSY or EACCES (a scanner or indexer holding a handle inside the tree)
// is retried: 25+50+100+200+400+800 ms, about 1.6 s.
var WindowsRenameDelays = []time.Duration{
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
}

// Renamer renames with a retry policy. The zero value renames once with
// os.Rename. Tests inject Rename (to fail) and Sleep (to record the waits).
type Renamer struct {
	Rename    func(from, to string) error // nil: os.Rename
	Delays    []time.Duration             // waits before each retry
	Retryable func(error) bool            // which errors are retried (nil: none)
	Sleep     func(time.Duration)         // nil: time.Sleep
}

// WindowsRenamer retries EPERM, EBUSY and EACCES (and, on Windows, sharing
// and lock violations) after each of WindowsRenameDelays.
func WindowsRenamer() Renamer {
	return Renamer{Delays: WindowsRenameDelays, Retryable: windowsRetryable}
}

// ImmediateRenamer fails at once: what every platform but Windows uses.
func ImmediateRenamer() Renamer { return Renamer{} }

// DefaultRenamer is WindowsRenamer on Windows and ImmediateRenamer elsewhere.
func DefaultRenamer() Renamer {
	if runtime.GOOS == "windows" {
		return WindowsRenamer()
	}
	return ImmediateRenamer()
}

// Do renames from to to, retrying as the policy says. It returns the last
// error as *os.LinkError.
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
		sleep(r.Delays[i])
	}
}

func windowsRetryable(err error) bool {
	return errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EBUSY) ||
		errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) || platformRetryable(err)
}
