// Package e2e holds piship's end-to-end tests: the real piship,
// piship-install and piship-launch binaries, built once per run, release the example
// distributions (hello offline, the real Pi from the npm registry: 0.73 on
// the node on PATH, 1.6 on the Node 22 in PISHIP_NODE22, which `make
// node22-bin` provides and test-e2e sets; its test fails without it), then
// install, update, roll back, tamper with, kill and launch them as a user's
// machine would: the consumer commands run with piship-install, the
// installer a release ships as its piship (PISHIP_E2E_CONSUMER_BINARY=piship
// runs them with the full piship). They are the long tests of the tree, so `make test` runs
// this package on its own (test-e2e) with a timeout of its own; the file
// and error names they assert are the ones users see.
package e2e
