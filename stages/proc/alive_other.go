//go:build !unix && !windows

package proc

import "time"

func Exists(pid int) bool { return pid > 0 }

// StartTime is unknown on this platform.
func StartTime(int) (time.Time, bool) { return time.Time{}, false }
