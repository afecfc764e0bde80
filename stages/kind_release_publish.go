package stages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/installers"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
)

// ReleasePublish moves a finished release into <out>/releases/.
type ReleasePublish struct{}

func (ReleasePublish) Name() string    { return "release_publish" }
func (ReleasePublish) Version() string { return "4" }
func (ReleasePublish) Doc() string {
	return "Renames the finished release directory and its archive and sidecar from the staging directory into releases/. " +
		"An existing release of the same name is set aside first and removed only after the new one stands. " +
		"With ship_tools, the release directory gets the end-user installer (as piship) and launcher for its target (beside install.sh, which uses them; " +
		"not in the archive, not in checksums.txt; their digests go to build-info.json): the ones the lock's installers block pins for the target, " +
		"read from its directory source (under distribution) or fetched into <piship cache>/installers/<sha256>, each checked against its pin first (INTEGRITY_FAILED, nothing shipped, when one differs); " +
		"without pins, for the host's target the ones beside the running piship, for another target none (said in the log). " +
		"(install.sh and install.ps1 beside the archives are release_set's: written once every target is published.)"
}

// ReleasePublishConfig is release_publish's configuration.
type ReleasePublishConfig struct {
	Staging   string `cty:"staging" required:"true" doc:"the staging root holding the release directory and its archive"`
	Name      string `cty:"name" required:"true" doc:"the release name <id>-<version>-<target>"`
	Releases  string `cty:"releases" required:"true" doc:"<out>/releases"`
	ShipTools bool   `cty:"ship_tools" doc:"put piship and piship-launch into the release directory: the installers block's pins for target, else the ones beside piship when target is the host's"`
	Target    string `cty:"target" doc:"the release's target (<platform>-<arch>)"`
	// Distribution and CacheHome are where the pinned installers come
	// from: a directory source is relative to the distribution, a URL's
	// downloads are kept in the cache.
	Distribution string `cty:"distribution" doc:"the distribution directory an installers block's directory source is relative to"`
	CacheHome    string `cty:"cache_home" doc:"piship cache for installers downloaded from a URL source (empty: PISHIP_CACHE_HOME)"`
}

// ReleasePublishOutputs are release_publish's outputs.
type ReleasePublishOutputs struct {
	Path    string               `cty:"path" doc:"the published release directory, <releases>/<name>"`
	Archive string               `cty:"archive" doc:"the published archive, <releases>/<name>.tar.zst"`
	Tools   []release.ToolDigest `cty:"tools" doc:"the shipped binaries: name, sha256, bytes"`
}

// Run implements stage.Typed.
func (ReleasePublish) Run(ctx context.Context, inv *stage.Invocation, cfg ReleasePublishConfig) (ReleasePublishOutputs, error) {
	staging, name, releases := cfg.Staging, cfg.Name, cfg.Releases
	if _, ok := payload.Lookup(staging); !ok {
		return ReleasePublishOutputs{}, fmt.Errorf("no open staging directory %s: release_publish runs in the same release as release_inputs", staging)
	}
	if err := os.MkdirAll(releases, 0o755); err != nil {
		return ReleasePublishOutputs{}, err
	}
	var tools []release.ToolDigest
	if cfg.ShipTools && cfg.Target != "" {
		shipped, err := shipTargetTools(ctx, inv, cfg, filepath.Join(staging, name))
		if err != nil {
			return ReleasePublishOutputs{}, err
		}
		tools = shipped
	}
	final := filepath.Join(releases, name)
	old := ""
	if _, err := os.Lstat(final); err == nil {
		old = filepath.Join(releases, ".old-"+name+"-"+canon.SHA256Hex([]byte(staging))[:12])
		os.RemoveAll(old)
		if err := os.Rename(final, old); err != nil {
			return ReleasePublishOutputs{}, fmt.Errorf("cannot set the previous release aside: %v", err)
		}
	}
	if err := os.Rename(filepath.Join(staging, name), final); err != nil {
		if old != "" {
			_ = os.Rename(old, final)
		}
		return ReleasePublishOutputs{}, err
	}
	// Files replace their predecessors atomically; the sidecar last, so a
	// sidecar always describes the archive beside it.
	arc := name + releaseFormat.Ext()
	for _, f := range []string{arc, arc + ".sha256"} {
		if err := os.Rename(filepath.Join(staging, f), filepath.Join(releases, f)); err != nil {
			return ReleasePublishOutputs{}, err
		}
	}
	// A release of the same name in the other format (an earlier piship's
	// .tar.gz) is replaced too: one archive per release.
	for _, f := range []archive.Format{archive.V1, archive.V2} {
		if f != releaseFormat {
			for _, p := range []string{name + f.Ext() + ".sha256", name + f.Ext()} {
				if err := os.Remove(filepath.Join(releases, p)); err != nil && !os.IsNotExist(err) {
					return ReleasePublishOutputs{}, err
				}
			}
		}
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			fmt.Fprintf(inv.Log, "%s: could not remove the replaced release %s: %v\n", inv.Pipeline, old, err)
		}
	}
	return ReleasePublishOutputs{Path: final, Archive: filepath.Join(releases, arc), Tools: tools}, nil
}

// shipTargetTools puts the installer and launcher for cfg.Target into
// releaseDir: the ones the release's lock pins for it, else for the
// host's target the ones beside the running piship (shipTools), else none,
// said in the log.
func shipTargetTools(ctx context.Context, inv *stage.Invocation, cfg ReleasePublishConfig, releaseDir string) ([]release.ToolDigest, error) {
	l, _, err := distribution.ReadLock(filepath.Join(releaseDir, "payload"))
	if err != nil {
		return nil, err
	}
	target := cfg.Target
	if pins, ok := l.Installers.For(target); ok {
		if !l.Installers.IsURL() && cfg.Distribution == "" {
			return nil, errcode.Newf(errcode.ConfigInvalid, "release_publish %s: the installers block reads %s/%s/ of the distribution directory, and this stage was given none: set distribution = the distribution directory in its configuration", inv.Name, l.Installers.Source, target)
		}
		home := cfg.CacheHome
		if home == "" && l.Installers.IsURL() {
			if home, err = cache.Home(inv.Getenv); err != nil {
				return nil, errcode.Newf(errcode.ConfigUnavailable, "%v", err)
			}
		}
		bins := installers.Pinned(l.Installers, stage.Resolve(inv.Dir, cfg.Distribution), target, pins, [2]string{release.InstallerName(target), release.LauncherName(target)})
		// Both are read and checked before either is written: a release
		// ships the pinned pair or nothing.
		var data [2][]byte
		for i, b := range bins {
			if data[i], err = installers.Read(ctx, home, b); err != nil {
				return nil, err
			}
		}
		var shipped []release.ToolDigest
		for i, b := range bins {
			if err := atomicfs.WriteFileAll(filepath.Join(releaseDir, b.Name), data[i], 0o755); err != nil {
				return nil, err
			}
			shipped = append(shipped, release.ToolDigest{Name: b.Name, SHA256: b.SHA256, Bytes: int64(len(data[i]))})
		}
		return shipped, nil
	}
	if target == platform.HostTarget() {
		shipped, err := shipTools(releaseDir, inv.Getenv(release.SelfBinaryEnv))
		if err != nil {
			return nil, fmt.Errorf("cannot put the piship binaries into the release: %v", err)
		}
		return shipped, nil
	}
	fmt.Fprintf(inv.Log, "%s: no installer for %s: distribution.hcl's installers block pins none for it, so its release directory carries no piship and install.sh on a %s host needs piship on PATH (make installers builds them and writes the block: docs/releasing.md)\n", inv.Pipeline, target, target)
	return nil, nil
}

// shipTools copies the end-user installer (piship-install beside the
// running piship, shipped under piship's name: an end user runs ./piship
// install; the running piship itself when none stands there) and
// piship-launch from beside it when present into releaseDir (mode 0755),
// hashing each as it goes. It returns what it copied.
func shipTools(releaseDir, exe string) ([]release.ToolDigest, error) {
	if exe == "" {
		return nil, nil
	}
	names := distribution.ShippedTools()
	installer := filepath.Join(filepath.Dir(exe), distribution.InstallerBinary())
	if _, err := os.Stat(installer); err != nil {
		installer = exe // a piship without the installer: the release carries every command
	}
	srcs := []string{installer, filepath.Join(filepath.Dir(exe), names[1])}
	var shipped []release.ToolDigest
	for i, src := range srcs {
		data, err := os.ReadFile(src)
		if err != nil {
			if i > 0 && os.IsNotExist(err) {
				continue // a piship without its launcher: shims run piship launch
			}
			return nil, err
		}
		if err := atomicfs.WriteFileAll(filepath.Join(releaseDir, names[i]), data, 0o755); err != nil {
			return nil, err
		}
		shipped = append(shipped, release.ToolDigest{Name: names[i], SHA256: canon.SHA256Hex(data), Bytes: int64(len(data))})
	}
	return shipped, nil
}
