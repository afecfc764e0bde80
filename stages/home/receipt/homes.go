package receipt

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// The environment variables of the homes.
const (
	EnvInstallHome = "PISHIP_INSTALL_HOME"
	EnvBinHome     = "PISHIP_BIN_HOME"
	EnvStateHome   = "PISHIP_STATE_HOME"
)

// Homes are the three directories of an installation, absolute and clean.
// State is the root of per-distribution state (see StateDir).
type Homes struct {
	Install string
	Bin     string
	State   string
}

// ResolveHomes reads the homes from getenv (an empty value is unset) with
// the defaults ~/.local/share/piship, ~/.local/bin and ~/.piship, makes
// them absolute and checks that they do not overlap. The home directory is
// getenv("HOME") (on Windows USERPROFILE first), else os.UserHomeDir.
func ResolveHomes(getenv func(string) string) (Homes, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var userHome string
	lookupHome := func() (string, error) {
		if userHome != "" {
			return userHome, nil
		}
		if runtime.GOOS == "windows" {
			userHome = getenv("USERPROFILE")
		}
		if userHome == "" {
			userHome = getenv("HOME")
		}
		if userHome == "" {
			h, err := os.UserHomeDir()
			if err != nil || h == "" {
				return "", Errorf(CodeUnavailable, "no home directory to place the piship homes under (set HOME, or %s, %s and %s)", EnvInstallHome, EnvBinHome, EnvStateHome)
			}
			userHome = h
		}
		return userHome, nil
	}
	resolve := func(env string, def ...string) (string, error) {
		v := getenv(env)
		if v == "" {
			h, err := lookupHome()
			if err != nil {
				return "", err
			}
			v = filepath.Join(append([]string{h}, def...)...)
		}
		abs, err := filepath.Abs(v)
		if err != nil {
			return "", Errorf(CodeConfigInvalid, "%s=%q: %v", env, v, err)
		}
		return abs, nil
	}
	var h Homes
	var err error
	if h.Install, err = resolve(EnvInstallHome, ".local", "share", "piship"); err != nil {
		return Homes{}, err
	}
	if h.Bin, err = resolve(EnvBinHome, ".local", "bin"); err != nil {
		return Homes{}, err
	}
	if h.State, err = resolve(EnvStateHome, ".piship"); err != nil {
		return Homes{}, err
	}
	return h, h.Check()
}

// Check refuses homes that are empty, relative, equal or nested
// (CONFIG_INVALID naming both variables and paths).
func (h Homes) Check() error {
	named := []struct{ env, path string }{{EnvInstallHome, h.Install}, {EnvBinHome, h.Bin}, {EnvStateHome, h.State}}
	for _, n := range named {
		if n.path == "" || !filepath.IsAbs(n.path) {
			return Errorf(CodeConfigInvalid, "%s must be an absolute directory, not %q", n.env, n.path)
		}
	}
	for i := range named {
		for j := i + 1; j < len(named); j++ {
			a, b := named[i], named[j]
			switch {
			case samePath(a.path, b.path):
				return Errorf(CodeConfigInvalid, "%s and %s are the same directory (%s): the piship homes must not overlap", a.env, b.env, a.path)
			case within(a.path, b.path):
				return Errorf(CodeConfigInvalid, "%s (%s) is inside %s (%s): the piship homes must not overlap", b.env, b.path, a.env, a.path)
			case within(b.path, a.path):
				return Errorf(CodeConfigInvalid, "%s (%s) is inside %s (%s): the piship homes must not overlap", a.env, a.path, b.env, b.path)
			}
		}
	}
	return nil
}

// caseInsensitive file systems by default: compare paths without case there.
var caseInsensitive = runtime.GOOS == "windows" || runtime.GOOS == "darwin"

func samePath(a, b string) bool {
	a, b = filepath.Clean(a), filepath.Clean(b)
	if caseInsensitive {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// within reports whether child lies strictly inside parent.
func within(parent, child string) bool {
	parent, child = filepath.Clean(parent), filepath.Clean(child)
	if caseInsensitive {
		parent, child = strings.ToLower(parent), strings.ToLower(child)
	}
	if parent == child {
		return false
	}
	prefix := parent
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return strings.HasPrefix(child, prefix)
}

// StateDir is the state directory of distribution id: <State>/<id>.
func (h Homes) StateDir(id string) string { return filepath.Join(h.State, id) }

// Layout of the install home. Every function takes the install home and a
// distribution id that CheckID accepted.

// ReceiptPath is receipts/<id>.json.
func ReceiptPath(installHome, id string) string {
	return filepath.Join(installHome, "receipts", id+".json")
}

// GatePath is receipts/.<id>.launch.lock, the launch gate.
func GatePath(installHome, id string) string {
	return filepath.Join(installHome, "receipts", "."+id+".launch.lock")
}

// MaintenancePath is receipts/.<id>.install.lock, held by install, update,
// rollback, doctor and uninstall for their whole run (never by a launch).
func MaintenancePath(installHome, id string) string {
	return filepath.Join(installHome, "receipts", "."+id+".install.lock")
}

// TrustPath is trust/<id>.json.
func TrustPath(installHome, id string) string {
	return filepath.Join(installHome, "trust", id+".json")
}

// TrustDir is trust/<id>/, the installation's trusted TUF metadata
// (go-tuf's local metadata store: root.json, timestamp.json,
// snapshot.json, targets.json), the directory stages/tuf's Update keeps
// current and doctor reports. An uninstall renames it to
// trust/.<id>.uninstalling-<rand> (UninstallingPrefix) before removing it,
// as it does apps/<id>.
func TrustDir(installHome, id string) string { return filepath.Join(installHome, "trust", id) }

// LauncherDir is <install home>/launcher, where install keeps the
// launcher the command shims run (piship-launch) and its stamp.
func LauncherDir(installHome string) string { return filepath.Join(installHome, "launcher") }

// AppDir is apps/<id>.
func AppDir(installHome, id string) string { return filepath.Join(installHome, "apps", id) }

// IDs lists the distributions the install home knows, sorted: those with
// a receipt and those with only an apps/<id> directory (what a failed
// first install leaves set aside, for doctor to reclaim).
func IDs(installHome string) ([]string, error) {
	seen := map[string]bool{}
	for _, sub := range []string{"receipts", "apps"} {
		entries, err := os.ReadDir(filepath.Join(installHome, sub))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, Errorf(CodeUnavailable, "cannot list %s: %w", filepath.Join(installHome, sub), err)
		}
		for _, e := range entries {
			id := e.Name()
			if sub == "receipts" {
				var ok bool
				if id, ok = strings.CutSuffix(id, ".json"); !ok || e.IsDir() {
					continue
				}
			} else if !e.IsDir() {
				continue
			}
			if ValidName(id) {
				seen[id] = true
			}
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// VersionDir is apps/<id>/<version>.
func VersionDir(installHome, id, version string) string {
	return filepath.Join(installHome, "apps", id, version)
}

// LeasesDir is apps/<id>/.runtime-leases.
func LeasesDir(installHome, id string) string {
	return filepath.Join(installHome, "apps", id, LeasesName)
}

// DownloadsDir is apps/<id>/.downloads.
func DownloadsDir(installHome, id string) string {
	return filepath.Join(installHome, "apps", id, DownloadsName)
}

// Names inside apps/<id>.
const (
	LeasesName     = ".runtime-leases"
	DownloadsName  = ".downloads"
	RetainedPrefix = ".retained-"
	StagingPrefix  = ".staging-"
)

// UninstallingPrefix starts the name apps/<id> is renamed to by an
// uninstall before it is removed: apps/.<id>.uninstalling-<rand>. It is
// not a distribution id (it starts with '.'), so IDs never lists it.
func UninstallingPrefix(id string) string { return "." + id + ".uninstalling-" }

// RetainedVersion returns the version of a ".retained-<version>-<rand>"
// name, or "" when name is not one.
func RetainedVersion(name string) string {
	rest, ok := strings.CutPrefix(name, RetainedPrefix)
	if !ok {
		return ""
	}
	i := strings.LastIndexByte(rest, '-')
	if i <= 0 {
		return ""
	}
	return rest[:i]
}

var (
	nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`) })
	// semver.org's regular expression, as dist checks versions.
	semverRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)
	})
)

// ValidName reports whether s is a valid distribution id or command name:
// what dist accepts (lowercase letters, digits, '.', '_', '-', starting
// with a letter or digit, at most 64 bytes, not ending in '.').
func ValidName(s string) bool {
	return len(s) <= 64 && nameRE().MatchString(s) && !strings.HasSuffix(s, ".")
}

// ValidVersion reports whether v is a semantic version (which can never be
// "." or "..", nor start with "." like the bookkeeping names of apps/<id>).
func ValidVersion(v string) bool { return len(v) <= 128 && semverRE().MatchString(v) }

// CheckID refuses an id that cannot be a distribution id (CONFIG_INVALID).
// Every path of the layout is built from checked ids only.
func CheckID(id string) error {
	if !ValidName(id) {
		return Errorf(CodeConfigInvalid, "%q is not a distribution id (lowercase letters, digits, '.', '_' and '-', starting with a letter or digit)", id)
	}
	return nil
}
