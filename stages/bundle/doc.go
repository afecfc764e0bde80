// Package bundle turns an installed npm dependency tree into a few large
// ESM chunks with esbuild's Go API, keeping as ordinary files what must stay
// files (native addons, WebAssembly, assets read from disk by path).
package bundle

import _ "github.com/evanw/esbuild/pkg/api"
