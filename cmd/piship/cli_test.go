package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"piship.dev/piship/cmd/internal/cli"
)

// everyCommand walks piship's command tree from the root: every command a
// user can run or ask help for (cobra's hidden __complete excluded), so a
// new command is covered by the tests below without being listed.
func everyCommand(t *testing.T) []*cobra.Command {
	t.Helper()
	var out bytes.Buffer
	root := cli.NewRoot(&env{Ctx: context.Background(), Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }, Program: program})
	root.InitDefaultCompletionCmd()
	var all []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		all = append(all, c)
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() || s.Name() == "help" {
				walk(s)
			}
		}
	}
	walk(root)
	if len(all) < 20 {
		t.Fatalf("only %d commands in the tree", len(all))
	}
	return all
}

// cmdWords is a command's words after piship.
func cmdWords(c *cobra.Command) []string {
	return strings.Fields(strings.TrimPrefix(c.CommandPath(), "piship"))
}

// Every command answers --help with its usage line (arguments named), a
// description and at least one example, exit 0, and `piship help CMD`
// prints the same bytes.
func TestEveryCommandHasHelp(t *testing.T) {
	for _, c := range everyCommand(t) {
		words := cmdWords(c)
		name := strings.Join(append([]string{"piship"}, words...), " ")
		code, stdout, stderr := piship(t, nil, append(words, "--help")...)
		if code != exitOK || stderr != "" {
			t.Errorf("%s --help: exit %d, stderr %q", name, code, stderr)
			continue
		}
		if !strings.Contains(stdout, "Usage:\n  "+c.UseLine()) {
			t.Errorf("%s --help lacks its usage line %q:\n%s", name, c.UseLine(), stdout)
		}
		if c.Long == "" || !strings.HasPrefix(stdout, strings.TrimSpace(c.Long)+"\n") {
			t.Errorf("%s --help does not open with a description:\n%s", name, stdout)
		}
		if _, ex, ok := strings.Cut(stdout, "Examples:\n  "); !ok || !strings.Contains(strings.SplitN(ex, "\n", 2)[0], "piship "+strings.Join(words, " ")) {
			t.Errorf("%s --help has no example:\n%s", name, stdout)
		}
		if !strings.Contains(stdout, "  -h, --help ") {
			t.Errorf("%s --help does not list its flags:\n%s", name, stdout)
		}
		hcode, hout, herr := piship(t, nil, append([]string{"help"}, words...)...)
		if hcode != exitOK || hout != stdout || herr != "" {
			t.Errorf("piship help %s (exit %d) differs from %s --help:\n%s\n----\n%s%s", strings.Join(words, " "), hcode, name, hout, stdout, herr)
		}
	}
}

// --version, -v and version print the module version, the commit (or
// "commit unknown"), the Go version and the platform.
func TestVersionForms(t *testing.T) {
	_, want, _ := piship(t, nil, "version")
	lines := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "piship ") ||
		!(strings.HasPrefix(lines[1], "commit ")) || !strings.Contains(lines[2], "go1.") || !strings.Contains(lines[2], "/") {
		t.Fatalf("version:\n%s", want)
	}
	for _, args := range [][]string{{"--version"}, {"-v"}} {
		if code, out, stderr := piship(t, nil, args...); code != exitOK || out != want {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, stderr)
		}
	}
}

// The realistic mistakes: each is refused with the exit code of the rule,
// its error code and what helps (a suggestion where one exists, the file
// and position where there is one).
func TestMistakes(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "p.hcl", "pipeline \"p\" {\n  input \"n\" {\n    type = number\n  }\n  stage \"exec\" \"a\" {\n    command = [\"echo\", input.n]\n  }\n}\n")
	kind := writeFile(t, dir, "kind/p.hcl", "pipeline \"k\" {\n  stage \"exce\" \"a\" {\n    command = [\"true\"]\n  }\n}\n")
	broken := writeFile(t, dir, "broken/b.hcl", "pipeline \"b\" {\n")
	missing := filepath.Join(dir, "no-such-dir")
	noRelease := filepath.Dir(writeFile(t, dir, "norel/distribution.hcl", "distribution \"x\" {\n  name    = \"X\"\n  version = \"1.0.0\"\n  command = \"x\"\n}\n"))
	stale := copyDist(t, "hello")
	if err := os.WriteFile(filepath.Join(stale, "resources", "motd.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		exit int
		code string
		want []string
	}{
		{"wrong path (build)", []string{"build", missing}, exitUsage, "CONFIG_INVALID", []string{missing}},
		{"wrong path (install)", []string{"install", missing}, exitUsage, "CONFIG_INVALID", []string{"cannot install " + missing}},
		{"wrong path (validate)", []string{"validate", missing}, exitUsage, "CONFIG_INVALID", []string{missing}},
		{"wrong path (verify-release)", []string{"verify-release", missing}, exitUsage, "CONFIG_INVALID", []string{missing}},
		{"wrong path (lock)", []string{"lock", missing}, exitUsage, "CONFIG_INVALID", []string{"has no distribution.hcl", "run piship lock again"}},
		{"stale lock", []string{"build", stale}, exitUsage, "LOCK_INVALID", []string{"resources/motd.txt", "run piship lock"}},
		{"missing attribute", []string{"validate", noRelease}, exitUsage, "CONFIG_INVALID", []string{"distribution.hcl:1:", "release"}},
		{"unknown kind", []string{"validate", kind}, exitUsage, "CONFIG_INVALID", []string{kind + ":2:", `"exec"`}},
		{"bad --input type", []string{"run", p, "--input", "n=abc"}, exitUsage, "CONFIG_INVALID", []string{"--input n"}},
		{"unknown command", []string{"relase", "x"}, exitUsage, "USAGE_INVALID", []string{`unknown command "relase"`, "Did you mean this?\n\trelease\n", "Run 'piship --help' for usage."}},
		{"no command", nil, exitUsage, "USAGE_INVALID", []string{"piship needs a command", "Building and shipping a distribution:"}},
		{"unknown help topic", []string{"help", "relase"}, exitUsage, "USAGE_INVALID", []string{"Did you mean this?\n\trelease\n"}},
		{"unknown subcommand", []string{"cache", "prun"}, exitUsage, "USAGE_INVALID", []string{"Did you mean this?\n\tprune\n"}},
		{"unknown flag", []string{"build", "x", "--ouT", "y"}, exitUsage, "USAGE_INVALID", []string{"unknown flag: --ouT", "Did you mean this?\n\t--out\n", "Run 'piship build --help' for usage."}},
		{"single-dash flag", []string{"build", "-out", "y", "x"}, exitUsage, "USAGE_INVALID", []string{"-out is not a flag", "write --out"}},
		{"single-dash typo", []string{"doctor", "-jsno"}, exitUsage, "USAGE_INVALID", []string{"Did you mean this?\n\t--json\n"}},
		{"missing argument", []string{"build"}, exitUsage, "USAGE_INVALID", []string{"piship build needs DIST", "Run 'piship build --help'"}},
		{"extra argument", []string{"rollback", "a", "b"}, exitUsage, "USAGE_INVALID", []string{"takes 1 argument(s), got 2"}},
		{"missing required flag", []string{"repo", "add", dir, filepath.Join(dir, "a.tar.gz")}, exitUsage, "USAGE_INVALID", []string{`"key" not set`}},
		{"key file named unlike a key", []string{"keygen", filepath.Join(dir, "+.pem")}, exitUsage, "USAGE_INVALID", []string{`has no name piship can use as the key's ("+"`, "give one with --id NAME"}},
		{"bad flag value", []string{"run", p, "--parallelism", "abc"}, exitUsage, "USAGE_INVALID", []string{`invalid argument "abc" for "--parallelism"`}},
		{"out-of-range flag value", []string{"run", p, "--parallelism", "-3"}, exitUsage, "CONFIG_INVALID", []string{"--parallelism -3 is out of range"}},
		{"bad --format", []string{"graph", p, "--format", "png"}, exitUsage, "USAGE_INVALID", []string{"use dot or mermaid"}},
		{"unknown stage kind", []string{"stages", "exce"}, exitUsage, "USAGE_INVALID", []string{`did you mean "exec"?`}},
		{"file that does not parse", []string{"fmt", broken}, exitUsage, "CONFIG_INVALID", []string{broken + ":"}},
	} {
		code, stdout, stderr := piship(t, nil, c.args...)
		if code != c.exit || !strings.Contains(stderr, c.code+": ") {
			t.Errorf("%s: piship %v: exit %d, want %d with %s:\n%s%s", c.name, c.args, code, c.exit, c.code, stdout, stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", c.name, w, stderr)
			}
		}
	}
}

// One exit-code rule for every command: a command line it cannot take is
// 2 (USAGE_INVALID), a configuration error is 2 (CONFIG_INVALID), whatever
// the command. The table must name a configuration error for every
// command the tree has (a new command fails here until it has one).
func TestExitCodeRuleEveryCommand(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	key := writeFile(t, dir, "not-a-key.pem", "x")
	broken := writeFile(t, dir, "b.hcl", "pipeline \"b\" {\n")
	overlap := map[string]string{"PISHIP_INSTALL_HOME": filepath.Join(dir, "h"), "PISHIP_BIN_HOME": filepath.Join(dir, "h", "bin"),
		"PISHIP_STATE_HOME": filepath.Join(dir, "s")}
	configErr := map[string][]string{
		"init":           {"init", filepath.Join(dir, "Bad Name!")},
		"lock":           {"lock", missing},
		"build":          {"build", missing},
		"release":        {"release", missing},
		"verify-release": {"verify-release", missing},
		"budgets check":  {"budgets", "check", missing},
		"publish":        {"publish", missing, "--to", "oci://127.0.0.1:1/acme/hello"},
		"keygen":         {"keygen", filepath.Join(dir, "k.pem"), "--id", "bad id!"},
		"install":        {"install", missing},
		"update":         {"update", "hello", "--timeout", "soon"},
		"rollback":       {"rollback", "hello"},  // overlapping homes
		"doctor":         {"doctor"},             // overlapping homes
		"uninstall":      {"uninstall", "hello"}, // overlapping homes
		"launch":         {"launch", "hello"},    // overlapping homes
		"purge":          {"purge", "hello"},     // overlapping homes
		"repair":         {"repair", "hello"},    // overlapping homes
		"run":            {"run", missing + ".hcl"},
		"timings":        {"timings", missing, "-o", filepath.Join(dir, "t.html")},
		"validate":       {"validate", broken},
		"graph":          {"graph", missing + ".hcl"},
		"fmt":            {"fmt", broken},
		"cache prune":    {"cache", "prune", "--max-size", "lots"},
		"explain":        {"explain", "--file", missing + ".hcl"},
		// repo's subcommands: a key file that is no key, or no repository.
		"repo init":        {"repo", "init", filepath.Join(dir, "r"), "--key", "root=" + key},
		"repo add":         {"repo", "add", missing, "a.tar.gz", "--key", key},
		"repo refresh":     {"repo", "refresh", missing, "--key", key},
		"repo rotate-root": {"repo", "rotate-root", missing, "--key", key},
		"repo rotate-key":  {"repo", "rotate-key", missing, "--role", "targets", "--new-key", key, "--key", key},
		"repo revoke":      {"repo", "revoke", missing, "--key-id", "ab", "--key", key},
		"repo status":      {"repo", "status", missing},
	}
	// Commands with nothing to configure: only the command line can be wrong.
	noConfig := map[string]bool{"piship": true, "stages": true, "version": true, "help": true, "cache": true, "repo": true, "budgets": true,
		"completion": true, "bash": true, "zsh": true, "fish": true, "powershell": true, "pipelines": true, "show": true}
	for _, c := range everyCommand(t) {
		words := cmdWords(c)
		code, _, stderr := piship(t, nil, append(words, "--no-such-flag")...)
		if code != exitUsage || !strings.Contains(stderr, "USAGE_INVALID: unknown flag: --no-such-flag") {
			t.Errorf("%s --no-such-flag: exit %d, want 2 with USAGE_INVALID:\n%s", c.CommandPath(), code, stderr)
		}
		if noConfig[c.Name()] {
			continue
		}
		// A subcommand by its words first: repo init is not init.
		args, ok := configErr[strings.Join(words, " ")]
		if !ok && len(words) == 1 {
			args, ok = configErr[c.Name()]
		}
		if !ok {
			t.Errorf("%s: no configuration error in the table", c.CommandPath())
			continue
		}
		code, stdout, stderr := piship(t, overlap, args...)
		if code != exitUsage || !strings.Contains(stderr, "CONFIG_INVALID: ") {
			t.Errorf("piship %v: exit %d, want 2 with CONFIG_INVALID:\n%s%s", args, code, stdout, stderr)
		}
	}
}

// Everything after launch's ID is the app's, flags included; before it,
// --help is piship's.
func TestLaunchPassesItsArguments(t *testing.T) {
	code, stdout, _ := piship(t, nil, "launch", "--help")
	if code != exitOK || !strings.Contains(stdout, "Usage:\n  piship launch ID [--] [ARGS...]") {
		t.Fatalf("launch --help: exit %d\n%s", code, stdout)
	}
	var got []string
	c := cli.LaunchCmd(&env{Ctx: context.Background(), Stdout: os.Stdout, Stderr: os.Stderr, Getenv: func(string) string { return "" }, Program: program})
	c.RunE = func(_ *cobra.Command, args []string) error { got = args; return nil }
	for _, args := range [][]string{
		{"hello", "--help"}, {"hello", "--", "--help", "-x"}, {"hello", "-v", "--out", "x", "--", "y"}, {"--", "hello", "--json"},
	} {
		got = nil
		c.SetArgs(args)
		if err := c.Execute(); err != nil {
			t.Fatalf("launch %v: %v", args, err)
		}
		want := args
		if args[0] == "--" {
			want = args[1:]
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("launch %v: the command got %q", args, got)
		}
	}
	// The shim's own command line: its arguments reach the app untouched
	// (runLaunch drops the one "--" after the ID).
	homes := map[string]string{"PISHIP_INSTALL_HOME": t.TempDir()}
	if code, _, stderr := piship(t, homes, "launch", "hello", "--", "--no-such-flag"); code != exitFailed || strings.Contains(stderr, "USAGE_INVALID") ||
		!strings.Contains(stderr, "hello is not installed") {
		t.Errorf("launch hello -- --no-such-flag: exit %d\n%s", code, stderr)
	}
}

// bash completion, through cobra's script as a user's shell loads it:
// `piship rel<TAB>` completes the command, `piship build --reb<TAB>` the
// flag, `piship rollback <TAB>` an installed distribution. The script calls this test binary as piship (PISHIP_TEST_MAIN,
// build_test.go's TestMain).
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed for this test: apt-get install bash")
	}
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "piship")); err != nil {
		t.Fatal(err)
	}
	code, script, stderr := piship(t, nil, "completion", "bash")
	if code != exitOK {
		t.Fatalf("completion bash: exit %d\n%s", code, stderr)
	}
	scriptFile := writeFile(t, t.TempDir(), "piship.bash", script)
	install := filepath.Join(t.TempDir(), "install")
	writeFile(t, install, "receipts/hello.json", "{}")
	complete := func(line string) []string {
		t.Helper()
		words := strings.Fields(line)
		if strings.HasSuffix(line, " ") {
			words = append(words, "")
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		// cobra's script uses bash-completion's _get_comp_words_by_ref
		// (what a user's shell has loaded); without the package, a
		// stand-in that reads COMP_WORDS as bash sets it.
		prog := `if [ -r /usr/share/bash-completion/bash_completion ]; then
  source /usr/share/bash-completion/bash_completion
else
  _get_comp_words_by_ref() {
    cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}
    words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
  }
fi
compopt() { :; } # a builtin that works only inside a completion bash runs
source "$1"
COMP_WORDS=(` + strings.Join(quoted, " ") + `)
COMP_CWORD=` + strconv.Itoa(len(words)-1) + `
COMP_LINE='` + line + `'
COMP_POINT=${#COMP_LINE}
__start_piship
printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", prog, "bash", scriptFile)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "PISHIP_TEST_MAIN=1",
			"PISHIP_INSTALL_HOME="+install, "PISHIP_BIN_HOME="+filepath.Join(install, "..", "b"), "PISHIP_STATE_HOME="+filepath.Join(install, "..", "s"))
		var errb bytes.Buffer
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if err != nil || errb.Len() > 0 {
			t.Fatalf("bash completion of %q: %v\n%s%s", line, err, out, errb.String())
		}
		var reply []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			reply = append(reply, strings.TrimSpace(l))
		}
		return reply
	}
	if got := complete("piship rel"); len(got) != 1 || got[0] != "release" {
		t.Errorf("piship rel<TAB>: %q, want [release]", got)
	}
	if got := complete("piship build --reb"); len(got) != 1 || got[0] != "--rebuild" {
		t.Errorf("piship build --reb<TAB>: %q, want [--rebuild]", got)
	}
	if got := complete("piship stages ex"); len(got) != 1 || got[0] != "exec" {
		t.Errorf("piship stages ex<TAB>: %q, want [exec]", got)
	}
	if got := complete("piship rollback "); len(got) != 1 || got[0] != "hello" {
		t.Errorf("piship rollback <TAB>: %q, want the installed [hello]", got)
	}
}

// validate and fmt without arguments take the current directory, as
// terraform validate and terraform fmt -recursive do; the built-in
// pipelines are validate --builtin.
func TestValidateAndFmtTakeTheCurrentDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, _, stderr := piship(t, nil, "validate")
	if code != exitUsage || !strings.Contains(stderr, "CONFIG_INVALID: no pipeline files (*.hcl) in "+dir) || !strings.Contains(stderr, "--builtin") {
		t.Fatalf("validate in an empty directory: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := piship(t, nil, "validate", "--builtin")
	if code != exitOK || !strings.HasPrefix(stdout, "ok: ") || !strings.Contains(stdout, " in 7 files") {
		t.Fatalf("validate --builtin: exit %d\n%s%s", code, stdout, stderr)
	}
	unformatted := "pipeline \"p\" {\nstage \"exec\" \"a\" {\ncommand=[\"true\"]\n}\n}\n"
	writeFile(t, dir, "a.hcl", unformatted)
	writeFile(t, dir, "pipelines/b.hcl", strings.ReplaceAll(unformatted, `"p"`, `"b"`))
	writeFile(t, dir, "deep/er/c.hcl", strings.ReplaceAll(unformatted, `"p"`, `"c"`))
	writeFile(t, dir, ".hidden/d.hcl", unformatted)
	writeFile(t, dir, "node_modules/x/e.hcl", unformatted)
	code, stdout, stderr = piship(t, nil, "validate")
	if code != exitOK || stdout != "ok: 2 pipelines and distributions in 2 files\n" {
		t.Fatalf("validate in the directory: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = piship(t, nil, "fmt", "--check")
	want := "a.hcl\n" + filepath.Join("deep", "er", "c.hcl") + "\n" + filepath.Join("pipelines", "b.hcl") + "\n"
	if code != exitFailed || stdout != want {
		t.Fatalf("fmt --check: exit %d, listed\n%s\nwant\n%s", code, stdout, want)
	}
	if code, stdout, stderr := piship(t, nil, "fmt"); code != exitOK || stdout != want {
		t.Fatalf("fmt: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, _ := piship(t, nil, "fmt", "--check"); code != exitOK || stdout != "" {
		t.Fatalf("fmt --check after fmt: exit %d\n%s", code, stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".hidden", "d.hcl")); string(b) != unformatted {
		t.Fatal("fmt changed a file in a hidden directory")
	}
	writeFile(t, dir, "a.hcl", "pipeline \"p\" {\n  stage \"exce\" \"a\" {\n    command = [\"true\"]\n  }\n}\n")
	if code, _, stderr := piship(t, nil, "validate"); code != exitUsage || !strings.Contains(stderr, "a.hcl:2:") || !strings.Contains(stderr, "CONFIG_INVALID") {
		t.Fatalf("validate with an error in the directory: exit %d\n%s", code, stderr)
	}
}
