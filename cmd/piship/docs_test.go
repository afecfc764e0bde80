package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/spf13/cobra"

	"piship.dev/piship/cmd/internal/cli"
)

// fragmentMarker, on the line right before a ```hcl fence, marks an
// example that is a fragment by design (a block that lives inside another,
// a value to paste): it is parsed as HCL instead of run through `piship
// validate`. Write why after "fragment".
const fragmentMarker = "<!-- docs-test: fragment"

// fileMarker, on the line right before a ```hcl fence, names a module file
// an example calls (`<!-- docs-test: file sign.hcl -->`): it is written
// beside the page's examples, which are validated next to it.
const fileMarker = "<!-- docs-test: file "

// docFile is one Markdown page the tests read: the README and docs/*.md.
type docFile struct {
	name string // as a reader names it: README.md, docs/x.md
	src  string
}

func readDocs(t *testing.T) []docFile {
	t.Helper()
	names := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		names = append(names, "docs/"+filepath.Base(m))
	}
	var docs []docFile
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(n)))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, docFile{n, string(b)})
	}
	if len(docs) < 10 {
		t.Fatalf("only %d pages read", len(docs))
	}
	return docs
}

// codeBlock is one fenced block of a page.
type codeBlock struct {
	lang, body string
	line       int    // of the opening fence
	fragment   bool   // fragmentMarker on the line before
	file       string // the name fileMarker gives, or ""
}

func codeBlocks(src string) []codeBlock {
	lines := strings.Split(src, "\n")
	var out []codeBlock
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "```") {
			continue
		}
		b := codeBlock{lang: strings.TrimSpace(strings.TrimPrefix(l, "```")), line: i + 1}
		b.fragment = i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), fragmentMarker)
		if i > 0 {
			if name, ok := strings.CutPrefix(strings.TrimSpace(lines[i-1]), fileMarker); ok {
				b.file = strings.TrimSpace(strings.TrimSuffix(name, "-->"))
			}
		}
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		b.body = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

// inlineCode is every `code span` of a page outside fenced blocks.
func inlineCode(src string) []string {
	var prose []string
	in := false
	for _, l := range strings.Split(src, "\n") {
		if strings.HasPrefix(l, "```") {
			in = !in
			continue
		}
		if !in {
			prose = append(prose, l)
		}
	}
	var out []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(strings.Join(prose, "\n"), -1) {
		out = append(out, strings.ReplaceAll(m[1], "\n", " "))
	}
	return out
}

// shellCommands splits shell lines into the piship invocations they hold:
// comments dropped, commands cut at &&, ||, ; and " | ", leading
// VAR=value words and a path before piship (bin/piship) skipped, and
// $(...) and <(...) opened. Each result is the words after piship.
func shellCommands(text string) [][]string {
	var out [][]string
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		line = strings.NewReplacer("$(", " ; ", "<(", " ; ", ")", " ", "&&", " ; ", "||", " ; ", " | ", " ; ").Replace(line)
		for _, cmd := range strings.Split(line, ";") {
			words := strings.Fields(cmd)
			for len(words) > 0 && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(words[0]) {
				words = words[1:]
			}
			if len(words) == 0 || filepath.Base(words[0]) != "piship" {
				continue
			}
			out = append(out, words[1:])
		}
	}
	return out
}

// placeholder is a word a page writes for a value: ID, COMMAND, <release>,
// [FILE|DIR ...], a|b.
func placeholder(w string) bool {
	w = strings.Trim(w, "[].")
	return w == "" || strings.ContainsAny(w, "<>|") || regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`).MatchString(w)
}

// docCommand is one piship command a page shows, and the flags it gives.
type docCommand struct {
	where string // page:line
	words []string
	flags []string // as written: --out, -o
}

// resolve finds the command words name in piship's tree: it follows
// subcommands while the next word is one. The error says what a reader
// would hit: a word where a command must be that names none.
func resolve(root *cobra.Command, words []string) (*cobra.Command, []string, string) {
	c := root
	var path []string
	for _, w := range words {
		if strings.HasPrefix(w, "-") || !c.HasSubCommands() {
			break
		}
		sub := func(name string) *cobra.Command {
			for _, s := range c.Commands() {
				if s.Name() == name || s.HasAlias(name) {
					return s
				}
			}
			return nil
		}
		if strings.Contains(w, "/") && sub(strings.Split(w, "/")[0]) != nil {
			// "repo init/add": several subcommands at once.
			for _, part := range strings.Split(w, "/") {
				if sub(part) == nil {
					return nil, nil, "no command " + strings.Join(append(append([]string{"piship"}, path...), part), " ")
				}
			}
			break
		}
		next := sub(w)
		if next == nil {
			if placeholder(w) {
				break
			}
			return nil, nil, "no command " + strings.Join(append(append([]string{"piship"}, path...), w), " ")
		}
		c = next
		path = append(path, w)
	}
	return c, path, ""
}

// Every command the README and docs show runs: each HCL example passes
// `piship validate` (a fragment marked with fragmentMarker parses as HCL),
// and each piship command a shell example or an inline code span names
// answers `piship COMMAND --help` with exit 0, listing every flag the
// example gives it. A page that names a command or flag piship does not
// have fails here.
func TestDocsCommandsRun(t *testing.T) {
	var out bytes.Buffer
	root := cli.NewRoot(&env{Ctx: context.Background(), Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }, Program: program})
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()

	var cmds []docCommand
	hclBlocks, fragments := 0, 0
	files := 0
	for _, d := range readDocs(t) {
		// A page's module files first: its examples call them.
		pageDir := t.TempDir()
		for _, b := range codeBlocks(d.src) {
			if b.file != "" {
				writeFile(t, pageDir, b.file, b.body)
				files++
			}
		}
		for _, b := range codeBlocks(d.src) {
			where := d.name + ":" + strconv.Itoa(b.line)
			switch b.lang {
			case "hcl":
				if b.file != "" {
					continue // validated through the examples that call it
				}
				if b.fragment {
					fragments++
					if _, diags := hclsyntax.ParseConfig([]byte(b.body), where, hcl.InitialPos); diags.HasErrors() {
						t.Errorf("%s: the HCL fragment does not parse: %s", where, diags.Error())
					}
					continue
				}
				hclBlocks++
				name := "pipeline.hcl"
				if regexp.MustCompile(`(?m)^distribution\s+"`).MatchString(b.body) {
					name = "distribution.hcl"
				}
				p := writeFile(t, pageDir, name, b.body)
				if code, stdout, stderr := piship(t, nil, "validate", p); code != exitOK {
					t.Errorf("%s: piship validate on the example: exit %d\n%s%s%s", where, code, b.body, stdout, stderr)
				}
			case "sh", "bash", "shell", "console":
				for _, words := range shellCommands(b.body) {
					cmds = append(cmds, docCommand{where: where, words: words})
				}
			default:
				if b.fragment {
					t.Errorf("%s: the fragment marker is for ```hcl blocks only", where)
				}
			}
		}
		for _, span := range inlineCode(d.src) {
			for _, words := range shellCommands(span) {
				cmds = append(cmds, docCommand{where: d.name + " `" + span + "`", words: words})
			}
		}
	}
	if hclBlocks < 2 || fragments < 1 || files < 1 || len(cmds) < 50 {
		t.Fatalf("too little found: %d HCL examples, %d fragments, %d module files, %d commands", hclBlocks, fragments, files, len(cmds))
	}

	helps := map[string]string{}
	named := map[string]bool{}
	flags := 0
	for _, dc := range cmds {
		c, path, problem := resolve(root, dc.words)
		if problem != "" {
			t.Errorf("%s: %s (piship help lists the commands)", dc.where, problem)
			continue
		}
		key := strings.Join(path, " ")
		named[key] = true
		help, ok := helps[key]
		if !ok {
			code, stdout, stderr := piship(t, nil, append(path, "--help")...)
			if code != exitOK || stderr != "" {
				t.Errorf("%s: piship %s --help: exit %d\n%s", dc.where, key, code, stderr)
			}
			help = stdout
			helps[key] = help
		}
		// A command whose flags end at its first argument (launch: the
		// rest is the app's) has no flags to check after it.
		interspersed := c.Flags().Parse([]string{"arg", "--docs-test-probe"}) != nil
		for _, w := range dc.words[len(path):] {
			if !interspersed && !strings.HasPrefix(w, "-") {
				break
			}
			flag := strings.Trim(w, "[]")
			flag, _, _ = strings.Cut(flag, "=")
			flag, _, _ = strings.Cut(flag, "|")
			if !regexp.MustCompile(`^(--[a-zA-Z][a-zA-Z0-9-]*|-[a-zA-Z])$`).MatchString(flag) {
				continue
			}
			flags++
			if !regexp.MustCompile(`(?m)^\s+(-[a-zA-Z], )?` + regexp.QuoteMeta(flag) + `\b|^\s+` + regexp.QuoteMeta(flag) + `, --`).MatchString(help) {
				t.Errorf("%s: piship %s has no flag %s (its --help lists its flags)", dc.where, key, flag)
			}
		}
	}
	t.Logf("%d HCL examples validated, %d fragments parsed, %d piship commands shown (%d distinct) with %d flags", hclBlocks, fragments, len(cmds), len(helps), flags)
	// The README walks the main path: these must stay shown somewhere.
	for _, want := range []string{"init", "lock", "build", "release", "install", "update", "repo init", "repo add", "keygen", "validate", "run"} {
		if !named[want] {
			t.Errorf("no page shows piship %s", want)
		}
	}
}

// Every page under docs/ is linked from the README, and the README stays
// a page a newcomer reads through (at most ~200 lines).
func TestReadmeLinksEveryDocsPage(t *testing.T) {
	docs := readDocs(t)
	readme := docs[0].src
	var missing []string
	for _, d := range docs[1:] {
		if !strings.Contains(readme, "]("+d.name+")") {
			missing = append(missing, d.name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("README.md links no %s", strings.Join(missing, ", "))
	}
	if n := strings.Count(readme, "\n"); n > 210 {
		t.Errorf("README.md has %d lines; keep it under ~200 and move the rest to docs/", n)
	}
}

// Every Go package of the module has its line in docs/contributing.md's
// Layout, so a newcomer finds each one.
func TestLayoutNamesEveryPackage(t *testing.T) {
	var layout string
	for _, d := range readDocs(t) {
		if d.name == "docs/contributing.md" {
			_, layout, _ = strings.Cut(d.src, "## Layout")
		}
	}
	if layout == "" {
		t.Fatal("docs/contributing.md has no Layout section")
	}
	top := filepath.Join("..", "..")
	pkgs := map[string]bool{}
	err := filepath.WalkDir(top, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); p != top && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules" || n == "vendor") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && p != top {
				return filepath.SkipDir // another module (stages/tuf/protobufspecs): its line names the module
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(top, filepath.Dir(p))
		if rel == "." {
			return nil
		}
		pkgs[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 30 {
		t.Fatalf("only %d packages found", len(pkgs))
	}
	for pkg := range pkgs {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(pkg) + `/\s`).MatchString(layout) {
			t.Errorf("docs/contributing.md's Layout has no line for %s/", pkg)
		}
	}
}
