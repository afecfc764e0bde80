package remotecache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/oci"
)

// Packing: the distinct contents under packMax bytes travel in packs, so
// an installed tree of 15,000 small files is a few dozen blobs, not
// 15,000 requests each way.
const (
	// packMax is the size from which a content is a layer of its own.
	packMax = 1 << 20
	// packLimit is the most bytes a pack holds.
	packLimit = 8 << 20
)

// Pack is one pack layer as the listing records it: its blob's digest and
// size, and the sha256 of each content it concatenates, in order (each
// content's size is that of the files holding it).
type Pack struct {
	Digest   string   `json:"digest"`
	Size     int64    `json:"size"`
	Contents []string `json:"contents"`
}

// content is one distinct file content of an entry being pushed.
type content struct {
	sha  string // sha256, hex
	size int64
	path string // a file holding it
}

// cutAfter reports whether a pack ends after the content with sha256 hex
// sha: its second byte is 0, one content in 256. The cut depends on the
// content alone, so adding or removing a file changes only the pack that
// holds it (short of the size limit).
func cutAfter(sha string) bool { return sha[2:4] == "00" }

// group splits contents (sorted by sha256) into packs, in that order, and
// the ones of packMax bytes or more, which stay layers of their own. A pack
// ends after a content cutAfter names, and before one that would take it
// over packLimit.
func group(contents []content) (packs [][]content, large []content) {
	var cur []content
	var size int64
	for _, c := range contents {
		if c.size >= packMax {
			large = append(large, c)
			continue
		}
		if len(cur) > 0 && size+c.size > packLimit {
			packs, cur, size = append(packs, cur), nil, 0
		}
		cur, size = append(cur, c), size+c.size
		if cutAfter(c.sha) {
			packs, cur, size = append(packs, cur), nil, 0
		}
	}
	if len(cur) > 0 {
		packs = append(packs, cur)
	}
	return packs, large
}

// packBlob is the blob of a pack: its contents' bytes one after the other,
// hashed once here and read again, file by file, when pushed.
func packBlob(cs []content) (oci.Blob, Pack, error) {
	p := Pack{Contents: make([]string, len(cs))}
	paths := make([]string, len(cs))
	for i, c := range cs {
		p.Contents[i], paths[i] = c.sha, c.path
		p.Size += c.size
	}
	r := &catReader{paths: paths}
	defer r.Close()
	d := digest.SHA256.Digester()
	n, err := io.Copy(d.Hash(), r)
	if err != nil {
		return oci.Blob{}, p, err
	}
	if n != p.Size {
		return oci.Blob{}, p, fmt.Errorf("the files of a pack changed while it was read (%d bytes, not %d)", n, p.Size)
	}
	p.Digest = d.Digest().String()
	return oci.Blob{
		Desc: ocispec.Descriptor{MediaType: PackMediaType, Digest: d.Digest(), Size: n},
		Open: func() (io.ReadCloser, error) { return &catReader{paths: paths}, nil },
	}, p, nil
}

// catReader reads files one after the other, each opened when reached.
type catReader struct {
	paths []string
	cur   *os.File
}

func (r *catReader) Read(b []byte) (int, error) {
	for {
		if r.cur == nil {
			if len(r.paths) == 0 {
				return 0, io.EOF
			}
			f, err := atomicfs.OpenRegular(r.paths[0])
			if err != nil {
				return 0, err
			}
			r.cur, r.paths = f, r.paths[1:]
		}
		n, err := r.cur.Read(b)
		if err == io.EOF {
			r.cur.Close()
			r.cur, err = nil, nil
			if n == 0 {
				continue
			}
		}
		return n, err
	}
}

func (r *catReader) Close() error {
	if r.cur != nil {
		return r.cur.Close()
	}
	return nil
}

// unpack reads a pack as it streams and writes each of its contents to
// paths[i] (mode modes[i]), checked against the sha256 and size the signed
// listing records before it is renamed into place; a content that differs
// is an *oci.IntegrityError naming the pack.
func unpack(r io.Reader, p Pack, sizes map[string]int64, paths []string, modes []fs.FileMode) error {
	var buf []byte
	for i, sha := range p.Contents {
		n := sizes[sha]
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		sum := sha256.Sum256(buf)
		if hex.EncodeToString(sum[:]) != sha {
			return &oci.IntegrityError{Digest: p.Digest, Err: fmt.Errorf("content %d of the pack is not sha256 %s", i, sha)}
		}
		f, err := atomicfs.Create(paths[i], modes[i], atomicfs.Options{})
		if err != nil {
			return err
		}
		_, err = f.Write(buf)
		if err == nil {
			err = f.Commit()
		}
		f.Abort()
		if err != nil {
			return err
		}
		if err := os.Chmod(paths[i], modes[i]); err != nil {
			return err
		}
	}
	return nil
}
