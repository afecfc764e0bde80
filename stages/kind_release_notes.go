package stages

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/release/releasenotes"
	"piship.dev/piship/stages/stage"
)

// ReleaseNotes writes notes.md beside release.json from the distribution's
// git history.
type ReleaseNotes struct{}

func (ReleaseNotes) Name() string    { return "release_notes" }
func (ReleaseNotes) Version() string { return "1" }
func (ReleaseNotes) Doc() string {
	return "Writes notes.md in release_dir when the distribution's directory is in a git repository: a heading with the id and version, " +
		"then the commits since the previous tag that touched the distribution's directory (the newest tag reachable from HEAD other than v<version> or <version>; the whole history without one), " +
		"one line each (subject, short sha), grouped under Features, Fixes, Performance ... Other when subjects are conventional commits. " +
		"git runs in the distribution's directory, read-only, under a timeout, without the network. " +
		"Outside a repository (or without git) it writes nothing and says so in the log. notes.md is outside the archive and checksums.txt."
}

// ReleaseNotesConfig is release_notes' configuration.
type ReleaseNotesConfig struct {
	ReleaseDir   string `cty:"release_dir" required:"true" doc:"the release directory notes.md is written in"`
	Distribution string `cty:"distribution" required:"true" doc:"the distribution directory whose git history the notes read"`
	ID           string `cty:"id" required:"true" doc:"the distribution id (the heading)"`
	Version      string `cty:"version" required:"true" doc:"the version released: its own tag (v<version> or <version>) is not the previous tag"`
}

// ReleaseNotesOutputs are release_notes' outputs.
type ReleaseNotesOutputs struct {
	Path     string `cty:"path" doc:"notes.md, or empty when none was written"`
	Previous string `cty:"previous" doc:"the previous tag the commits start after (empty: the whole history, or no notes)"`
	Commits  int    `cty:"commits" doc:"the commits the notes list"`
}

// Run implements stage.Typed.
func (ReleaseNotes) Run(ctx context.Context, inv *stage.Invocation, cfg ReleaseNotesConfig) (ReleaseNotesOutputs, error) {
	dir := stage.Resolve(inv.Dir, cfg.Distribution)
	n, err := releasenotes.Collect(ctx, dir, cfg.ID, cfg.Version)
	if errors.Is(err, releasenotes.ErrNoRepository) {
		fmt.Fprintf(inv.Log, "no release notes: %v (notes.md is written for a distribution in a git repository)\n", err)
		return ReleaseNotesOutputs{}, nil
	}
	if err != nil {
		return ReleaseNotesOutputs{}, err // coded: EXEC_FAILED or EXEC_TIMEOUT, naming git, the directory and what to do
	}
	p := filepath.Join(cfg.ReleaseDir, release.NotesName)
	if err := atomicfs.WriteFileAll(p, []byte(n.Markdown()), 0o644); err != nil {
		return ReleaseNotesOutputs{}, err
	}
	fmt.Fprintf(inv.Log, "release notes: %s\n", describeNotes(n))
	return ReleaseNotesOutputs{Path: p, Previous: n.Previous, Commits: len(n.Commits)}, nil
}

func describeNotes(n *releasenotes.Notes) string {
	since := "the whole history (no earlier tag)"
	if n.Previous != "" {
		since = "since " + n.Previous
	}
	return canon.Count(len(n.Commits), "commit") + " " + since
}
