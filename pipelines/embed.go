// Package pipelines holds the pipeline files built into the piship binary.
// `piship run NAME` finds NAME.hcl here when neither --pipelines DIR nor
// ./pipelines has it.
package pipelines

import "embed"

// FS holds the embedded pipeline files, one pipeline per file, named
// <pipeline>.hcl.
//
//go:embed *.hcl
var FS embed.FS
