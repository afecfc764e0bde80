package diag

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// Every diagnostic prints as file:line:col (a position), file (a whole
// file) or the caller's where (none), never hcl's `<nil>` or
// `file:3,22-22`, in one line (Line, Error) and in full (Render).
func TestRenderAndLineWithAndWithoutPosition(t *testing.T) {
	src := []byte("a = 1\nname = Hello\n")
	at := &hcl.Range{Filename: "d/distribution.hcl", Start: hcl.Pos{Line: 2, Column: 8, Byte: 13}, End: hcl.Pos{Line: 2, Column: 13, Byte: 18}}
	diags := hcl.Diagnostics{
		{Severity: hcl.DiagError, Summary: "Variables not allowed", Detail: "write the value itself.", Subject: at},
		{Severity: hcl.DiagError, Summary: "Cannot read the distribution", Detail: "d has no distribution.hcl.", Subject: FileRange("d/distribution.hcl")},
		{Severity: hcl.DiagError, Summary: "Something failed", Detail: "first\n  second"},
	}
	got := Render(diags, RenderOptions{Source: func(string) []byte { return src }, Where: "build.hcl:19:3"})
	want := "d/distribution.hcl:2:8: error: Variables not allowed\n" +
		"    2 | name = Hello\n" +
		"      |        ^^^^^\n" +
		"  write the value itself.\n\n" +
		"d/distribution.hcl: error: Cannot read the distribution\n" +
		"  d has no distribution.hcl.\n\n" +
		"build.hcl:19:3: error: Something failed\n" +
		"  first\n" +
		"    second\n\n"
	if got != want {
		t.Errorf("Render:\n%s\nwant:\n%s", got, want)
	}
	if got := Render(diags[2:], RenderOptions{}); got != "error: Something failed\n  first\n    second\n\n" {
		t.Errorf("Render without where: %q", got)
	}
	for i, want := range []string{
		"d/distribution.hcl:2:8: Variables not allowed; write the value itself.",
		"d/distribution.hcl: Cannot read the distribution; d has no distribution.hcl.",
		"Something failed", // a listing is left to Render
	} {
		if got := Line(diags[i], ""); got != want {
			t.Errorf("Line %d = %q, want %q", i, got, want)
		}
	}
	err := fmt.Errorf("wrapped: %w", NewError("CONFIG_INVALID", diags))
	if got := err.Error(); got != "wrapped: CONFIG_INVALID: Something failed (and 2 more)" {
		t.Errorf("Error() = %q", got)
	}
	var de *Error
	if !errors.As(err, &de) || len(de.Diags) != 3 {
		t.Fatalf("errors.As: %v", err)
	}
	one := NewError("CONFIG_INVALID", diags[1:2]).Error()
	if one != "CONFIG_INVALID: d/distribution.hcl: Cannot read the distribution; d has no distribution.hcl." {
		t.Errorf("Error() = %q", one)
	}
	if strings.Contains(got, "<nil>") || strings.Contains(one, "<nil>") {
		t.Errorf("<nil> in %q / %q", got, one)
	}
}
