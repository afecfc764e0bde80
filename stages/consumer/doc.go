// Package consumer holds the stage kinds an end user's machine runs: the
// install, update, rollback and doctor pipelines' install, update_check,
// download, rollback and doctor, one file per kind (kind_<name>.go), and
// Registry, the registry the end-user installer (cmd/piship-install)
// resolves its pipelines against. Like every kind they are thin adapters:
// the rules live in stages/home and its receipt. stages.Default includes
// them; nothing here links the build side (esbuild, npm, SBOM, audits).
package consumer

import "piship.dev/piship/stages/stage"

// Kinds returns the consumer kinds, in the order `piship stages` lists them.
func Kinds() []stage.Kind {
	return []stage.Kind{
		stage.Define(Install{}),
		stage.Define(UpdateCheck{}),
		stage.Define(Download{}),
		stage.Define(Rollback{}),
		stage.Define(Doctor{}),
	}
}

// Registry returns a registry with the consumer kinds only.
func Registry() *stage.Registry { return stage.NewRegistry(Kinds()...) }
