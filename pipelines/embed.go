// Package pipelines holds the pipeline files built into the piship binary
// and runs pipelines for the piship command: it finds and loads them
// (`piship run NAME` finds NAME.hcl here when neither --pipelines DIR nor
// ./pipelines has it, build and release when the distribution has no
// pipelines/NAME.hcl; --builtin takes them at once), executes them with progress, spans, timings and
// the action cache (Execute), and, in results.go, runs each built-in
// pipeline from typed arguments and returns its stages' outputs as typed
// results. It also validates and formats pipeline files and renders
// diagnostics and doctor reports.
package pipelines

import "embed"

// FS holds the embedded pipeline files, one pipeline per file, named
// <pipeline>.hcl, and the built-in modules, modules/<module>.hcl (`source
// = "builtin:<module>"`).
//
//go:embed *.hcl modules/*.hcl
var FS embed.FS
