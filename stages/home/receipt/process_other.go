//go:build !unix && !windows

package receipt

import "time"

func processExists(pid int) bool { return pid > 0 }

// ProcessStart is unknown on this platform.
func ProcessStart(int) (time.Time, bool) { return time.Time{}, false }
