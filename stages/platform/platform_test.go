package platform

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Every GOOS and GOARCH Node has a name for maps to the name Node
// documents (process.platform: aix darwin freebsd linux openbsd sunos
// win32 android; process.arch: arm arm64 ia32 loong64 mips mipsel ppc64
// riscv64 s390x x64), plus mips64el, what a node built for mips64le
// reports.
func TestNodeNames(t *testing.T) {
	platforms := map[string]string{
		"aix": "aix", "android": "android", "darwin": "darwin", "ios": "darwin",
		"freebsd": "freebsd", "linux": "linux", "openbsd": "openbsd",
		"solaris": "sunos", "illumos": "sunos", "windows": "win32",
	}
	for goos, want := range platforms {
		if got := Platform(goos); got != want {
			t.Errorf("Platform(%s) = %s, want %s", goos, got, want)
		}
		if !slices.Contains(Platforms, want) {
			t.Errorf("%s is not in Platforms", want)
		}
	}
	arches := map[string]string{
		"arm": "arm", "arm64": "arm64", "386": "ia32", "loong64": "loong64",
		"mips": "mips", "mipsle": "mipsel", "ppc64": "ppc64", "ppc64le": "ppc64",
		"riscv64": "riscv64", "s390x": "s390x", "amd64": "x64",
	}
	for goarch, want := range arches {
		if got := Arch(goarch); got != want {
			t.Errorf("Arch(%s) = %s, want %s", goarch, got, want)
		}
		if !slices.Contains(Arches, want) {
			t.Errorf("%s is not in Arches", want)
		}
	}
	if got := Arch("mips64le"); got != "mips64el" {
		t.Errorf("Arch(mips64le) = %s, want mips64el", got)
	}
	if Target("linux", "amd64") != "linux-x64" || Target("windows", "arm64") != "win32-arm64" || Target("darwin", "arm64") != "darwin-arm64" {
		t.Error("Target")
	}
	if got, want := HostTarget(), Platform(runtime.GOOS)+"-"+Arch(runtime.GOARCH); got != want {
		t.Errorf("HostTarget() = %s, want %s", got, want)
	}
}

func TestPlatform(t *testing.T) {
	platform, arch := Host()
	t.Logf("Host() = %s, %s; Libc() = %q", platform, arch, Libc())
	if platform == "" || arch == "" {
		t.Fatal("empty platform or arch")
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" && (platform != "linux" || arch != "x64") {
		t.Fatalf("Host() = %s, %s on linux/amd64", platform, arch)
	}
	for goos, want := range map[string]string{"windows": "win32", "darwin": "darwin", "linux": "linux", "illumos": "sunos", "freebsd": "freebsd"} {
		if got := Platform(goos); got != want {
			t.Errorf("Platform(%s) = %s, want %s", goos, got, want)
		}
	}
	for goarch, want := range map[string]string{"amd64": "x64", "arm64": "arm64", "386": "ia32", "arm": "arm", "ppc64le": "ppc64", "s390x": "s390x", "riscv64": "riscv64", "loong64": "loong64", "mipsle": "mipsel"} {
		if got := Arch(goarch); got != want {
			t.Errorf("Arch(%s) = %s, want %s", goarch, got, want)
		}
	}
	// If node is installed, it agrees.
	if _, err := exec.LookPath("node"); err == nil {
		raw, err := exec.Command("node", "-p", "process.platform + ' ' + process.arch").CombinedOutput()
		if err != nil {
			t.Fatalf("node -p: %v\n%s", err, raw)
		}
		out := strings.TrimSpace(string(raw))
		if out != platform+" "+arch {
			t.Errorf("node says %q, Host() %s %s", out, platform, arch)
		}
	}
}

func TestLibc(t *testing.T) {
	got := Libc()
	if runtime.GOOS != "linux" {
		if got != "" {
			t.Fatalf("Libc() = %q off Linux", got)
		}
		return
	}
	if got != "glibc" && got != "musl" {
		t.Fatalf("Libc() = %q", got)
	}
	// The process-free answer agrees with ldd where there is one.
	if _, err := exec.LookPath("ldd"); err == nil {
		if want := libcOfLdd(); want != "" && want != got {
			t.Fatalf("Libc() = %q, ldd --version says %q", got, want)
		}
	}
	for interp, want := range map[string]string{
		"/lib64/ld-linux-x86-64.so.2":   "glibc",
		"/lib/ld-linux-aarch64.so.1":    "glibc",
		"/lib64/ld64.so.2":              "glibc",
		"/lib/ld-musl-x86_64.so.1":      "musl",
		"/lib/ld-musl-aarch64.so.1":     "musl",
		"":                              "",
		"/usr/libexec/ld-something.so1": "",
	} {
		if got := libcOfInterp(interp); got != want {
			t.Errorf("libcOfInterp(%q) = %q, want %q", interp, got, want)
		}
	}
	for out, want := range map[string]string{
		"ldd (Debian GLIBC 2.36-9+deb12u14) 2.36\n": "glibc",
		"ldd (GNU libc) 2.39\n":                     "glibc",
		"musl libc (x86_64)\nVersion 1.2.5\n":       "musl",
		"sh: ldd: not found":                        "",
	} {
		if got := libcOfLddOutput(out); got != want {
			t.Errorf("libcOfLddOutput(%q) = %q, want %q", out, got, want)
		}
	}
	if interp := elfInterp(os.Args[0]); interp != "" && libcOfInterp(interp) == "" {
		t.Errorf("unrecognised interpreter %q of the test binary", interp)
	}
}
