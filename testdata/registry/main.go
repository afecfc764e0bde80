// Command registry is the CNCF distribution registry
// (github.com/distribution/distribution/v3, what GHCR and Harbor descend
// from) as piship's end-to-end tests run it: its own registry command with
// the filesystem storage driver only. The upstream cmd/registry also links
// the Azure, GCS and S3 drivers, the pull-through proxy and the auth
// plugins, which the tests never use and which doubled its compile.
package main

import (
	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

func main() {
	// RootCmd's commands exit non-zero themselves when they fail.
	_ = registry.RootCmd.Execute()
}
