package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"piship.dev/piship/cmd/internal/cli"
)

// run runs the installer in-process with an empty environment.
func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	e := &cli.Env{Ctx: context.Background(), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Program: program}
	return cli.Dispatch(e, args), out.String(), errb.String()
}

// The installer has the consumer commands and version, and nothing of the
// build side: a developer command is a usage error that says so in the
// words of any unknown command.
func TestInstallerHasTheConsumerCommandsOnly(t *testing.T) {
	code, out, _ := run("help")
	if code != cli.ExitOK {
		t.Fatalf("help: exit %d", code)
	}
	for _, c := range []string{"install", "update", "rollback", "doctor", "uninstall", "purge", "repair", "launch", "version"} {
		if !strings.Contains(out, "\n  "+c+" ") {
			t.Errorf("help does not list %s:\n%s", c, out)
		}
	}
	for _, c := range []string{"build", "release", "run", "validate", "keygen", "repo", "Building and shipping"} {
		if strings.Contains(out, "\n  "+c+" ") || strings.Contains(out, c+" a distribution:") {
			t.Errorf("help lists %s:\n%s", c, out)
		}
	}
	code, _, stderr := run("build", ".")
	if code != cli.ExitUsage || !strings.Contains(stderr, "USAGE_INVALID") || !strings.Contains(stderr, `unknown command "build"`) {
		t.Errorf("build: exit %d\n%s", code, stderr)
	}
}

// A consumer command runs its embedded pipeline through the engine with the
// installer's kinds: install of a source that does not exist fails in the
// install stage with its code and exit code, as piship's does.
func TestInstallerRunsTheInstallPipeline(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	env := map[string]string{"HOME": dir, "PISHIP_CACHE_HOME": dir + "/cache"}
	e := &cli.Env{Ctx: context.Background(), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }, Program: program}
	code := cli.Dispatch(e, []string{"install", dir + "/nope.tar.gz"})
	if code != cli.ExitUsage || !strings.Contains(errb.String(), "install: stage install failed: CONFIG_INVALID: cannot install "+dir+"/nope.tar.gz") {
		t.Errorf("install of nothing: exit %d\n%s", code, errb.String())
	}
}
