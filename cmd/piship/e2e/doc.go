// Package e2e holds piship's end-to-end tests: the real piship and
// piship-launch binaries, built once per run, release the example
// distributions (hello offline, the real Pi from the npm registry), then
// install, update, roll back, tamper with, kill and launch them as a user's
// machine would. They are the long tests of the tree, so `make test` runs
// this package on its own (test-e2e) with a timeout of its own; the file
// and error names they assert are the ones users see.
package e2e
