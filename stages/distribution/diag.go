package distribution

import (
	"github.com/hashicorp/hcl/v2"

	"piship.dev/piship/graph/diag"
)

func errDiag(summary, detail string, subject hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: subject.Ptr()}
}

// parseConfig parses a distribution.hcl behind the nesting bound.
func parseConfig(src []byte, filename string) (*hcl.File, hcl.Diagnostics) {
	return diag.ParseConfig(src, filename, hcl.InitialPos)
}

func fmtPos(r hcl.Range) string { return diag.Pos(r) }

func sortDiags(diags hcl.Diagnostics) hcl.Diagnostics { return diag.Sort(diags) }

func suggest(s string, candidates []string) string { return diag.Suggest(s, candidates) }

func improveUnsupported(diags hcl.Diagnostics, where string, attrs, blocks []string) {
	diag.ImproveUnsupported(diags, where, attrs, blocks)
}

func fileRange(filename string) *hcl.Range { return diag.FileRange(filename) }
