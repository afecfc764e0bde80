package pirpc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/stages/distribution"
)

// The check asks the program for its command list and wants one from
// every vendored package's directory. A stand-in for Pi answers
// get_commands as Pi's RPC mode does, listing commands of the packages it
// was told to load.
func TestCheckPackagesWantsACommandFromEachPackage(t *testing.T) {
	payload := t.TempDir()
	pkgs := []distribution.LockPiPackage{
		{Name: "pi-a", Version: "1.0.0", Root: "pi-packages/pi-a/node_modules/pi-a"},
		{Name: "pi-b", Version: "2.0.0", Root: "pi-packages/pi-b/node_modules/pi-b"},
	}
	env := func(home string) []string { return append(os.Environ(), "HOME="+home) }
	bin := filepath.Join(payload, "bin", "pi")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	fake := func(body string) {
		t.Helper()
		if err := os.WriteFile(bin, []byte("#!/bin/sh\nread line\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmdFrom := func(pkg string) string {
		return `{"name":"x","source":"extension","sourceInfo":{"path":"` + filepath.Join(payload, "pi-packages", pkg, "node_modules", pkg, "index.ts") + `"}}`
	}
	answer := func(cmds ...string) string {
		return `echo '{"id":"piship","type":"response","command":"get_commands","success":true,"data":{"commands":[` + strings.Join(cmds, ",") + `]}}'` + "\n"
	}
	fake(answer(cmdFrom("pi-a"), cmdFrom("pi-b"), `{"name":"y","source":"builtin"}`))
	if f := CheckPackages(context.Background(), bin, payload, pkgs, env); f != nil {
		t.Fatalf("both packages answer: %+v", f)
	}
	fake(answer(cmdFrom("pi-a")))
	if f := CheckPackages(context.Background(), bin, payload, pkgs, env); f == nil || !strings.Contains(f.Why, "no command of Pi's comes from pi-b 2.0.0") {
		t.Fatalf("pi-b registers nothing: %+v", f)
	}
	fake("echo 'Error: Failed to load extension \"x\": boom' >&2\n" + answer(cmdFrom("pi-a"), cmdFrom("pi-b")))
	if f := CheckPackages(context.Background(), bin, payload, pkgs, env); f == nil || f.Why != "Pi failed to load an extension" || !strings.Contains(f.Output, "boom") {
		t.Fatalf("a failed extension: %+v", f)
	}
	fake("echo hello\n")
	if f := CheckPackages(context.Background(), bin, payload, pkgs, env); f == nil || !strings.Contains(f.Why, "did not answer get_commands") {
		t.Fatalf("not Pi: %+v", f)
	}
}
