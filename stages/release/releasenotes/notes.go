// Package releasenotes writes a release's notes.md (release.NotesName)
// from the git history of the distribution's directory: the commits since
// the previous tag that touched it, one line each, grouped under headings when their
// subjects are conventional commits (feat:, fix(scope)!: ...), the way
// GoReleaser's changelog groups them. It runs git (build side only: the
// installer never links it) in the distribution's directory, read-only,
// under a timeout and without the network.
package releasenotes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"

	"piship.dev/piship/stages/proc"
	"piship.dev/piship/stages/stage/errcode"
)

// Timeout bounds each git command.
const Timeout = 20 * time.Second

// Commit is one commit of the notes.
type Commit struct {
	SHA     string // the full object name
	Subject string
}

// Short is the commit's sha as the notes print it: its first 7 digits,
// the same in every clone (git's %h grows with the repository).
func (c Commit) Short() string {
	if len(c.SHA) > 7 {
		return c.SHA[:7]
	}
	return c.SHA
}

// Notes are what a release's notes say.
type Notes struct {
	ID, Version string
	// Previous is the tag the commits start after ("" when none: the
	// whole history).
	Previous string
	// Commits in git log order (newest first).
	Commits []Commit
}

// ErrNoRepository is returned (wrapped, with git's reason) when dir is not
// in a git repository, the repository has no commit, or git is absent.
var ErrNoRepository = errors.New("not in a git repository")

// Collect reads the commits that touched dir since the previous tag from
// the repository dir is in: the newest tag reachable from HEAD that is not
// the version's own (v<version> or <version>), else the whole history.
func Collect(ctx context.Context, dir, id, version string) (*Notes, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("%w: git is not on PATH", ErrNoRepository)
	}
	if _, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		if errcode.Of(err) == errcode.ExecTimeout {
			return nil, err
		}
		why := strings.TrimPrefix(err.Error(), errcode.ExecFailed+": release notes: ")
		if strings.Contains(why, ": exit status 1:") {
			why = "HEAD in " + dir + " names no commit yet"
		}
		return nil, fmt.Errorf("%w: %s", ErrNoRepository, strings.SplitN(why, ": repair the repository", 2)[0])
	}
	own := []string{"v" + version, version}
	tags, err := git(ctx, dir, "tag", "--merged", "HEAD")
	if err != nil {
		return nil, err
	}
	n := &Notes{ID: id, Version: version}
	others := slices.DeleteFunc(strings.Fields(tags), func(t string) bool { return slices.Contains(own, t) })
	rng := "HEAD"
	if len(others) > 0 {
		args := []string{"describe", "--tags", "--abbrev=0"}
		for _, t := range own {
			args = append(args, "--exclude", t)
		}
		prev, err := git(ctx, dir, append(args, "HEAD")...)
		if err != nil {
			return nil, err
		}
		n.Previous = strings.TrimSpace(prev)
		rng = "refs/tags/" + n.Previous + "..HEAD"
	}
	// Only the commits that touched the distribution's directory: one
	// of several apps in a repository (or hello inside piship's) gets its
	// own changes, not the whole repository's, as GoReleaser's monorepo
	// changelog does. At the repository's top this is every commit.
	out, err := git(ctx, dir, "log", "--no-color", "--format=%H%x00%s", rng, "--", ".")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(out, "\n") {
		if sha, subject, ok := strings.Cut(line, "\x00"); ok {
			n.Commits = append(n.Commits, Commit{SHA: sha, Subject: strings.TrimSpace(subject)})
		}
	}
	return n, nil
}

// git runs one read-only git command in dir: no pager, no prompt, no
// optional locks, the C locale, under Timeout. Nothing it runs reaches a
// remote.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-pager", "-c", "core.quotepath=off", "-c", "log.showSignature=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_PAGER=cat")
	out, err := proc.Output(cmd)
	if err != nil {
		if ctx.Err() != nil {
			return "", errcode.Newf(errcode.ExecTimeout, "release notes: git %s timed out after %s in %s: find what holds the repository (a lock, a slow disk), or release from a copy outside it", args[0], Timeout, dir)
		}
		msg := err.Error()
		if ee, ok := errors.AsType[*exec.ExitError](err); ok && len(strings.TrimSpace(string(ee.Stderr))) > 0 {
			msg = strings.TrimSpace(strings.SplitN(strings.TrimSpace(string(ee.Stderr)), "\n", 2)[0])
		}
		return "", errcode.Newf(errcode.ExecFailed, "release notes: git %s in %s: %s: repair the repository (git fsck), or release from a copy outside it", args[0], dir, msg)
	}
	return string(out), nil
}

// A group of conventional commits: the types it holds and its heading.
type group struct {
	heading string
	types   []string
}

// groups are the headings, in the order the notes print them; a breaking
// change (type! or scope!) goes under the first, whatever its type, and a
// subject that is no conventional commit (or of a type not listed) under
// Other.
var groups = []group{
	{"Breaking changes", nil},
	{"Features", []string{"feat", "feature"}},
	{"Fixes", []string{"fix", "bugfix"}},
	{"Performance", []string{"perf"}},
	{"Security", []string{"security", "sec"}},
	{"Reverts", []string{"revert"}},
	{"Refactoring", []string{"refactor"}},
	{"Documentation", []string{"docs", "doc"}},
	{"Tests", []string{"test", "tests"}},
	{"Build", []string{"build", "deps"}},
	{"CI", []string{"ci"}},
	{"Chores", []string{"chore", "style"}},
	{"Other", nil},
}

// conventional is `type(scope)!: description`.
var conventional = regexp.MustCompile(`^([A-Za-z]+)(?:\(([^()]*)\))?(!)?: +(\S.*)$`)

// Parsed is a subject read as a conventional commit.
type Parsed struct {
	Type, Scope, Description string
	Breaking                 bool
}

// Parse reads subject as a conventional commit of a type a heading holds
// (ok false when it is not one: "Note: ..." or "wip: ..." stay as they are).
func Parse(subject string) (p Parsed, ok bool) {
	m := conventional.FindStringSubmatch(subject)
	if m == nil {
		return p, false
	}
	p = Parsed{Type: strings.ToLower(m[1]), Scope: m[2], Breaking: m[3] == "!", Description: m[4]}
	for _, g := range groups {
		if slices.Contains(g.types, p.Type) {
			return p, true
		}
	}
	return Parsed{}, false
}

// Markdown is notes.md: a heading with the id and version, what the
// commits start after, then one line per commit, "- subject (sha)". When
// any subject is a conventional commit they are grouped under headings
// (Features, Fixes, Performance, ..., Other), the type dropped and the
// scope kept in bold; each group keeps git log's order.
func (n *Notes) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s %s\n\n", n.ID, n.Version)
	switch {
	case len(n.Commits) == 0 && n.Previous != "":
		fmt.Fprintf(&b, "No commits since %s.\n", n.Previous)
		return b.String()
	case len(n.Commits) == 0:
		b.WriteString("No commits.\n")
		return b.String()
	case n.Previous != "":
		fmt.Fprintf(&b, "Changes since %s:\n", n.Previous)
	default:
		b.WriteString("Changes (the whole history: no earlier tag):\n")
	}
	grouped := false
	for _, c := range n.Commits {
		if _, ok := Parse(c.Subject); ok {
			grouped = true
			break
		}
	}
	if !grouped {
		b.WriteString("\n")
		for _, c := range n.Commits {
			fmt.Fprintf(&b, "- %s (%s)\n", c.Subject, c.Short())
		}
		return b.String()
	}
	lines := make([][]string, len(groups))
	for _, c := range n.Commits {
		p, ok := Parse(c.Subject)
		g := len(groups) - 1
		text := c.Subject
		if ok {
			text = p.Description
			if p.Scope != "" {
				text = "**" + p.Scope + ":** " + text
			}
			if p.Breaking {
				g = 0
			} else {
				for i, gr := range groups {
					if slices.Contains(gr.types, p.Type) {
						g = i
						break
					}
				}
			}
		}
		lines[g] = append(lines[g], fmt.Sprintf("- %s (%s)", text, c.Short()))
	}
	for i, gr := range groups {
		if len(lines[i]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n", gr.heading, strings.Join(lines[i], "\n"))
	}
	return b.String()
}
