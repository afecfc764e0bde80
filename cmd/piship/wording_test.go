package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// badWording are the patterns no line piship prints may match (issue 29
// point 7): a count of one with a plural noun ("1 packages", "1 of 1
// files") and a progress label that repeats the kind ("audit audit:").
var badWording = []struct {
	what string
	re   *regexp.Regexp
}{
	{"a plural after a count of one", regexp.MustCompile(`(^|[^0-9.,])1 (of 1 )?(files|packages|tools|stages|errors|checks|chunks|shims|modules|outputs|entries|objects|records|keys|locks|pipelines|spans|tests|findings|resource files|Pi packages)\b`)},
	{"a label that repeats the kind", regexp.MustCompile(`(^|[ :])([a-z_]+) ([a-z_]+): `)},
}

// TestPrintedWording is the table test of issue 29 point 7's wording: each
// row runs a command as a user would and holds every line it prints to the
// rules above, and to what the row itself wants and refuses. The rows meet
// a count of one (a lock with one tool, one bad file, one unformatted file,
// a one-stage pipeline), stages named like their kind (build and release:
// bundle, audit, prune ...) and an app without vendored Pi packages or
// search tools, whose progress must not list the Pi-only stages.
func TestPrintedWording(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	tmp := t.TempDir()
	bad := writeFile(t, tmp, "bad.hcl", "pipeline \"p\" {\n  stage \"exec\" \"x\" {\n    cahce = true\n  }\n}\n")
	unformatted := writeFile(t, tmp, "ugly/u.hcl", "pipeline \"u\" {\nstage \"exec\" \"a\" {\ncommand=[\"true\"]\n}\n}\n")
	one := writeFile(t, tmp, "one.hcl", "pipeline \"one\" {\n  stage \"exec\" \"only\" {\n    command = [\"true\"]\n  }\n}\n")
	plain := []string{"--progress", "plain"}
	for _, row := range []struct {
		name   string
		args   []string
		code   int
		want   []string // regexps some line must match
		refuse []string // regexps no line may match
	}{
		{"lock with one tool", []string{"lock", dir}, exitOK, []string{`^locked hello 1\.0\.0: .* \(\d+ packages, 2 resource files, 1 tool\)$`}, nil},
		{"validate one bad file", []string{"validate", bad}, exitUsage, []string{`^piship: CONFIG_INVALID: 1 of 1 file has errors; `}, nil},
		{"fmt --check one file", []string{"fmt", "--check", filepath.Dir(unformatted)}, exitFailed, []string{`^piship: 1 file needs formatting: `}, nil},
		{"run one stage", append([]string{"run", one}, plain...), exitOK, []string{`^one: ok \(1 stage: 1 ran, 0 cached\)$`}, nil},
		{"dry run of one stage", []string{"run", "--dry-run", one}, exitOK, []string{`^pipeline one: 1 stage \(dry run, nothing runs\)$`}, nil},
		{"build", append([]string{"build", dir}, plain...), exitOK,
			[]string{`build: module.payload.stage.bundle: started$`, `build: module.payload.stage.prune: DONE`, `build: module.payload.stage.runtime: started$`},
			[]string{`pi_packages`, `search_tools`}},
		{"release", append([]string{"release", dir}, plain...), exitOK,
			[]string{`release: ` + regexp.QuoteMeta(hostTargetAddr("module.qualify.stage.audit")) + `: started$`, `release: ` + regexp.QuoteMeta(hostTargetAddr("module.qualify.stage.signatures")) + `: DONE`},
			[]string{`pi_packages`, `search_tools`}},
	} {
		t.Run(row.name, func(t *testing.T) {
			code, stdout, stderr := piship(t, env, row.args...)
			out := stdout + stderr
			if code != row.code {
				t.Errorf("piship %s: exit %d, want %d\n%s", strings.Join(row.args, " "), code, row.code, out)
			}
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			for _, w := range row.want {
				re := regexp.MustCompile(w)
				found := false
				for _, l := range lines {
					found = found || re.MatchString(l)
				}
				if !found {
					t.Errorf("no line matches %q:\n%s", w, out)
				}
			}
			for _, l := range lines {
				for _, b := range badWording {
					if m := b.re.FindStringSubmatch(l); m != nil && (b.what != "a label that repeats the kind" || m[2] == m[3]) {
						t.Errorf("%s: %q", b.what, l)
					}
				}
				for _, r := range row.refuse {
					if regexp.MustCompile(r).MatchString(l) {
						t.Errorf("a line matches %q: %q", r, l)
					}
				}
			}
		})
	}
}
