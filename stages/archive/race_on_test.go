//go:build race

package archive

// raceBuild: the tests run under the race detector (make test's
// test-race), where compressing is ~10x slower; TestParallelGzip keeps
// the level releases use there (the only one piship writes) and sweeps
// the others in a build without it (go test ./stages/archive/).
const raceBuild = true
