package diag

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// deep builds the constructs the parser recurses on, n levels deep.
func deep(n int) map[string]string {
	r := strings.Repeat
	return map[string]string{
		"parens":      "x = " + r("(", n) + "1" + r(")", n) + "\n",
		"lists":       "x = " + r("[", n) + r("]", n) + "\n",
		"objects":     "x = " + r("{a=", n) + "1" + r("}", n) + "\n",
		"calls":       "x = " + r("f(", n) + "1" + r(")", n) + "\n",
		"for":         "x = " + r("[for a in b: ", n) + "1" + r("]", n) + "\n",
		"blocks":      r("a {\n", n) + r("}\n", n),
		"minus":       "x = " + r("-", n) + "1\n",
		"not":         "x = " + r("! ", n) + "true\n",
		"conditional": "x = " + r("true ? 1 : ", n) + "2\n",
		"splat":       "x = a" + r("[*].b", n) + "\n",
		"attr splat":  "x = a" + r(".*.b", n) + "\n",
		"templates":   "x = " + r(`"${`, n) + "1" + r(`}"`, n) + "\n",
		"directives":  "x = \"" + r(`%{ if true }`, n) + "x" + r(`%{ endif }`, n) + "\"\n",
		"for loops":   "x = <<EOT\n" + r("%{~ for a in b ~}\n", n) + r("%{ endfor }\n", n) + "EOT\n",
		"heredoc":     "x = <<EOT\n" + r("${(", n) + "1" + r(")}", n) + "\nEOT\n",
		"in parens":   "x = (" + r("-\n", n) + "1)\n",
	}
}

// What the parser recurses on, 100,000 deep, is refused before it is
// parsed (the parser itself would exhaust the stack: a fatal error, not a
// diagnostic), with CONFIG_INVALID at the first byte beyond the bound.
func TestNestingTooDeepIsRefused(t *testing.T) {
	for name, src := range deep(100_000) {
		diags := CheckNesting([]byte(src), "deep.hcl", hcl.InitialPos)
		if !diags.HasErrors() || !strings.HasPrefix(diags[0].Summary, "CONFIG_INVALID: nesting too deep") ||
			!strings.Contains(diags[0].Detail, "deep.hcl nests more than 256 levels") {
			t.Errorf("%s: %v", name, diags)
			continue
		}
		if s := diags[0].Subject; s == nil || s.Filename != "deep.hcl" || s.Start.Byte > len(src)/2+300 {
			t.Errorf("%s: subject %v", name, s)
		}
		f, diags := ParseConfig([]byte(src), "deep.hcl", hcl.InitialPos)
		if !diags.HasErrors() || f == nil || f.Body == nil {
			t.Errorf("%s: ParseConfig %v", name, diags)
		}
	}
	if _, diags := ParseExpression([]byte(strings.Repeat("[", 100_000)), "--input x", hcl.InitialPos); !diags.HasErrors() {
		t.Error("a deep --input expression was parsed")
	}
	// Positions: line and column of the first byte too deep.
	src := "a = 1\nx = " + strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300) + "\n"
	d := CheckNesting([]byte(src), "p.hcl", hcl.InitialPos)
	if !d.HasErrors() || d[0].Subject.Start.Line != 2 || d[0].Subject.Start.Column != 4+MaxNesting+1 {
		t.Errorf("position: %v", d)
	}
}

// At the bound, every construct parses (so the bound protects the
// stack), and ordinary text is never counted: brackets in strings,
// comments and heredocs, names with dashes, long binary chains, literal
// $${ and %%{, many items of one list.
func TestNestingWithinTheBoundIsParsed(t *testing.T) {
	// Templates and heredoc interpolations count two levels each.
	for name, src := range deep(MaxNesting/2 - 2) {
		if diags := CheckNesting([]byte(src), "ok.hcl", hcl.InitialPos); diags.HasErrors() {
			t.Errorf("%s, %d deep: %v", name, MaxNesting/2-2, diags)
		}
		// The parser is fine at this depth (its own errors about f or
		// b are not the point).
		hclsyntax.ParseConfig([]byte(src), "ok.hcl", hcl.InitialPos)
	}
	r := strings.Repeat
	at := "x = " + r("(", MaxNesting) + "1" + r(")", MaxNesting) + "\n"
	if diags := CheckNesting([]byte(at), "ok.hcl", hcl.InitialPos); diags.HasErrors() {
		t.Errorf("%d parens: %v", MaxNesting, diags)
	}
	if _, diags := hclsyntax.ParseConfig([]byte(at), "ok.hcl", hcl.InitialPos); diags.HasErrors() {
		t.Errorf("%d parens do not parse: %v", MaxNesting, diags)
	}
	if diags := CheckNesting([]byte("x = "+r("(", MaxNesting+1)+"1"+r(")", MaxNesting+1)), "ok.hcl", hcl.InitialPos); !diags.HasErrors() {
		t.Errorf("%d parens accepted", MaxNesting+1)
	}
	for name, src := range map[string]string{
		"string":         `x = "` + r("((([[[{{{", 1000) + `"` + "\n",
		"escaped quote":  `x = "\"` + r("(", 1000) + `"` + "\n",
		"literal interp": `x = "` + r("$${(", 1000) + `"` + "\n",
		"comments":       "# " + r("(", 1000) + "\n// " + r("[", 1000) + "\n/* " + r("{", 1000) + " */\nx = 1\n",
		"heredoc":        "x = <<-EOT\n  " + r("((({{{", 1000) + "\n  EOT\ny = 1\n",
		"names":          "x = local.a-b-c" + r("-d", 1000) + "\n",
		"binary":         "x = 1" + r(" - 1", 1000) + r(" != 2", 1000) + "\n",
		"list items":     "x = [" + r("-1, !true, a ? b : c, x[*].y, ", 1000) + "]\n",
		"object lines":   "x = {\n" + r("a = -1\n", 1000) + "}\n",
		"attributes":     r("x = -1\ny = !true\n", 1000),
	} {
		if diags := CheckNesting([]byte(src), "ok.hcl", hcl.InitialPos); diags.HasErrors() {
			t.Errorf("%s: %v", name, diags)
		}
	}
}

// Every HCL parse of piship goes through ParseConfig or ParseExpression
// (graph's parallel split parses parts of a file it has checked whole):
// a new caller of hclsyntax.Parse* would bypass the bound.
func TestOneDoorToTheParser(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"graph/diag/nesting.go": true, "graph/split.go": true}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "hclsyntax" && strings.HasPrefix(sel.Sel.Name, "Parse") && !allowed[rel] {
				t.Errorf("%s calls hclsyntax.%s: parse through graph/diag.ParseConfig or ParseExpression (the nesting bound)", rel, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
