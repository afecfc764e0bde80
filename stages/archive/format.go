package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// Format names a release archive format: what its declaration's schema
// says and what its file name ends in.
type Format string

// The archive formats. Write writes V2 unless Options.Format says V1;
// every reader tells them apart by their first bytes (gzip's 1f 8b: V1,
// zstd's 28 b5 2f fd: V2), never by a name.
const (
	V1 Format = "piship-archive/v1" // a tar in gzip block members (pgzip.go)
	V2 Format = "piship-archive/v2" // a tar in independent zstd frames with a file index (zst.go)
)

// Ext is the file name extension of an archive of format f: ".tar.gz"
// for V1, ".tar.zst" for V2.
func (f Format) Ext() string {
	if f == V1 {
		return ".tar.gz"
	}
	return ".tar.zst"
}

// FormatOfName returns the format a file name's extension names (".tar.gz"
// or ".tar.zst") and whether it names one. Only names are told apart this
// way; the bytes of an archive are read by their magic.
func FormatOfName(name string) (Format, bool) {
	for _, f := range []Format{V2, V1} {
		if strings.HasSuffix(name, f.Ext()) {
			return f, true
		}
	}
	return "", false
}

// TrimExt returns name without its archive extension (".tar.gz" or
// ".tar.zst"), and whether it had one.
func TrimExt(name string) (string, bool) {
	f, ok := FormatOfName(name)
	if !ok {
		return name, false
	}
	return strings.TrimSuffix(name, f.Ext()), true
}

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// formatOf tells the format from an archive's first bytes.
func formatOf(b []byte) (Format, bool) {
	switch {
	case bytes.HasPrefix(b, zstdMagic):
		return V2, true
	case bytes.HasPrefix(b, gzipMagic):
		return V1, true
	}
	return "", false
}

func notAnArchive(b []byte) *Error {
	return integrity(RuleGzip, 0, "", "neither a %s archive (gzip, 1f 8b) nor a %s one (zstd, 28 b5 2f fd): it starts with % x", V1, V2, b)
}

// NewTarReader returns the decompressed tar stream of the archive r, of
// either format (told by its first bytes), for a reader of a file or two
// (release.json): the stream is checked as Extract checks it (members or
// frames, CRCs and checksums, V2's seek table at its end) and bounded by
// lim (its file content bytes plus one header block per entry and the
// declaration). Close stops the decompressors. Nothing is extracted and
// no tar rule is applied: the caller reads entries with archive/tar. The
// stream starts after the declaration (the PAX global header first in
// the tar, see Declared), which is skipped: a V2 declaration carries the
// file index, often larger than the 1 MiB archive/tar reads.
func NewTarReader(r io.Reader, lim Limits) (io.ReadCloser, Format, error) {
	rc, f, err := newTarReader(r, lim)
	if err != nil {
		return nil, "", err
	}
	rest, err := skipDeclaration(rc)
	if err != nil {
		rc.Close()
		return nil, "", err
	}
	return struct {
		io.Reader
		io.Closer
	}{rest, rc}, f, nil
}

// skipDeclaration reads past a PAX global header first in the tar stream
// r, and gives back the bytes it read when there is none.
func skipDeclaration(r io.Reader) (io.Reader, error) {
	var blk [512]byte
	n, err := io.ReadFull(r, blk[:])
	if err != nil || blk[156] != tar.TypeXGlobalHeader {
		return io.MultiReader(bytes.NewReader(blk[:n]), r), nil
	}
	size, ok := parseNumeric(blk[124:136])
	if !ok || size < 0 || size > maxDeclarationV2 {
		return nil, integrity(RuleDeclared, 0, "", "the archive's first header declares %d bytes, over the %d a declaration may hold", size, maxDeclarationV2)
	}
	if _, err := io.CopyN(io.Discard, r, padded(size)); err != nil {
		return nil, integrity(RuleDeclared, 0, "", "the archive ends inside its declaration: %v", err)
	}
	return r, nil
}

func newTarReader(r io.Reader, lim Limits) (io.ReadCloser, Format, error) {
	lim = lim.withDefaults()
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4)
	f, ok := formatOf(head)
	if !ok {
		return nil, "", notAnArchive(head)
	}
	bound := lim.MaxBytes + int64(lim.MaxEntries)*2*512 + maxDeclarationV2 + tarRecord
	switch {
	case f == V2:
		z := newZstReader(br)
		return &boundedTar{r: z, left: bound, close: z.Close}, f, nil
	default:
		if hdr, _ := br.Peek(pgzHeaderLen); isPGZ(hdr) {
			z := newPGZReader(br)
			return &boundedTar{r: z, left: bound, close: z.Close}, f, nil
		}
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, "", integrity(RuleGzip, 0, "", "corrupt gzip stream: %v", err)
		}
		gz.Multistream(false)
		return &boundedTar{r: gz, left: bound, close: func() {}}, f, nil
	}
}

// boundedTar refuses a decompressed stream longer than left bytes.
type boundedTar struct {
	r     io.Reader
	left  int64
	close func()
}

func (b *boundedTar) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, integrity(RuleMaxBytes, 0, "", "the decompressed archive exceeds its limit")
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedTar) Close() error {
	b.close()
	return nil
}

// errFormat says that opts.Format names no format.
func errFormat(f Format) error {
	return fmt.Errorf("archive: unknown format %q (%s or %s)", f, V1, V2)
}
