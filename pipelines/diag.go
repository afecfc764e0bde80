package pipelines

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/hcl/v2"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/graph/diag"
)

// WriteDiags prints each diagnostic the one way piship prints them (see
// diag.Render): `file:line:col: error: summary`, the source line with the
// range underlined, and the detail; `file: error: summary` for a
// diagnostic about a whole file. The snippet comes from files, or else
// from the file on disk. A terminal gets the severity in colour unless
// NO_COLOR is set.
func WriteDiags(w io.Writer, getenv func(string) string, files map[string]*hcl.File, diags hcl.Diagnostics) {
	writeDiags(w, getenv, sourcesOf(files, nil), diags, "")
}

// WriteError prints err's diagnostics as WriteDiags does when it carries
// any (a *diag.Error, wrapped or not), those without a position as about
// where, and reports whether it did.
func WriteError(w io.Writer, getenv func(string) string, files map[string]*hcl.File, err error, where string) bool {
	var de *diag.Error
	if !errors.As(err, &de) || len(de.Diags) == 0 {
		return false
	}
	writeDiags(w, getenv, sourcesOf(files, de.Sources), de.Diags, where)
	return true
}

func writeDiags(w io.Writer, getenv func(string) string, src func(string) []byte, diags hcl.Diagnostics, where string) {
	if len(diags) == 0 {
		return
	}
	WriteAll(w, diag.Render(diags, diag.RenderOptions{
		Source: src, Color: IsTerminal(w) && getenv("NO_COLOR") == "", Where: where,
	}))
}

// maxSnippetFile is the largest file read from disk for a snippet.
const maxSnippetFile = 8 << 20

// sourcesOf looks a file up in files, then in more, then on disk (a
// regular file of at most maxSnippetFile bytes).
func sourcesOf(files map[string]*hcl.File, more map[string][]byte) func(string) []byte {
	return func(name string) []byte {
		if f := files[name]; f != nil && f.Bytes != nil {
			return f.Bytes
		}
		if b, ok := more[name]; ok {
			return b
		}
		info, err := os.Stat(name)
		if err != nil || !info.Mode().IsRegular() || info.Size() > maxSnippetFile {
			return nil
		}
		b, err := atomicfs.ReadRegular(name, 0)
		if err != nil {
			return nil
		}
		return b
	}
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// WriteAll is io.WriteString that ignores a closed stdout.
func WriteAll(w io.Writer, s string) { _, _ = io.WriteString(w, s) }

// HumanBytes words a size in binary units: 512 B, 1.5 KiB, 24.0 MiB.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
