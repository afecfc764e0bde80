package diag

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

func TestSuggest(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"exce", "exec"}, {"comand", "command"}, {"zzzzzz", ""}, {"digets", "digest"},
	} {
		if got := Suggest(tc.in, []string{"exec", "command", "digest"}); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSortIsTotal(t *testing.T) {
	r := func(f string, b int) *hcl.Range { return &hcl.Range{Filename: f, Start: hcl.Pos{Byte: b}} }
	diags := hcl.Diagnostics{
		{Summary: "b", Subject: r("y.hcl", 1)}, {Summary: "z", Subject: r("x.hcl", 5)},
		{Summary: "a", Subject: r("x.hcl", 5)}, {Summary: "none"}, {Summary: "c", Subject: r("x.hcl", 2)},
	}
	var got []string
	for _, d := range Sort(diags) {
		got = append(got, d.Summary)
	}
	if strings.Join(got, ",") != "none,c,a,z,b" {
		t.Fatalf("order %v", got)
	}
}

func TestImproveUnsupported(t *testing.T) {
	diags := hcl.Diagnostics{
		{Summary: "Unsupported argument", Detail: `An argument named "comand" is not expected here.`},
		{Summary: "Unsupported argument", Detail: `An argument named "xyzzy" is not expected here.`},
	}
	ImproveUnsupported(diags, "Kind exec", []string{"command", "env"}, nil)
	if !strings.HasSuffix(diags[0].Detail, `Did you mean "command"?`) || !strings.HasSuffix(diags[1].Detail, "Kind exec takes: command, env.") {
		t.Fatalf("%q / %q", diags[0].Detail, diags[1].Detail)
	}
}

func TestSuggestion(t *testing.T) {
	for detail, want := range map[string]string{
		`An argument named "cahce" is not expected here. Did you mean "cache"?`: "cache",
		`An argument named "x" is not expected here. Kind exec takes: command.`: "",
		`Did you mean "a \"quoted\" name"? More text.`:                          `a "quoted" name`,
	} {
		if got := Suggestion(&hcl.Diagnostic{Detail: detail}); got != want {
			t.Errorf("Suggestion(%q) = %q, want %q", detail, got, want)
		}
	}
}
