package signkey

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/stage/errcode"
)

// PEM block type and header of a private key file.
const (
	pemType     = "PRIVATE KEY"
	pemKeyIDHdr = "Key-Id"
)

var keyIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })

// CheckKeyID returns "" or what is wrong with a key id, as a sentence. A
// key id is 1-64 letters, digits, '.', '_' and '-', starting with a letter
// or digit: it names the key in distribution.hcl, in signature files and in
// messages.
func CheckKeyID(id string) string {
	switch {
	case id == "":
		return "a key id cannot be empty."
	case len(id) > 64:
		return "a key id is at most 64 characters."
	case !keyIDRE().MatchString(id):
		return "a key id holds letters, digits, '.', '_' and '-', starting with a letter or digit, e.g. \"release-2026\"."
	}
	return ""
}

// GenerateKey makes a new Ed25519 signing key for the key id.
func GenerateKey(id string) (ed25519.PrivateKey, error) {
	if msg := CheckKeyID(id); msg != "" {
		return nil, configErr("key id %q: %s", id, msg)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, configErr("cannot generate a key: %v", err)
	}
	return priv, nil
}

// WritePrivateKey writes priv to path as PKCS#8 PEM ("PRIVATE KEY") with
// the key id in a "Key-Id" PEM header, mode 0600, through a flushed
// temporary sibling and a rename, so path never holds half a key. An
// existing file is refused (CONFIG_INVALID) unless force: without force the
// file is put in place with a hard link, which fails rather than replace a
// file created meanwhile.
//
// OpenSSL refuses PEM headers other than Proc-Type; to read the key with
// it, delete the Key-Id line.
func WritePrivateKey(path, id string, priv ed25519.PrivateKey, force bool) error {
	if msg := CheckKeyID(id); msg != "" {
		return configErr("key id %q: %s", id, msg)
	}
	if len(priv) != ed25519.PrivateKeySize {
		return configErr("not an Ed25519 private key (%d bytes)", len(priv))
	}
	if !force {
		if _, err := os.Lstat(path); err == nil {
			return existsErr(path)
		}
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return configErr("cannot encode the key: %v", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: pemType, Headers: map[string]string{pemKeyIDHdr: id}, Bytes: der})
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return configErr("cannot write %s: %v", path, err)
	}
	tmp, err := atomicfs.Create(path, 0o600, atomicfs.Options{Sync: true})
	if err != nil {
		return configErr("cannot write %s: %v", path, err)
	}
	defer tmp.Abort() // nothing once committed
	name := tmp.Name()
	if _, err = tmp.Write(data); err == nil {
		err = tmp.Seal()
	}
	if err != nil {
		return configErr("cannot write %s: %v", path, err)
	}
	if !force {
		err := os.Link(name, path)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, fs.ErrExist):
			return existsErr(path)
		}
		// No hard links here: fall back to check-then-rename.
		if _, err := os.Lstat(path); err == nil {
			return existsErr(path)
		}
	}
	if err := tmp.Commit(); err != nil {
		return configErr("cannot write %s: %v", path, err)
	}
	return nil
}

func existsErr(path string) error {
	return configErr("%s already exists; a signing key is never replaced silently (the old key could no longer sign, and installs trusting only it would refuse new channels): choose another path, or use --force to replace it", path)
}

// ReadPrivateKey reads a key written by WritePrivateKey: its id (the
// Key-Id header) and the Ed25519 private key.
func ReadPrivateKey(path string) (string, ed25519.PrivateKey, error) {
	data, err := atomicfs.ReadRegular(path, 0)
	if err != nil {
		return "", nil, configErr("cannot read the signing key %s: %v", path, err)
	}
	blk, rest := pem.Decode(data)
	switch {
	case blk == nil:
		return "", nil, configErr("%s is not a PEM file: a signing key is the PKCS#8 PEM that piship keygen writes", path)
	case blk.Type != pemType:
		return "", nil, configErr("%s holds a %q PEM block, not %q (PKCS#8): piship keygen writes the right kind", path, blk.Type, pemType)
	case len(bytes.TrimSpace(rest)) != 0:
		return "", nil, configErr("%s holds more than one PEM block", path)
	}
	key, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return "", nil, configErr("%s is not a PKCS#8 private key: %v", path, err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return "", nil, configErr("%s holds %s key; channels are signed with Ed25519 keys (piship keygen)", path, keyKind(key))
	}
	id := blk.Headers[pemKeyIDHdr]
	if id == "" {
		return "", nil, configErr("%s has no %s PEM header naming the key: add a line \"%s: <id>\" after the BEGIN line, with the id distribution.hcl trusts", path, pemKeyIDHdr, pemKeyIDHdr)
	}
	if msg := CheckKeyID(id); msg != "" {
		return "", nil, configErr("%s: key id %q: %s", path, id, msg)
	}
	return id, priv, nil
}

func spki(pub ed25519.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		panic(fmt.Sprintf("signkey: marshal an Ed25519 public key: %v", err)) // only for a wrong length
	}
	return der
}

// PublicKeyBase64 is the standard base64 of pub's SubjectPublicKeyInfo DER:
// what piship keygen prints beside the key file.
func PublicKeyBase64(pub ed25519.PublicKey) string {
	return base64.StdEncoding.EncodeToString(spki(pub))
}

// Fingerprint is "sha256:" and the lowercase hex SHA-256 of pub's
// SubjectPublicKeyInfo DER.
func Fingerprint(pub ed25519.PublicKey) string {
	return "sha256:" + canon.SHA256Hex(spki(pub))
}

// ParsePublicKey reads the standard base64 of an Ed25519 public key's
// SubjectPublicKeyInfo DER (what PublicKeyBase64 writes and
// `openssl pkey -pubout -outform DER | base64` prints). Errors are
// CONFIG_INVALID and say what the value is instead.
func ParsePublicKey(b64 string) (ed25519.PublicKey, error) {
	s := strings.TrimSpace(b64)
	if strings.HasPrefix(s, "-----BEGIN") {
		return nil, configErr("this is PEM: write only the base64 between the BEGIN and END lines, joined into one line")
	}
	der, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, configErr("not standard base64 (%v): write the base64 of the key's SubjectPublicKeyInfo DER, as piship keygen prints it", err)
	}
	if len(der) == ed25519.PublicKeySize {
		return nil, configErr("this is a raw 32-byte Ed25519 key; write the base64 of its SubjectPublicKeyInfo DER (44 bytes), as piship keygen prints it")
	}
	key, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, configErr("not the base64 of a SubjectPublicKeyInfo DER public key")
	}
	pub, ok := key.(ed25519.PublicKey)
	if !ok {
		return nil, configErr("this is %s key; channels are signed with Ed25519 keys only", keyKind(key))
	}
	return pub, nil
}

func keyKind(key any) string {
	t := fmt.Sprintf("%T", key)
	switch {
	case strings.Contains(t, "rsa"):
		return "an RSA"
	case strings.Contains(t, "ecdsa"):
		return "an ECDSA"
	case strings.Contains(t, "ecdh"):
		return "an X25519 (ECDH)"
	}
	return "a " + t
}

// configErr is a refusal of a key or a key file: a usage error.
func configErr(format string, args ...any) error {
	return errcode.Newf(errcode.ConfigInvalid, format, args...)
}
