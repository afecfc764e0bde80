//go:build linux

package proc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Referencing lists the running processes (other than this one) whose
// command line, executable or working directory names a path inside one
// of dirs, reading /proc: no process is started and nothing is written.
// ok is false where the system cannot tell (no /proc): the caller then
// knows nothing, not "nothing runs". Processes /proc hides (hidepid, or
// another user's executable and working directory) are not seen.
func Referencing(dirs []string) (refs []Ref, ok bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	self := os.Getpid()
	var prefixes []string
	for _, d := range dirs {
		if d = filepath.Clean(d); d != "/" && d != "." {
			prefixes = append(prefixes, d+string(filepath.Separator))
		}
	}
	inside := func(p string) bool {
		for _, pre := range prefixes {
			if strings.HasPrefix(p, pre) || p+string(filepath.Separator) == pre {
				return true
			}
		}
		return false
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		base := "/proc/" + e.Name()
		if data, err := os.ReadFile(base + "/cmdline"); err == nil {
			for _, arg := range bytes.Split(bytes.TrimRight(data, "\x00"), []byte{0}) {
				if a := filepath.Clean(string(arg)); len(arg) > 0 && filepath.IsAbs(a) && inside(a) {
					refs = append(refs, Ref{PID: pid, Path: a, Via: "command line"})
				}
			}
		}
		for _, l := range [...]struct{ file, via string }{{"exe", "executable"}, {"cwd", "working directory"}} {
			if p, err := os.Readlink(base + "/" + l.file); err == nil && inside(strings.TrimSuffix(p, " (deleted)")) {
				refs = append(refs, Ref{PID: pid, Path: strings.TrimSuffix(p, " (deleted)"), Via: l.via})
			}
		}
	}
	return refs, true
}
