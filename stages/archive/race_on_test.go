//go:build race

package archive

// raceBuild: the tests run under the race detector (make test's
// test-race), where compressing is ~10x slower; the tests that sweep gzip
// levels keep the level releases use there and sweep the others without it.
const raceBuild = true
