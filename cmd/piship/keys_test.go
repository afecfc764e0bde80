package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// keygen needs no --id (the key is named after its file, and says so),
// its help describes a key per role, and repo status shows the keys by
// the names keygen gave them; repo init prints the root_sha256 line a
// distribution.hcl takes as it is.
func TestKeysAreNamedAndShownByName(t *testing.T) {
	dir := t.TempDir()
	code, help, _ := piship(t, nil, "keygen", "--help")
	if code != exitOK || !strings.Contains(help, "piship keygen FILE [--id NAME]") || strings.Contains(help, "(required)") ||
		!strings.Contains(help, "a root key that only signs root") || !strings.Contains(help, "a targets key that\nsigns releases") ||
		!strings.Contains(help, "--key root=root.pem --key targets=targets.pem") {
		t.Errorf("keygen --help does not describe separate root and targets keys, or requires --id:\n%s", help)
	}
	for _, k := range []struct{ file, id, name string }{{"root.pem", "", "root"}, {"targets.pem", "", "targets"}, {"o.pem", "online-2026", "online-2026"}} {
		args := []string{"keygen", filepath.Join(dir, k.file)}
		if k.id != "" {
			args = append(args, "--id", k.id)
		}
		code, out, stderr := piship(t, nil, args...)
		first, _, _ := strings.Cut(out, "\n")
		want := "key " + k.name + " written to "
		if k.id == "" {
			want = "key " + k.name + " (named after the file; --id NAME names it otherwise) written to "
		}
		if code != exitOK || !strings.HasPrefix(first, want) || stderr != "" {
			t.Fatalf("piship %s: exit %d, first line %q, want %q\n%s", strings.Join(args, " "), code, first, want, stderr)
		}
	}
	repo := filepath.Join(dir, "repo")
	code, out, stderr := piship(t, nil, "repo", "init", repo, "--key", "root="+filepath.Join(dir, "root.pem"), "--key", "targets="+filepath.Join(dir, "targets.pem"),
		"--key", "snapshot="+filepath.Join(dir, "o.pem"), "--key", "timestamp="+filepath.Join(dir, "o.pem"))
	sum := regexp.MustCompile(`root 1 sha256:([0-9a-f]{64})`).FindStringSubmatch(out)
	if code != exitOK || sum == nil || !strings.Contains(out, "\n  root_sha256 = \"sha256:"+sum[1]+"\"\n") {
		t.Fatalf("repo init prints no root_sha256 line to paste: exit %d\n%s%s", code, out, stderr)
	}

	code, out, stderr = piship(t, nil, "repo", "status", repo)
	if code != exitOK {
		t.Fatalf("repo status: exit %d\n%s", code, stderr)
	}
	hex := regexp.MustCompile(`[0-9a-f]{64}`)
	for role, names := range map[string]string{"root": "root", "targets": "targets", "snapshot": "online-2026", "timestamp": "online-2026"} {
		line := regexp.MustCompile(`(?m)^  ` + role + ` +version 1 .*$`).FindString(out)
		if !strings.HasSuffix(line, "1 of 1 key: "+names) || hex.MatchString(line) {
			t.Errorf("repo status shows the %s role as %q, want its key by name (%s)\n%s", role, line, names, out)
		}
	}
	// The ids (what repo revoke --key-id takes) are listed once, by name.
	for _, name := range []string{"root", "targets", "online-2026"} {
		if !regexp.MustCompile(`(?m)^  ` + name + ` +[0-9a-f]{64}$`).MatchString(out) {
			t.Errorf("repo status does not list key %s with its TUF key id:\n%s", name, out)
		}
	}
	_, js, _ := piship(t, nil, "repo", "status", repo, "--json")
	var doc struct {
		Roles []struct {
			Role     string   `json:"role"`
			KeyIDs   []string `json:"keyIds"`
			KeyNames []string `json:"keyNames"`
		} `json:"roles"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || len(doc.Roles) != 4 {
		t.Fatalf("repo status --json: %v\n%s", err, js)
	}
	for _, r := range doc.Roles {
		if len(r.KeyNames) != len(r.KeyIDs) || len(r.KeyNames) != 1 || r.KeyNames[0] == "" {
			t.Errorf("repo status --json: role %s keyIds %v keyNames %v", r.Role, r.KeyIDs, r.KeyNames)
		}
	}
}

// `piship init` writes the updates block, commented, with the commands
// that make the repository whose root it pins; --version sets the version
// it starts at.
func TestInitWritesACommentedUpdatesBlock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "greeter")
	code, out, stderr := piship(t, nil, "init", dir, "--version", "1.0.0")
	if code != exitOK || !strings.Contains(out, "make it updatable: the commented updates block in "+filepath.Join(dir, "distribution.hcl")) {
		t.Fatalf("init: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := piship(t, nil, "init", filepath.Join(t.TempDir(), "g"), "--version", "1.0"); code != exitUsage ||
		!strings.Contains(stderr, `CONFIG_INVALID: --version "1.0": `) {
		t.Errorf("init --version 1.0: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "distribution.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	hcl := string(b)
	for _, want := range []string{"  version = \"1.0.0\"\n", `expect = "^${version}$"`, "  # updates {\n", `  #   root_sha256 = "sha256:`, "#   piship keygen root.pem",
		"#   piship repo init REPO --key root=root.pem --key targets=targets.pem", "#   piship repo add REPO dist/releases/"} {
		if !strings.Contains(hcl, want) {
			t.Errorf("distribution.hcl lacks %q:\n%s", want, hcl)
		}
	}
}
