// Package platform is piship's one mapping between Go's names for a
// machine (GOOS, GOARCH) and Node's (process.platform, process.arch), the
// lists of Node's names a release target may use, and the detection of
// the C library (glibc or musl) that decides which prebuilt native
// packages npm installs. It imports only the standard library: the
// launcher reaches it through stages/home/receipt.
package platform

import "runtime"

// Platforms are Node's documented process.platform values; a release
// target's platform is one of them.
var Platforms = []string{"aix", "android", "darwin", "freebsd", "linux", "openbsd", "sunos", "win32"}

// Arches are the process.arch values a release target's arch may be.
var Arches = []string{"arm", "arm64", "ia32", "loong64", "mips", "mipsel", "ppc64", "riscv64", "s390x", "x64"}

// Platform maps a GOOS to Node's process.platform: windows is win32,
// solaris and illumos are sunos, ios is darwin; linux, darwin, freebsd,
// openbsd, netbsd, aix and android keep their names (as does any GOOS
// Node has no name for).
func Platform(goos string) string {
	switch goos {
	case "windows":
		return "win32"
	case "solaris", "illumos":
		return "sunos"
	case "ios":
		return "darwin"
	}
	return goos
}

// Arch maps a GOARCH to Node's process.arch: amd64 is x64, 386 ia32,
// ppc64le ppc64, mipsle mipsel and mips64le mips64el; arm64, arm, s390x,
// riscv64, loong64, ppc64 and mips keep their names.
func Arch(goarch string) string {
	switch goarch {
	case "amd64":
		return "x64"
	case "386":
		return "ia32"
	case "ppc64le":
		return "ppc64"
	case "mipsle":
		return "mipsel"
	case "mips64le":
		return "mips64el"
	}
	return goarch
}

// Target maps a GOOS/GOARCH pair to a target in Node's naming,
// <platform>-<arch> as Node's release archives are named (linux-x64,
// darwin-arm64, win32-x64).
func Target(goos, goarch string) string { return Platform(goos) + "-" + Arch(goarch) }

// Host returns this machine's platform and architecture as Node names
// them: ("linux", "x64"), ("darwin", "arm64"), ("win32", "x64"). It
// describes piship's own build; a node of another architecture (an x64
// node under Rosetta on an arm64 Mac) is not detected.
func Host() (platform, arch string) { return Platform(runtime.GOOS), Arch(runtime.GOARCH) }

// HostTarget is this machine's target in Node's naming (linux-x64 for
// GOOS=linux GOARCH=amd64).
func HostTarget() string { return Target(runtime.GOOS, runtime.GOARCH) }
