// Package canon holds the canonical forms piship writes and compares: JSON
// encoded one way only (two-space indentation, no HTML escaping, a
// trailing newline; encoding/json sorts map keys), and the lowercase hex
// SHA-256 of bytes; ReadJSON, the one way piship reads a JSON file back;
// and RandomHex, the random part of the names piship sets things aside
// under. It imports only the standard library, so the cache
// and the launcher's receipt package can use it as well as the stages.
package canon

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
)

// JSON encodes v with two-space indentation, without HTML escaping and
// with a trailing newline: the same value always gives the same bytes.
func JSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// RandomHex is n random bytes in lowercase hex: the part of a temporary
// or set-aside name that keeps two writers' names apart.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand since Go 1.24)
	return hex.EncodeToString(b)
}

// SHA256Hex is the lowercase hex SHA-256 of b.
func SHA256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// IsSHA256Hex reports whether s is a SHA-256 as SHA256Hex writes it: 64
// lowercase hex digits. Every digest piship reads from a file, a flag or a
// manifest is held to it here.
func IsSHA256Hex(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ReadJSON decodes the JSON file at path into v.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
