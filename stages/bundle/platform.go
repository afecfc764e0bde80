package bundle

import (
	"slices"
	"strings"
)

var platformTokens = map[string]string{
	"darwin": "darwin", "macos": "darwin", "mac": "darwin",
	"linux": "linux", "musl": "linux", "glibc": "linux", "gnu": "linux", "linuxmusl": "linux",
	"win32": "win32", "windows": "win32",
	"freebsd": "freebsd", "openbsd": "openbsd", "netbsd": "netbsd",
	"sunos": "sunos", "solaris": "sunos", "aix": "aix", "android": "android",
}

var archTokens = map[string]string{
	"x64": "x64", "amd64": "x64", "x86_64": "x64",
	"ia32": "ia32", "x86": "ia32", "i386": "ia32", "i686": "ia32",
	"arm64": "arm64", "aarch64": "arm64",
	"arm": "arm", "armhf": "arm", "armv6": "arm", "armv7": "arm", "armv7l": "arm", "armel": "arm",
	"loong64": "loong64", "loongarch64": "loong64",
	"riscv64": "riscv64", "riscv64d": "riscv64",
	"ppc64": "ppc64", "ppc64le": "ppc64", "s390x": "s390x", "mips64el": "mips64el",
}

// isNativeBinary reports whether a file is a prebuilt native binary, the
// kind packages ship once per platform.
func isNativeBinary(f string) bool {
	lf := strings.ToLower(f)
	for _, ext := range []string{".node", ".dll", ".dylib", ".so"} {
		if strings.HasSuffix(lf, ext) {
			return true
		}
	}
	return strings.Contains(lf, ".so.")
}

// foreignBinary reports whether the path of a native binary names only
// other platforms or architectures than the given ones (e.g.
// "build/koffi/darwin_arm64/koffi.node" for linux/x64). A path naming none
// is not foreign. Either of platform and arch may be empty (not checked).
func foreignBinary(inPkg, platform, arch string) bool {
	lp := strings.ToLower(inPkg)
	lp = strings.ReplaceAll(lp, "x86_64", "x64")
	lp = strings.ReplaceAll(lp, "x86-64", "x64")
	tokens := strings.FieldsFunc(lp, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	var plats, arches []string
	universal := false
	for _, tk := range tokens {
		if p, ok := platformTokens[tk]; ok {
			plats = append(plats, p)
		}
		if a, ok := archTokens[tk]; ok {
			arches = append(arches, a)
		}
		if tk == "universal" || tk == "universal2" {
			universal = true
		}
	}
	if platform != "" && len(plats) > 0 && !slices.Contains(plats, platform) {
		return true
	}
	if arch != "" && len(arches) > 0 && !slices.Contains(arches, arch) && !universal {
		return true
	}
	return false
}

// nodeBuiltins are Node's built-in modules (they need no file).
var nodeBuiltins = map[string]bool{}

func init() {
	for _, m := range strings.Fields(`assert assert/strict async_hooks buffer child_process cluster console
		constants crypto dgram diagnostics_channel dns dns/promises domain events fs fs/promises http
		http2 https inspector inspector/promises module net os path path/posix path/win32 perf_hooks
		process punycode querystring readline readline/promises repl stream stream/consumers
		stream/promises stream/web string_decoder sys timers timers/promises tls trace_events tty url
		util util/types v8 vm wasi worker_threads zlib`) {
		nodeBuiltins[m] = true
	}
}

func isBuiltin(spec string) bool {
	return strings.HasPrefix(spec, "node:") || nodeBuiltins[spec]
}

// ForeignNativeBinary reports whether inPkg (a path inside a package) is a
// prebuilt native binary for another platform or architecture than the
// given ones: the prune stage drops those from unbundled payloads too.
func ForeignNativeBinary(inPkg, platform, arch string) bool {
	return isNativeBinary(inPkg) && foreignBinary(inPkg, platform, arch)
}
