package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
)

const (
	schemaV1   = "piship-action/v1"
	entryName  = "entry.json"
	filesName  = "files"
	tempPrefix = ".tmp-"
	// staleTemp is how old a temporary directory must be before Prune
	// assumes its writer was killed and removes it.
	staleTemp = time.Hour
)

// Actions is the action store rooted at <home>/actions. It holds no state
// besides its root, so any number of Actions values (in any number of
// processes) may use the same root at once.
type Actions struct {
	root string
	now  func() time.Time
}

// OpenActions returns the action store under home (see Home). Nothing is
// created until the first Store.
func OpenActions(home string) *Actions {
	return &Actions{root: filepath.Join(home, "actions"), now: time.Now}
}

// Root returns the store's root directory, <home>/actions.
func (a *Actions) Root() string { return a.root }

// Explain returns the explain area of the same cache home (explain.go).
func (a *Actions) Explain() *Explain { return OpenExplain(filepath.Dir(a.root)) }

// Result is what an entry stores besides files.
type Result struct {
	// Outputs are the stage's outputs, opaque to this package. They are
	// returned in compact form; empty outputs are stored as JSON null.
	Outputs json.RawMessage
	// Files maps each output path (slash-separated, relative to the stage
	// directory) to the sha256 hex of its contents.
	Files map[string]string
	// Inputs are the named inputs the entry recorded (nil for older ones).
	Inputs Inputs
}

// DamagedError reports a cache entry that failed verification. Lookup
// removes such entries and reports them as a miss; callers should log the
// error and run the stage.
type DamagedError struct {
	Key    string // the entry's key
	Dir    string // the entry's directory
	Reason string // what was wrong
	Err    error  // the underlying error, if any
	// RemoveErr is non-nil if the damaged entry could not be removed.
	RemoveErr error
}

func (e *DamagedError) Error() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "cache: damaged entry %s: %s", e.Dir, e.Reason)
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.RemoveErr != nil {
		fmt.Fprintf(&b, " (removing it failed: %v)", e.RemoveErr)
	} else {
		b.WriteString(" (entry removed)")
	}
	return b.String()
}

func (e *DamagedError) Unwrap() error { return e.Err }

// entry is the on-disk form of entry.json.
type entry struct {
	Schema  string            `json:"schema"`
	Key     string            `json:"key"`
	Created string            `json:"created"`
	Outputs json.RawMessage   `json:"outputs"`
	Files   map[string]string `json:"files"`
	// Inputs are the named inputs of the key (see Inputs); entries made
	// before they were recorded have none.
	Inputs Inputs `json:"inputs,omitempty"`
	SHA256 string `json:"sha256"`
}

// digest is the entry's self-digest: a length-prefixed encoding of every
// field but SHA256, with outputs compacted and files sorted by path, so it
// does not depend on how entry.json is formatted.
func (e *entry) digest() (string, error) {
	out, err := canonicalJSON(e.Outputs)
	if err != nil {
		return "", err
	}
	w := NewKeyHash()
	w.Str("piship-action-entry/v1")
	w.Str(e.Schema)
	w.Str(e.Key)
	w.Str(e.Created)
	w.Bytes(out)
	paths := slices.Sorted(maps.Keys(e.Files))
	w.Uint(uint64(len(paths)))
	for _, p := range paths {
		w.Str(p)
		w.Str(e.Files[p])
	}
	// Only when present, so entries written without inputs still verify.
	if len(e.Inputs) > 0 {
		names := slices.Sorted(maps.Keys(e.Inputs))
		w.Str("inputs")
		w.Uint(uint64(len(names)))
		for _, n := range names {
			w.Str(n)
			w.Str(e.Inputs[n])
		}
	}
	return w.Sum(), nil
}

// canonicalJSON compacts raw JSON; empty input is JSON null.
func canonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("null"), nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, err
	}
	return json.RawMessage(b.Bytes()), nil
}

func (a *Actions) entryDir(key string) string {
	return filepath.Join(a.root, key[:2], key)
}

func checkKey(key string) error {
	if !IsDigest(key) {
		return fmt.Errorf("cache: invalid key %q: want 64 lowercase hex digits", key)
	}
	return nil
}

// CheckOutputPath reports whether p is an acceptable output path: relative,
// clean, slash-separated and without "..". The runtime cache holds its
// manifests' paths to the same rule.
func CheckOutputPath(p string) error {
	if p == "" || p == "." || path.Clean(p) != p || path.IsAbs(p) ||
		!filepath.IsLocal(filepath.FromSlash(p)) ||
		filepath.Clean(filepath.FromSlash(p)) != filepath.FromSlash(p) {
		return fmt.Errorf("cache: invalid output path %q: want a clean, relative, slash-separated path inside the stage directory (no \"..\")", p)
	}
	return nil
}

// cleanOutputs validates output paths and returns them sorted.
func cleanOutputs(outputs []string) ([]string, error) {
	paths := make([]string, len(outputs))
	copy(paths, outputs)
	sort.Strings(paths)
	for i, p := range paths {
		if err := CheckOutputPath(p); err != nil {
			return nil, err
		}
		if i > 0 && paths[i-1] == p {
			return nil, fmt.Errorf("cache: output path %q declared twice", p)
		}
	}
	return paths, nil
}

// storedName is the name under files/ of the i'th output (in sorted path
// order).
func storedName(i int) string { return strconv.Itoa(i) }

// Lookup finds the entry for key. On a hit it restores every stored output
// file into dir and returns the entry's Result. Each file is verified
// against its sha256 while it is copied and written to a temporary file
// that is renamed into place only after every file has verified, so a
// damaged entry leaves dir untouched and a half-restored file never stands
// at an output path. A hit also marks the entry as recently used.
//
// A missing entry is (nil, false, nil). A damaged entry (unreadable or
// malformed entry.json, a self-digest mismatch, a missing, extra or altered
// stored file, a file set that differs from outputs) is removed and
// reported as (nil, false, *DamagedError). Other errors (an invalid key or
// output path, failure to write into dir) are returned as they are.
func (a *Actions) Lookup(key string, dir string, outputs []string) (*Result, bool, error) {
	if err := checkKey(key); err != nil {
		return nil, false, err
	}
	want, err := cleanOutputs(outputs)
	if err != nil {
		return nil, false, err
	}
	edir := a.entryDir(key)
	info, err := os.Stat(edir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cache: looking up entry: %w", err)
	}
	if !info.IsDir() {
		return a.damaged(key, edir, info, "not a directory", nil)
	}

	res, derr := readEntry(key, edir, want)
	if derr != nil {
		return a.damaged(key, edir, info, derr.Reason, derr.Err)
	}
	if err := restore(edir, dir, want, res.Files); err != nil {
		var d *DamagedError
		if errors.As(err, &d) {
			return a.damaged(key, edir, info, d.Reason, d.Err)
		}
		return nil, false, err
	}
	now := a.now()
	_ = os.Chtimes(edir, now, now) // best effort: only affects prune order
	return res, true, nil
}

// damaged removes a damaged entry and reports it. If the entry disappeared
// (or was replaced) while it was being read, a concurrent Prune or Lookup
// removed it: that is a plain miss, not damage.
func (a *Actions) damaged(key, edir string, seen os.FileInfo, reason string, err error) (*Result, bool, error) {
	if now, serr := os.Stat(edir); serr != nil || !os.SameFile(seen, now) {
		return nil, false, nil
	}
	d := &DamagedError{Key: key, Dir: edir, Reason: reason, Err: err}
	d.RemoveErr = a.removeEntry(edir)
	return nil, false, d
}

// removeEntry removes an entry directory so that readers never see it half
// deleted: it is first renamed to a temporary name in the root, then
// deleted. An entry that is already gone is not an error.
func (a *Actions) removeEntry(edir string) error {
	trash := filepath.Join(a.root, tempPrefix+"del-"+filepath.Base(edir)+"-"+canon.RandomHex(8))
	if err := os.Rename(edir, trash); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		// Could not move it aside (odd filesystem?): delete in place.
		if err := os.RemoveAll(edir); err != nil {
			return fmt.Errorf("cache: removing entry: %w", err)
		}
		return nil
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("cache: removing entry: %w", err)
	}
	return nil
}

// readEntry reads and verifies entry.json and the file listing of an entry.
// A non-nil *DamagedError says what is wrong with it.
func readEntry(key, edir string, want []string) (*Result, *DamagedError) {
	data, err := os.ReadFile(filepath.Join(edir, entryName))
	if err != nil {
		return nil, &DamagedError{Reason: "reading " + entryName, Err: err}
	}
	var e entry
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, &DamagedError{Reason: "malformed " + entryName, Err: err}
	}
	if dec.More() {
		return nil, &DamagedError{Reason: "malformed " + entryName + ": trailing data"}
	}
	if e.Schema != schemaV1 {
		return nil, &DamagedError{Reason: fmt.Sprintf("unknown schema %q (want %q)", e.Schema, schemaV1)}
	}
	if e.Key != key {
		return nil, &DamagedError{Reason: fmt.Sprintf("%s is for key %q", entryName, e.Key)}
	}
	sum, err := e.digest()
	if err != nil {
		return nil, &DamagedError{Reason: "malformed outputs in " + entryName, Err: err}
	}
	if sum != e.SHA256 {
		return nil, &DamagedError{Reason: fmt.Sprintf("%s self-digest mismatch (recorded %q, computed %s)", entryName, e.SHA256, sum)}
	}
	if _, err := time.Parse(time.RFC3339Nano, e.Created); err != nil {
		return nil, &DamagedError{Reason: "malformed created time in " + entryName, Err: err}
	}
	// Both want and the stored paths are sorted, so compare element-wise.
	have := slices.Sorted(maps.Keys(e.Files))
	if !equalStrings(have, want) {
		return nil, &DamagedError{Reason: fmt.Sprintf("entry holds files %q but the stage declares outputs %q", have, want)}
	}
	for _, p := range have {
		if !IsDigest(e.Files[p]) {
			return nil, &DamagedError{Reason: fmt.Sprintf("invalid sha256 %q for %s", e.Files[p], p)}
		}
	}
	// The files directory must hold exactly files 0..n-1.
	des, err := os.ReadDir(filepath.Join(edir, filesName))
	if err != nil && !(errors.Is(err, fs.ErrNotExist) && len(want) == 0) {
		return nil, &DamagedError{Reason: "reading stored files", Err: err}
	}
	if len(des) != len(want) {
		return nil, &DamagedError{Reason: canon.Count(len(des), "stored file") + " for " + canon.Count(len(want), "output")}
	}
	for _, de := range des {
		i, err := strconv.Atoi(de.Name())
		if err != nil || i < 0 || i >= len(want) || storedName(i) != de.Name() || !de.Type().IsRegular() {
			return nil, &DamagedError{Reason: fmt.Sprintf("unexpected stored file %s", filepath.Join(edir, filesName, de.Name()))}
		}
	}
	out, err := canonicalJSON(e.Outputs)
	if err != nil { // already checked by digest; keep the compiler honest
		return nil, &DamagedError{Reason: "malformed outputs in " + entryName, Err: err}
	}
	return &Result{Outputs: out, Files: e.Files, Inputs: e.Inputs}, nil
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// restore copies the entry's files into dir: first every file into a
// verified temporary file beside its destination, then (only if all
// verified) renames them into place. Verification failures are returned as
// *DamagedError.
func restore(edir, dir string, paths []string, files map[string]string) (err error) {
	temps := make([]*atomicfs.File, 0, len(paths))
	defer func() {
		for _, t := range temps {
			t.Abort() // nothing once committed
		}
	}()
	for i, p := range paths {
		src := filepath.Join(edir, filesName, storedName(i))
		dst := filepath.Join(dir, filepath.FromSlash(p))
		tmp, err := restoreFile(src, dst, p, files[p])
		if err != nil {
			return err
		}
		temps = append(temps, tmp)
	}
	for i, p := range paths {
		if err := temps[i].Commit(); err != nil {
			return fmt.Errorf("cache: restoring %s: %w", p, err)
		}
	}
	return nil
}

// restoreFile copies src to a temporary file next to dst, verifying that
// its contents hash to digest, and returns the temporary file, sealed.
func restoreFile(src, dst, p, digest string) (*atomicfs.File, error) {
	in, err := os.Open(src)
	if err != nil {
		return nil, &DamagedError{Reason: fmt.Sprintf("stored file for %s", p), Err: err}
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return nil, &DamagedError{Reason: fmt.Sprintf("stored file for %s", p), Err: err}
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o777); err != nil {
		return nil, fmt.Errorf("cache: restoring %s: %w", p, err)
	}
	out, err := atomicfs.Create(dst, info.Mode().Perm(), atomicfs.Options{Pattern: "." + filepath.Base(dst) + ".piship-*"})
	if err != nil {
		return nil, fmt.Errorf("cache: restoring %s: %w", p, err)
	}
	fail := func(err error) (*atomicfs.File, error) {
		out.Abort()
		return nil, err
	}
	h := sha256.New()
	if _, err := io.Copy(out, io.TeeReader(in, h)); err != nil {
		// Distinguish reading the entry from writing the destination.
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Path == src {
			return fail(&DamagedError{Reason: fmt.Sprintf("reading stored file for %s", p), Err: err})
		}
		return fail(fmt.Errorf("cache: restoring %s: %w", p, err))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != digest {
		return fail(&DamagedError{Reason: fmt.Sprintf("stored file %s for %s has sha256 %s, want %s", src, p, got, digest)})
	}
	if err := out.Seal(); err != nil {
		return nil, fmt.Errorf("cache: restoring %s: %w", p, err)
	}
	return out, nil
}

// Store writes a new entry for key holding the output files under dir and
// outputsJSON, and returns the Result it stored (with Files filled in).
//
// Every declared output must exist as a regular file (symbolic links are
// followed); a missing one is an error naming it. The entry is assembled
// in a temporary directory inside the root and renamed into place at
// <root>/<key[:2]>/<key>. If an entry already exists for key (a concurrent
// writer won), the existing one is kept and the temporary directory
// removed.
func (a *Actions) Store(key string, dir string, outputs []string, outputsJSON json.RawMessage) (res *Result, err error) {
	return a.StoreInputs(key, dir, outputs, outputsJSON, nil)
}

// StoreInputs is Store recording the named inputs of key in the entry, so
// a later miss of the same stage can say which of them changed.
func (a *Actions) StoreInputs(key string, dir string, outputs []string, outputsJSON json.RawMessage, inputs Inputs) (res *Result, err error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	paths, err := cleanOutputs(outputs)
	if err != nil {
		return nil, err
	}
	out, err := canonicalJSON(outputsJSON)
	if err != nil {
		return nil, fmt.Errorf("cache: storing entry %s: outputs are not valid JSON: %w", key, err)
	}
	if err := os.MkdirAll(a.root, 0o777); err != nil {
		return nil, fmt.Errorf("cache: creating cache directory: %w", err)
	}
	tmp, err := os.MkdirTemp(a.root, tempPrefix+key[:8]+"-")
	if err != nil {
		return nil, fmt.Errorf("cache: storing entry %s: %w", key, err)
	}
	defer func() {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Mkdir(filepath.Join(tmp, filesName), 0o777); err != nil {
		return nil, fmt.Errorf("cache: storing entry %s: %w", key, err)
	}

	files := make(map[string]string, len(paths))
	for i, p := range paths {
		src := filepath.Join(dir, filepath.FromSlash(p))
		digest, err := storeFile(src, filepath.Join(tmp, filesName, storedName(i)), p)
		if err != nil {
			return nil, err
		}
		files[p] = digest
	}

	e := entry{
		Schema:  schemaV1,
		Key:     key,
		Created: a.now().UTC().Format(time.RFC3339Nano),
		Outputs: out,
		Files:   files,
		Inputs:  inputs,
	}
	if e.SHA256, err = e.digest(); err != nil {
		return nil, fmt.Errorf("cache: storing entry %s: %w", key, err)
	}
	data, err := json.MarshalIndent(&e, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cache: storing entry %s: %w", key, err)
	}
	data = append(data, '\n')
	if err := os.WriteFile(filepath.Join(tmp, entryName), data, 0o666); err != nil {
		return nil, fmt.Errorf("cache: storing entry %s: %w", key, err)
	}

	res = &Result{Outputs: out, Files: files, Inputs: inputs}
	edir := a.entryDir(key)
	if err := os.MkdirAll(filepath.Dir(edir), 0o777); err != nil {
		return nil, fmt.Errorf("cache: storing entry %s: %w", key, err)
	}
	if err := os.Rename(tmp, edir); err != nil {
		if _, serr := os.Stat(edir); serr == nil {
			return res, nil // a concurrent writer won; keep its entry
		}
		return nil, fmt.Errorf("cache: storing entry %s: %w", key, err)
	}
	tmp = ""
	return res, nil
}

// storeFile copies the output file src (declared as p) to dst, keeping its
// permission bits, and returns the sha256 hex of what it copied.
func storeFile(src, dst, p string) (string, error) {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("cache: declared output %q was not produced by the stage: %s does not exist", p, src)
	}
	if err != nil {
		return "", fmt.Errorf("cache: reading output %s: %w", p, err)
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return "", fmt.Errorf("cache: reading output %s: %w", p, err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("cache: declared output %q (%s) is not a regular file (mode %s)", p, src, info.Mode())
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm()|0o600)
	if err != nil {
		return "", fmt.Errorf("cache: storing output %s: %w", p, err)
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), in); err != nil {
		out.Close()
		return "", fmt.Errorf("cache: storing output %s: %w", p, err)
	}
	if err := out.Close(); err != nil {
		return "", fmt.Errorf("cache: storing output %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
