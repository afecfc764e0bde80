//go:build !race

package archive

// raceBuild: see race_on_test.go.
const raceBuild = false
