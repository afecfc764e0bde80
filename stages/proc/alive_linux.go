//go:build linux

package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, 100 on every architecture Go supports on Linux.
const clockTicks = 100

var bootTime = sync.OnceValue(func() int64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
})

// statFields returns the fields of /proc/<pid>/stat after the command
// name: index 0 is the state (field 3), index 19 the start time (field 22).
func statFields(pid int) []string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 > len(data) {
		return nil
	}
	return strings.Fields(string(data[i+2:]))
}

// StartTime returns when process pid started, from /proc (no process is
// started to learn it).
func StartTime(pid int) (time.Time, bool) {
	f := statFields(pid)
	bt := bootTime()
	if len(f) < 20 || bt == 0 {
		return time.Time{}, false
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(bt, 0).Add(time.Duration(ticks) * time.Second / clockTicks), true
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	f := statFields(pid)
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}
