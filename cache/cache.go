// Package cache implements piship's action cache: a keyed store that lets a
// cacheable stage be skipped when nothing that decides its result has
// changed. It also holds the release runtime cache (runtime.go: installed
// dependency trees and bundles, placed by hardlink, clone or copy) and the
// content-addressed object store installs link files from (store.go).
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
// hashReader's pooled buffer: io.Copy from an *os.File into a hash
// allocates 32 KiB on every call (File.WriteTo falls back to io.Copy
// without one), which for the thousands of files of a payload was mostly
// garbage collection.
func HashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cache: hashing file: %w", err)
	}
	defer f.Close()
	_, sum, err := hashReader(f)
	if err != nil {
		return "", fmt.Errorf("cache: hashing file %s: %w", path, err)
	}
	return sum, nil
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
	w := newLPWriter()
	w.str("piship-key/v1")
	w.str(k.Kind)
	w.str(k.KindVersion)
	w.bytes(k.Config)
	w.str(k.ToolDigest)
	paths := make([]string, 0, len(k.Inputs))
	for p := range k.Inputs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	w.uint(uint64(len(paths)))
	for _, p := range paths {
		w.str(p)
		w.str(k.Inputs[p])
	}
	return w.sum()
}

// lpWriter feeds a hash with length-prefixed fields, so that no two
// different field sequences produce the same byte stream.
type lpWriter struct {
	h   hash.Hash
	buf [8]byte
}

func newLPWriter() *lpWriter { return &lpWriter{h: sha256.New()} }

func (w *lpWriter) uint(n uint64) {
	binary.BigEndian.PutUint64(w.buf[:], n)
	w.h.Write(w.buf[:])
}

func (w *lpWriter) bytes(b []byte) {
	w.uint(uint64(len(b)))
	w.h.Write(b)
}

func (w *lpWriter) str(s string) {
	w.uint(uint64(len(s)))
	io.WriteString(w.h, s)
}

func (w *lpWriter) sum() string { return hex.EncodeToString(w.h.Sum(nil)) }

// isDigest reports whether s looks like a sha256 hex digest (and hence like
// a cache key): 64 lowercase hex digits.
func isDigest(s string) bool {
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
