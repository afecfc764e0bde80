// Package stages holds the built-in stage kinds, one file per kind, and
// Default, the registry a pipeline's `stage "<kind>"` blocks resolve
// against. The contract they fulfil lives in stages/stage; the work they do
// lives in the domain packages under stages/ (which never import this one).
package stages

import "piship.dev/piship/stages/stage"

// Default returns a registry with every built-in kind.
func Default() *stage.Registry {
	return stage.NewRegistry(
		// generic
		Exec{},
		Digest{},

		// build
		DistInputs{},
		NpmInstall{},
		Prune{},
		Strip{},
		Bundle{},
		Resources{},
		Inventory{},
		Publish{},
		StagingCleanup{},

		// release
		ReleaseInputs{},
		Audit{},
		PackageAudits{},
		Signatures{},
		SBOM{},
		Notices{},
		Smoke{},
		ReleaseMetadata{},
		Checksums{},
		Archive{},
		ReleasePublish{},

		// consumer
		stage.Define(Install{}),
		stage.Define(UpdateCheck{}),
		stage.Define(Download{}),
		stage.Define(Rollback{}),
		stage.Define(Doctor{}),
	)
}
