// Package cache implements piship's action cache: a keyed store that lets a
// cacheable stage be skipped when nothing that decides its result has
// changed. It also keeps the run records `piship explain` reads
// (explain.go) and the helpers every cache shares: the cache home, file
// hashing, the key encoding. The build's runtime cache and the install's
// content store are the domain's (stages/runtimecache, stages/contentstore):
// they import this package, never the other way round.
//
// A stage's cache key (KeyInput.Key) is the sha256 of its kind, kind
// version, evaluated configuration, input file digests and the digest of the
// piship executable itself. An entry under that key records the stage's
// outputs (opaque JSON) and a copy of every output file it wrote; a hit
// restores those files into the stage directory instead of running the stage.
//
// # Layout
//
// The cache root (Home) holds the action store in <home>/actions:
//
//	actions/
//	  <key[:2]>/<key>/        one entry, never modified after creation
//	    entry.json            schema, key, created, outputs, files, sha256
//	    files/0 files/1 ...   stored output files, named by the index of
//	                          their path in the sorted list of output paths
//	  .tmp-*                  entries being written (or removed)
//
// Entries are built in a temporary directory inside the actions root and
// renamed into place, so a reader sees either no entry or a complete one.
// Removal (of damaged or pruned entries) first renames the entry out of the
// way and then deletes it, for the same reason. Every read is verified: the
// "sha256" field of entry.json is a digest over its canonical content, and
// each stored file is checked against its recorded sha256 while it is
// restored; anything that does not verify is removed and reported as a
// *DamagedError miss. Entry directory mtimes record last use, which Prune
// uses to evict least recently used entries first.
//
// Stored files keep their permission bits (best effort: the mode is restored
// but is not part of the verified content).
package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
)

// Home resolves the cache root: PISHIP_CACHE_HOME, else
// $XDG_CACHE_HOME/piship, else ~/.cache/piship. getenv is usually os.Getenv
// (nil means os.Getenv). A relative PISHIP_CACHE_HOME is made absolute; a
// relative XDG_CACHE_HOME is ignored, as the XDG base directory
// specification requires.
func Home(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv("PISHIP_CACHE_HOME"); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", fmt.Errorf("cache: resolving PISHIP_CACHE_HOME %q: %w", d, err)
		}
		return abs, nil
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "piship"), nil
	}
	home := getenv("HOME")
	if home == "" {
		switch runtime.GOOS {
		case "windows":
			home = getenv("USERPROFILE")
		case "plan9":
			home = getenv("home")
		}
	}
	if home == "" {
		return "", errors.New("cache: cannot locate the cache directory: set PISHIP_CACHE_HOME (or XDG_CACHE_HOME or HOME)")
	}
	return filepath.Join(home, ".cache", "piship"), nil
}

var toolDigest struct {
	once   sync.Once
	digest string
}

// ToolDigest is the sha256 hex of the running executable (os.Executable),
// computed once and memoised. If the executable cannot be read it falls back
// to a digest of the build info (runtime/debug.ReadBuildInfo), so it never
// fails.
func ToolDigest() string {
	toolDigest.once.Do(func() {
		toolDigest.digest = computeToolDigest()
	})
	return toolDigest.digest
}

func computeToolDigest() string {
	if exe, err := os.Executable(); err == nil {
		id, idOK := fileIdentity(exe)
		if d, ok := stampedToolDigest(exe, id); idOK && ok {
			return d
		}
		if d, err := HashFile(exe); err == nil {
			if id2, ok := fileIdentity(exe); idOK && ok && id2 == id {
				writeToolStamp(exe, id, d)
			}
			return d
		}
	}
	h := sha256.New()
	io.WriteString(h, "piship-buildinfo/v1\x00")
	if bi, ok := debug.ReadBuildInfo(); ok {
		io.WriteString(h, bi.String())
	} else {
		io.WriteString(h, runtime.Version())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// HashFile returns the sha256 hex of a file's contents, read through
// HashReader's pooled buffer: io.Copy from an *os.File into a hash
// allocates 32 KiB on every call (File.WriteTo falls back to io.Copy
// without one), which for the thousands of files of a payload was mostly
// garbage collection.
func HashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cache: hashing file: %w", err)
	}
	defer f.Close()
	_, sum, err := HashReader(f)
	if err != nil {
		return "", fmt.Errorf("cache: hashing file %s: %w", path, err)
	}
	return sum, nil
}

var hashBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// HashReader returns the number of bytes read from r and their sha256 hex,
// reading through a pooled buffer (no allocation per file).
func HashReader(r io.Reader) (int64, string, error) {
	bp := hashBufs.Get().(*[]byte)
	defer hashBufs.Put(bp)
	buf := *bp
	h := sha256.New()
	var n int64
	for {
		m, err := r.Read(buf)
		h.Write(buf[:m])
		n += int64(m)
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, "", err
		}
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// KeyInput is everything that decides a cacheable action's result.
type KeyInput struct {
	Kind, KindVersion string
	// Config is the canonical JSON of the evaluated configuration.
	Config []byte
	// Inputs maps each input file path (as declared, slash-separated) to
	// the sha256 hex of its contents.
	Inputs map[string]string
	// ToolDigest identifies the piship build (see the ToolDigest function).
	ToolDigest string
}

// Key returns the sha256 hex of an unambiguous, length-prefixed encoding of
// all fields, with inputs sorted by path (so map order does not matter).
func (k KeyInput) Key() string {
	w := NewKeyHash()
	w.Str("piship-key/v1")
	w.Str(k.Kind)
	w.Str(k.KindVersion)
	w.Bytes(k.Config)
	w.Str(k.ToolDigest)
	paths := make([]string, 0, len(k.Inputs))
	for p := range k.Inputs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	w.Uint(uint64(len(paths)))
	for _, p := range paths {
		w.Str(p)
		w.Str(k.Inputs[p])
	}
	return w.Sum()
}

// KeyHash feeds a hash with length-prefixed fields, so that no two
// different field sequences produce the same byte stream: the encoding of
// every key (KeyInput.Key, the explain records, the runtime cache's keys).
type KeyHash struct {
	h   hash.Hash
	buf [8]byte
}

// NewKeyHash returns an empty KeyHash (sha256).
func NewKeyHash() *KeyHash { return &KeyHash{h: sha256.New()} }

// Uint adds n as 8 big-endian bytes.
func (w *KeyHash) Uint(n uint64) {
	binary.BigEndian.PutUint64(w.buf[:], n)
	w.h.Write(w.buf[:])
}

// Bytes adds b after its length.
func (w *KeyHash) Bytes(b []byte) {
	w.Uint(uint64(len(b)))
	w.h.Write(b)
}

// Str adds s after its length.
func (w *KeyHash) Str(s string) {
	w.Uint(uint64(len(s)))
	io.WriteString(w.h, s)
}

// Sum is the sha256 hex of everything added.
func (w *KeyHash) Sum() string { return hex.EncodeToString(w.h.Sum(nil)) }

// IsDigest reports whether s looks like a sha256 hex digest (and hence like
// a cache key): 64 lowercase hex digits.
func IsDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// RuntimeKeyHex is how many hex digits of a sha256 a runtime cache key
// (stages/runtimecache) keeps.
const RuntimeKeyHex = 20

// IsRuntimeKey reports whether s is shaped as a runtime cache key: a
// lowercase letter, '-', and 20 lowercase hex digits. The explain area
// names its key records (keys/<key>.json) by these keys, so the shape is
// checked here, where the runtime cache finds it too.
func IsRuntimeKey(s string) bool {
	if len(s) != 2+RuntimeKeyHex || s[0] < 'a' || s[0] > 'z' || s[1] != '-' {
		return false
	}
	return IsDigest(s[2:] + strings.Repeat("0", 64-RuntimeKeyHex))
}

// CheckRuntimeKey is IsRuntimeKey as an error.
func CheckRuntimeKey(key string) error {
	if !IsRuntimeKey(key) {
		return fmt.Errorf("cache: invalid runtime cache key %q: want a letter, '-' and 20 lowercase hex digits (e.g. from runtimecache.InstallKey.Key)", key)
	}
	return nil
}
