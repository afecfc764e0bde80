//go:build !unix

package pipelines

import "io"

// terminalSize is unknown where piship does not ask the terminal (COLUMNS
// or 80 columns then apply, and no height limit).
func terminalSize(io.Writer) (cols, rows int) { return 0, 0 }
