package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two install homes sharing one cache: the second install of the same
// release links the node_modules files the first kept in the store, doctor
// reports the store, PISHIP_STORE=off writes everything, and a mode that is
// not offered is refused before anything is written.
func TestInstallsShareTheStore(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	mustRelease(t, env, dir)
	arc := filepath.Join(dir, "dist", "releases", helloRelease+".tar.gz")
	root := t.TempDir()
	homeEnv := func(n string, kv ...string) map[string]string {
		e := map[string]string{"PISHIP_CACHE_HOME": env["PISHIP_CACHE_HOME"], "PISHIP_PROGRESS": "0",
			"PISHIP_INSTALL_HOME": filepath.Join(root, n, "i"), "PISHIP_BIN_HOME": filepath.Join(root, n, "b"),
			"PISHIP_STATE_HOME": filepath.Join(root, n, "s"), "PISHIP_STORE": "hardlink"}
		for i := 0; i < len(kv); i += 2 {
			e[kv[i]] = kv[i+1]
		}
		return e
	}
	install := func(e map[string]string) string {
		t.Helper()
		code, _, stderr := cli(t, e, "install", arc)
		if code != exitOK {
			t.Fatalf("install: exit %d\n%s", code, stderr)
		}
		return stderr
	}
	install(homeEnv("one"))
	if out := install(homeEnv("two")); !strings.Contains(out, "(15 files, 5 linked from the store,") {
		t.Errorf("the second install did not link the 5 node_modules files:\n%s", out)
	}
	file := func(n, rel string) os.FileInfo {
		fi, err := os.Stat(filepath.Join(root, n, "i", "apps", "hello", "1.0.0", "payload", rel))
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	if !os.SameFile(file("one", "node_modules/hello-greeting/greeting.txt"), file("two", "node_modules/hello-greeting/greeting.txt")) {
		t.Error("the two installations do not share greeting.txt")
	}
	if os.SameFile(file("one", "bin/hello"), file("two", "bin/hello")) {
		t.Error("bin/hello is shared: only node_modules files are stored")
	}

	code, stdout, stderr := cli(t, homeEnv("two"), "doctor", "hello")
	if code != exitOK || !strings.Contains(stdout, "store: "+filepath.Join(env["PISHIP_CACHE_HOME"], "store")+": 5 objects, 0 no longer linked removed") {
		t.Errorf("doctor: exit %d\n%s%s", code, stdout, stderr)
	}

	// Objects are kept for a day after nothing links them.
	code, stdout, stderr = cli(t, homeEnv("two"), "cache", "prune")
	if code != exitOK || !strings.Contains(stdout, "store: 5 objects, removed 0 no longer linked") {
		t.Errorf("cache prune: exit %d\n%s%s", code, stdout, stderr)
	}
	if out := install(homeEnv("three", "PISHIP_STORE", "off")); strings.Contains(out, "linked") {
		t.Errorf("PISHIP_STORE=off linked files:\n%s", out)
	}
	code, _, stderr = cli(t, homeEnv("four", "PISHIP_STORE", "copy"), "install", arc)
	if code == exitOK || !strings.Contains(stderr, "CONFIG_INVALID: PISHIP_STORE=copy is not offered") {
		t.Errorf("PISHIP_STORE=copy: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "four", "i", "apps", "hello")); !os.IsNotExist(err) {
		t.Errorf("a refused install left apps/hello (%v)", err)
	}
}
