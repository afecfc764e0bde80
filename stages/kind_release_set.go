package stages

import (
	"context"
	"path/filepath"

	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
)

// ReleaseSet writes the release set: one SHA256SUMS file over every
// archive of the version (stages/release, sums.go).
type ReleaseSet struct{}

func (ReleaseSet) Name() string    { return "release_set" }
func (ReleaseSet) Version() string { return "1" }
func (ReleaseSet) Doc() string {
	return "Writes <releases>/<id>-<version>.SHA256SUMS beside the archives: `<sha256>  <archive>` per target's published archive, sorted by name " +
		"(sha256sum -c checks it). verify-release, repo add and install take the set by this file. " +
		"Then writes install.sh (and install.ps1 when a win32-x64 archive is among them) beside them: " +
		"for every target of this version published there, the archive, its sha256 and the installer its release directory carries, " +
		"and the TUF root the lock pins (stages/release, bootstrap.go)."
}

// ReleaseSetConfig is release_set's configuration.
type ReleaseSetConfig struct {
	Releases string            `cty:"releases" required:"true" doc:"<out>/releases, where the archives were published"`
	ID       string            `cty:"id" required:"true" doc:"the distribution id"`
	Version  string            `cty:"version" required:"true" doc:"the release version"`
	Archives map[string]string `cty:"archives" required:"true" doc:"the published archives: path -> sha256 (one per target)"`
}

// ReleaseSetOutputs are its outputs.
type ReleaseSetOutputs struct {
	Path     string   `cty:"path" doc:"the set file, <releases>/<id>-<version>.SHA256SUMS"`
	Archives int      `cty:"archives" doc:"archives it lists"`
	Targets  []string `cty:"targets" doc:"their targets, in name order"`
}

// Run implements stage.Typed.
func (ReleaseSet) Run(ctx context.Context, inv *stage.Invocation, cfg ReleaseSetConfig) (ReleaseSetOutputs, error) {
	var entries []release.SumEntry
	for path, sum := range cfg.Archives {
		base := filepath.Base(path)
		n, why := release.ParseArchiveName(base)
		if why != "" || n.ID != cfg.ID || n.Version != cfg.Version || filepath.Dir(path) != filepath.Clean(cfg.Releases) {
			return ReleaseSetOutputs{}, errcode.Newf(errcode.ConfigInvalid, "release_set: %s is not an archive of %s %s in %s: give it each target's published archive (module.target[...].published.archive)", path, cfg.ID, cfg.Version, cfg.Releases)
		}
		entries = append(entries, release.SumEntry{Archive: base, SHA256: sum, Name: n})
	}
	if len(entries) == 0 {
		return ReleaseSetOutputs{}, errcode.Newf(errcode.ConfigInvalid, "release_set: no archive to list")
	}
	s, err := release.WriteSet(cfg.Releases, cfg.ID, cfg.Version, entries)
	if err != nil {
		return ReleaseSetOutputs{}, err
	}
	return ReleaseSetOutputs{Path: s.Path, Archives: len(s.Entries), Targets: s.Targets()}, nil
}
