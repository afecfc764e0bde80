package distribution

import (
	"fmt"
	"runtime"
	"slices"
	"strings"

	"piship.dev/piship/stages/platform"
)

// Node's names (process.platform, process.arch). A target is written
// <platform>-<arch>, as Node's own release archives are named.
var (
	nodePlatforms = platform.Platforms
	nodeArches    = platform.Arches
)

// Other spellings people write for the same thing (Go, uname, marketing).
var (
	platformAliases = map[string]string{
		"windows": "win32", "win": "win32", "win64": "win32",
		"macos": "darwin", "mac": "darwin", "osx": "darwin",
		"solaris": "sunos",
	}
	archAliases = map[string]string{
		"amd64": "x64", "x86_64": "x64", "x86-64": "x64", "x86": "ia32", "386": "ia32", "i386": "ia32", "i686": "ia32",
		"aarch64": "arm64", "armv7": "arm", "armv7l": "arm", "armhf": "arm",
		"ppc64le": "ppc64", "riscv": "riscv64", "loong": "loong64", "loongarch64": "loong64",
	}
)

// Target is a release target in Node's naming: platform linux, darwin,
// win32, ...; arch x64, arm64, ...; Musl for a linux target written
// <platform>-<arch>-musl (a plain linux-* target means glibc).
type Target struct {
	Platform, Arch string
	Musl           bool
}

func (t Target) String() string {
	if t.Musl {
		return t.Platform + "-" + t.Arch + "-musl"
	}
	return t.Platform + "-" + t.Arch
}

// Libc is the C library npm chooses native packages for (npm ci --libc):
// glibc or musl on linux, "" elsewhere.
func (t Target) Libc() string {
	switch {
	case t.Platform != "linux":
		return ""
	case t.Musl:
		return "musl"
	}
	return "glibc"
}

// HostTarget is this machine's target: platform.HostTarget, with -musl on
// a musl linux.
func HostTarget() Target {
	p, a := platform.Host()
	return Target{Platform: p, Arch: a, Musl: p == "linux" && platform.Libc() == "musl"}
}

// ParseTarget parses "<platform>-<arch>" or "linux-<arch>-musl". The error
// says what is wrong and, for Go or uname spellings (linux-amd64,
// darwin-aarch64), the Node name to write instead.
func ParseTarget(s string) (Target, error) {
	platform, arch, ok := strings.Cut(s, "-")
	if !ok || platform == "" || arch == "" {
		return Target{}, fmt.Errorf("%q is not a target: write <platform>-<arch> in Node's naming, e.g. linux-x64, linux-arm64, darwin-arm64 or win32-x64 (linux-x64-musl for musl)", s)
	}
	if a, libc, ok := strings.Cut(arch, "-"); ok {
		if libc != "musl" || platform != "linux" {
			return Target{}, fmt.Errorf("target %q: only a linux target names its C library, and only as -musl (linux-x64-musl); a plain linux-<arch> is glibc", s)
		}
		t, err := ParseTarget(platform + "-" + a)
		t.Musl = err == nil
		return t, err
	}
	fixP, fixA := platform, arch
	var problems []string
	if !slices.Contains(nodePlatforms, platform) {
		if a, ok := platformAliases[strings.ToLower(platform)]; ok {
			fixP = a
		} else if sug := suggest(strings.ToLower(platform), nodePlatforms); sug != "" {
			fixP = sug
		} else {
			fixP = ""
		}
		problems = append(problems, fmt.Sprintf("platform %q is not one of Node's (%s)", platform, strings.Join(nodePlatforms, ", ")))
	}
	if !slices.Contains(nodeArches, arch) {
		if a, ok := archAliases[strings.ToLower(arch)]; ok {
			fixA = a
		} else if sug := suggest(strings.ToLower(arch), nodeArches); sug != "" {
			fixA = sug
		} else {
			fixA = ""
		}
		problems = append(problems, fmt.Sprintf("arch %q is not one of Node's (%s)", arch, strings.Join(nodeArches, ", ")))
	}
	if len(problems) == 0 {
		return Target{Platform: platform, Arch: arch}, nil
	}
	msg := fmt.Sprintf("target %q: %s", s, strings.Join(problems, "; "))
	if fixP != "" && fixA != "" {
		msg += fmt.Sprintf(". Did you mean %q?", fixP+"-"+fixA)
	}
	return Target{}, fmt.Errorf("%s", msg)
}

// ShippedTools are the file names of the binaries a release for the host
// platform carries at the top of its directory, where install.sh looks for
// them: piship and piship-launch (".exe" on Windows). They are outside the
// archive and checksums.txt; build-info.json has their digests.
func ShippedTools() []string {
	if runtime.GOOS == "windows" {
		return []string{"piship.exe", "piship-launch.exe"}
	}
	return []string{"piship", "piship-launch"}
}

// InstallerBinary is the file name of the end-user installer
// (cmd/piship-install) beside piship: what a release ships as its piship.
func InstallerBinary() string {
	if runtime.GOOS == "windows" {
		return "piship-install.exe"
	}
	return "piship-install"
}
