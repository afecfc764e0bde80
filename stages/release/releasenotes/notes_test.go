package releasenotes

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes a repository in a new directory; run runs git in it.
func gitRepo(t *testing.T) (string, func(args ...string) string) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q", "-b", "main")
	return dir, run
}

func commit(t *testing.T, dir string, run func(...string) string, subject string) string {
	t.Helper()
	f := filepath.Join(dir, "f.txt")
	old, _ := os.ReadFile(f)
	if err := os.WriteFile(f, append(old, subject+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", "f.txt")
	run("commit", "-q", "-m", subject)
	return run("rev-parse", "HEAD")[:7]
}

// A repository with a previous tag, conventional and plain commits after
// it and the release's own tag on HEAD: the notes hold the commits since
// the previous tag (not those before it, not the own tag's range), grouped
// in a fixed heading order, each group in git log order.
func TestNotesGroupConventionalCommitsSinceThePreviousTag(t *testing.T) {
	dir, run := gitRepo(t)
	commit(t, dir, run, "feat: before the previous release")
	run("tag", "v1.0.0")
	fix1 := commit(t, dir, run, "fix(cli): quote paths")
	feat1 := commit(t, dir, run, "feat: add --verbose")
	plain := commit(t, dir, run, "Update README")
	brk := commit(t, dir, run, "feat(api)!: drop the v0 endpoint")
	perf := commit(t, dir, run, "perf: cache the manifest")
	feat2 := commit(t, dir, run, "feat(ui): colours")
	odd := commit(t, dir, run, "wip: half done")
	run("tag", "-a", "-m", "1.1.0", "v1.1.0") // the release's own tag: not the previous one

	n, err := Collect(context.Background(), dir, "hello", "1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if n.Previous != "v1.0.0" || len(n.Commits) != 7 {
		t.Fatalf("previous %q, %d commits: %+v", n.Previous, len(n.Commits), n.Commits)
	}
	want := "# hello 1.1.0\n\nChanges since v1.0.0:\n" +
		"\n## Breaking changes\n\n- **api:** drop the v0 endpoint (" + brk + ")\n" +
		"\n## Features\n\n- **ui:** colours (" + feat2 + ")\n- add --verbose (" + feat1 + ")\n" +
		"\n## Fixes\n\n- **cli:** quote paths (" + fix1 + ")\n" +
		"\n## Performance\n\n- cache the manifest (" + perf + ")\n" +
		"\n## Other\n\n- wip: half done (" + odd + ")\n- Update README (" + plain + ")\n"
	if got := n.Markdown(); got != want {
		t.Errorf("notes.md:\n%s\nwant:\n%s", got, want)
	}
	// The same repository read again writes the same bytes.
	again, err := Collect(context.Background(), dir, "hello", "1.1.0")
	if err != nil || again.Markdown() != want {
		t.Errorf("a second read differs: %v\n%s", err, again.Markdown())
	}
}

// Without conventional subjects the notes are one flat list; without an
// earlier tag they hold the whole history.
func TestNotesPlainCommitsWholeHistory(t *testing.T) {
	dir, run := gitRepo(t)
	a := commit(t, dir, run, "First commit")
	b := commit(t, dir, run, "Second: with a colon inside")
	run("tag", "1.0.0") // the version's own tag without v is not a previous tag either
	n, err := Collect(context.Background(), filepath.Join(dir), "hello", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	want := "# hello 1.0.0\n\nChanges (the whole history: no earlier tag):\n\n- Second: with a colon inside (" + b + ")\n- First commit (" + a + ")\n"
	if got := n.Markdown(); got != want {
		t.Errorf("notes.md:\n%s\nwant:\n%s", got, want)
	}
}

// A directory outside any repository is ErrNoRepository, with git's reason.
func TestNotesOutsideARepository(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	_, err := Collect(context.Background(), dir, "hello", "1.0.0")
	if !errors.Is(err, ErrNoRepository) || !strings.Contains(err.Error(), "not a git repository") {
		t.Fatalf("got %v", err)
	}
}

func TestParse(t *testing.T) {
	for subject, want := range map[string]Parsed{
		"feat: x":               {Type: "feat", Description: "x"},
		"Fix(core)!: y z":       {Type: "fix", Scope: "core", Breaking: true, Description: "y z"},
		"docs(readme): a: b":    {Type: "docs", Scope: "readme", Description: "a: b"},
		"refactor!: drop it":    {Type: "refactor", Breaking: true, Description: "drop it"},
		"Update the README":     {},
		"feat:missing space":    {},
		"feat(a)(b): two scope": {},
		"wip: half done":        {},
		"Second: with a colon":  {},
	} {
		got, ok := Parse(subject)
		if ok != (want != Parsed{}) || got != want {
			t.Errorf("Parse(%q) = %+v %v, want %+v", subject, got, ok, want)
		}
	}
}

// In a repository of several apps, an app's notes hold the commits that
// touched its directory: not the other app's, not the repository's own.
func TestNotesOfOneAppInAMonorepo(t *testing.T) {
	dir, run := gitRepo(t)
	touch := func(p, subject string) string {
		t.Helper()
		abs := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(abs), 0o755)
		old, _ := os.ReadFile(abs)
		if err := os.WriteFile(abs, append(old, subject+"\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		run("add", "-A")
		run("commit", "-q", "-m", subject)
		return run("rev-parse", "HEAD")[:7]
	}
	a1 := touch("apps/hello/main.js", "feat: hello greets")
	touch("apps/other/main.js", "feat: other app")
	touch("README.md", "docs: the repository's readme")
	a2 := touch("apps/hello/sub/x.js", "fix: hello's sub module")
	n, err := Collect(context.Background(), filepath.Join(dir, "apps", "hello"), "hello", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Commits) != 2 || n.Commits[0].Short() != a2 || n.Commits[1].Short() != a1 {
		t.Fatalf("commits %+v, want hello's two (%s, %s)", n.Commits, a2, a1)
	}
	top, err := Collect(context.Background(), dir, "all", "1.0.0")
	if err != nil || len(top.Commits) != 4 {
		t.Fatalf("at the top: %v, %d commits, want all 4", err, len(top.Commits))
	}
}
