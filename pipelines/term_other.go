//go:build !unix

package pipelines

import "io"

// terminalWidth is 0 where piship does not ask the terminal (COLUMNS or 80
// then apply).
func terminalWidth(io.Writer) int { return 0 }
