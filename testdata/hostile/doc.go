// Package hostile is the corpus of hostile release archives: one archive
// per rule a consumer applies, each refused by install and verify-release
// alike. TestCorpus (make test runs it: the Makefile names this package,
// which `go list ./...` skips as it lives under testdata/) generates every
// case into a temporary directory, nothing is committed as bytes.
package hostile
