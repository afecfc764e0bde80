//go:build unix && !linux

package proc

import "time"

// StartTime is not known without starting a process (ps) here: records
// of a running pid are then taken as live.
func StartTime(int) (time.Time, bool) { return time.Time{}, false }

func zombie(int) bool { return false }
