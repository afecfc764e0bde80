package receipt

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// DefaultGateWait is how long a launch waits for the launch gate.
const DefaultGateWait = 5 * time.Second

// DefaultMaintenanceWait is how long install, rollback, doctor and
// uninstall wait for another of them to finish.
const DefaultMaintenanceWait = 30 * time.Second

// TakeGate takes the launch gate of id (receipts/.<id>.launch.lock),
// waiting at most wait (DefaultGateWait when 0) or until ctx ends. A gate
// still held then is CONFIG_UNAVAILABLE. release unlocks it; the kernel
// releases it too when the process dies, so a killed holder never leaves
// the gate locked.
func TakeGate(ctx context.Context, installHome, id string, wait time.Duration) (release func(), err error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	if wait <= 0 {
		wait = DefaultGateWait
	}
	return TakeLock(ctx, GatePath(installHome, id), wait, "the launch gate of "+id+" (an install, update or launch is registering)")
}

// TakeMaintenance takes receipts/.<id>.install.lock, which install, update,
// rollback, doctor and uninstall hold for their whole run, so they never
// overlap (a doctor must not reclaim a directory an install is writing).
func TakeMaintenance(ctx context.Context, installHome, id string, wait time.Duration) (release func(), err error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	if wait <= 0 {
		wait = DefaultMaintenanceWait
	}
	return TakeLock(ctx, MaintenancePath(installHome, id), wait, "the install lock of "+id+" (another install, update, rollback, doctor or uninstall is running)")
}

// TakeLock takes an exclusive lock on path (created if missing), polling
// with short sleeps for at most wait. what names the lock in the error.
func TakeLock(ctx context.Context, path string, wait time.Duration, what string) (release func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, Errorf(CodeUnavailable, "cannot create %s: %w", filepath.Dir(path), unopenable{err})
	}
	f, err := openLock(path)
	if err != nil {
		return nil, Errorf(CodeUnavailable, "cannot open %s: %w", path, unopenable{err})
	}
	deadline := time.Now().Add(wait)
	delay := time.Millisecond
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, Errorf(CodeUnavailable, "cannot lock %s: %w", path, err)
		}
		if ok {
			return func() { unlock(f); f.Close() }, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			f.Close()
			return nil, Errorf(CodeUnavailable, "%s is held: gave up after %s (%s)", what, wait, path)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, Errorf(CodeUnavailable, "waiting for %s: %w", what, ctx.Err())
		case <-time.After(min(delay, left)):
		}
		delay = min(delay*2, 25*time.Millisecond)
	}
}

// ErrLockUnopenable is in the chain of a TakeLock (TakeGate, TakeMaintenance)
// error when the lock file could not be created or opened at all (a
// read-only or full file system, a directory in its place), as opposed to
// held by another process: a launch then runs without the gate (see
// package launch).
var ErrLockUnopenable = errors.New("the lock file cannot be opened")

type unopenable struct{ err error }

func (u unopenable) Error() string        { return u.err.Error() }
func (u unopenable) Unwrap() error        { return u.err }
func (u unopenable) Is(target error) bool { return target == ErrLockUnopenable }

// openLock opens the lock file for writing, creating it if missing; an
// existing lock file on a read-only file system is opened read-only, which
// flock and LockFileEx accept: a launch of a home mounted read-only still
// takes the gate, so a remount read-write cannot slip a commit past it.
func openLock(path string) (f *os.File, err error) {
	if err = fault(path); err == nil {
		f, err = os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		if rf, rerr := os.Open(path); rerr == nil {
			if fi, serr := rf.Stat(); serr == nil && fi.Mode().IsRegular() {
				return rf, nil
			}
			rf.Close()
		}
	}
	return f, err
}
