package platform

import (
	"context"
	"debug/elf"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

var libc struct {
	once sync.Once
	name string
}

// Libc returns "glibc" or "musl" on Linux and "" elsewhere; it decides
// which prebuilt native packages npm installs. It is detected once,
// without starting a process when it can be:
//
//  1. the ELF interpreter of the node on PATH (what will run the
//     runtime): /lib/ld-musl-*.so.1 is musl, ld-linux*/ld64.so* glibc;
//  2. the ELF interpreter of piship itself (/proc/self/exe), when it is
//     dynamically linked;
//  3. the loaders installed: a glibc loader means glibc (a glibc system
//     may have musl installed beside it), else /lib/ld-musl-*.so.1 musl;
//  4. `ldd --version`, which names musl or glibc.
//
// If all of that fails it says "glibc", the common case.
func Libc() string {
	if runtime.GOOS != "linux" {
		return ""
	}
	libc.once.Do(func() { libc.name = detectLibc() })
	return libc.name
}

func detectLibc() string {
	if node, err := exec.LookPath("node"); err == nil {
		if real, err := filepath.EvalSymlinks(node); err == nil {
			node = real
		}
		if l := libcOfInterp(elfInterp(node)); l != "" {
			return l
		}
	}
	if l := libcOfInterp(elfInterp("/proc/self/exe")); l != "" {
		return l
	}
	for _, pat := range []string{"/lib64/ld-linux*.so.*", "/lib/ld-linux*.so.*", "/lib64/ld64.so.*", "/lib/ld64.so.*", "/lib/*-linux-gnu*/ld-linux*.so.*"} {
		if m, _ := filepath.Glob(pat); len(m) > 0 {
			return "glibc"
		}
	}
	if m, _ := filepath.Glob("/lib/ld-musl-*.so.1"); len(m) > 0 {
		return "musl"
	}
	if l := libcOfLdd(); l != "" {
		return l
	}
	return "glibc"
}

// elfInterp returns the ELF interpreter (PT_INTERP) of the executable at
// p: "" if it is not an ELF file or is statically linked.
func elfInterp(p string) string {
	f, err := elf.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_INTERP || prog.Filesz == 0 || prog.Filesz > 4096 {
			continue
		}
		buf := make([]byte, prog.Filesz)
		if _, err := prog.ReadAt(buf, 0); err != nil {
			return ""
		}
		return strings.TrimRight(string(buf), "\x00")
	}
	return ""
}

// libcOfInterp names the libc of a dynamic loader path ("" if unknown).
func libcOfInterp(interp string) string {
	base := path.Base(interp)
	switch {
	case interp == "":
		return ""
	case strings.HasPrefix(base, "ld-musl-"):
		return "musl"
	case strings.HasPrefix(base, "ld-linux"), strings.HasPrefix(base, "ld64.so."), base == "ld.so.1":
		return "glibc"
	}
	return ""
}

// libcOfLdd runs `ldd --version` (musl's ldd prints its name on stderr and
// exits 1, so the exit status is ignored).
func libcOfLdd() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "ldd", "--version").CombinedOutput()
	return libcOfLddOutput(string(out))
}

func libcOfLddOutput(out string) string {
	s := strings.ToLower(out)
	switch {
	case strings.Contains(s, "musl"):
		return "musl"
	case strings.Contains(s, "glibc"), strings.Contains(s, "gnu libc"), strings.Contains(s, "gnu c library"):
		return "glibc"
	}
	return ""
}
