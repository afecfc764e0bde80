// Package stages holds the built-in stage kinds, one file per kind
// (kind_<name>.go, apart by name from the domain package stages/<name>/),
// and Default, the registry a pipeline's `stage "<kind>"` blocks resolve
// against. The contract they fulfil lives in stages/stage; the work they do
// lives in the domain packages under stages/ (which never import this one).
package stages

import (
	"piship.dev/piship/stages/consumer"
	"piship.dev/piship/stages/stage"
)

// Default returns a registry with every built-in kind.
func Default() *stage.Registry {
	kinds := []stage.Kind{
		// generic
		stage.Define(Exec{}),
		stage.Define(Digest{}),

		// build
		stage.Define(DistInputs{}),
		stage.Define(NpmInstall{}),
		stage.Define(PiPackages{}),
		stage.Define(Prune{}),
		stage.Define(Strip{}),
		stage.Define(Bundle{}),
		stage.Define(Resources{}),
		stage.Define(SearchTools{}),
		stage.Define(NodeRuntime{}),
		stage.Define(Inventory{}),
		stage.Define(Publish{}),
		stage.Define(StagingCleanup{}),

		// release
		stage.Define(ReleaseInputs{}),
		stage.Define(Audit{}),
		stage.Define(PackageAudits{}),
		stage.Define(Signatures{}),
		stage.Define(SBOM{}),
		stage.Define(Notices{}),
		stage.Define(Smoke{}),
		stage.Define(ReleaseMetadata{}),
		stage.Define(Checksums{}),
		stage.Define(Archive{}),
		stage.Define(ReleaseNotes{}),
		stage.Define(ReleasePublish{}),
		stage.Define(ReleaseSet{}),
	}
	// consumer: what an end user's machine runs (cmd/piship-install links only those)
	return stage.NewRegistry(append(kinds, consumer.Kinds()...)...)
}
