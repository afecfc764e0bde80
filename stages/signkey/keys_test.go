package signkey

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"piship.dev/piship/stages/stage/errcode"
)

func TestKeyRoundTrip(t *testing.T) {
	priv, err := GenerateKey("release-2026")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "keys", "release.pem")
	if err := WritePrivateKey(p, "release-2026", priv, false); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v, want 0600", fi.Mode().Perm())
		}
	}
	text := string(readTestFile(t, p))
	if !strings.HasPrefix(text, "-----BEGIN PRIVATE KEY-----\nKey-Id: release-2026\n") {
		t.Errorf("not a PKCS#8 PEM with a Key-Id header:\n%s", text)
	}
	id, back, err := ReadPrivateKey(p)
	if err != nil {
		t.Fatal(err)
	}
	if id != "release-2026" || !back.Equal(priv) {
		t.Errorf("read back %q, another key", id)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}

	// Never overwritten silently.
	other, _ := GenerateKey("other")
	err = WritePrivateKey(p, "other", other, false)
	wantErr(t, err, errcode.ConfigInvalid, "already exists", "--force")
	if _, k, _ := ReadPrivateKey(p); !k.Equal(priv) {
		t.Fatal("a refused write changed the key")
	}
	if err := WritePrivateKey(p, "other", other, true); err != nil {
		t.Fatal(err)
	}
	if id, k, _ := ReadPrivateKey(p); id != "other" || !k.Equal(other) {
		t.Error("--force did not replace the key")
	}

	// The public half.
	pub := priv.Public().(ed25519.PublicKey)
	b64 := PublicKeyBase64(pub)
	got, err := ParsePublicKey(" " + b64 + "\n")
	if err != nil || !got.Equal(pub) {
		t.Errorf("ParsePublicKey(PublicKeyBase64) = %v", err)
	}
	der, _ := base64.StdEncoding.DecodeString(b64)
	if len(der) != 44 {
		t.Errorf("SPKI DER is %d bytes", len(der))
	}
	if fp := Fingerprint(pub); !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(fp) || fp == Fingerprint(other.Public().(ed25519.PublicKey)) {
		t.Errorf("fingerprint %q", fp)
	}
}

func TestKeyRefusals(t *testing.T) {
	if _, err := GenerateKey("bad id"); err == nil {
		t.Error("a key id with a space")
	}
	dir := t.TempDir()
	priv, _ := GenerateKey("k")
	if err := WritePrivateKey(filepath.Join(dir, "x.pem"), "", priv, false); err == nil {
		t.Error("an empty key id")
	}

	// No Key-Id header.
	noID := filepath.Join(dir, "noid.pem")
	if err := WritePrivateKey(noID, "k", priv, false); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, noID, strings.Replace(string(readTestFile(t, noID)), "Key-Id: k\n", "", 1))
	_, _, err := ReadPrivateKey(noID)
	wantErr(t, err, errcode.ConfigInvalid, "no Key-Id")

	// Another kind of key.
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	_, err = ParsePublicKey(base64.StdEncoding.EncodeToString(der))
	wantErr(t, err, errcode.ConfigInvalid, "ECDSA", "Ed25519")

	for in, frag := range map[string]string{
		"not base64!": "not standard base64",
		base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)): "raw 32-byte",
		"-----BEGIN PUBLIC KEY-----\nMCow\n-----END PUBLIC KEY-----":         "PEM",
		base64.StdEncoding.EncodeToString([]byte("hello")):                   "not the base64 of a SubjectPublicKeyInfo",
	} {
		_, err := ParsePublicKey(in)
		wantErr(t, err, errcode.ConfigInvalid, frag)
	}

	pk8, _ := x509.MarshalPKCS8PrivateKey(ec)
	ecPath := filepath.Join(dir, "ec.pem")
	writeTestFile(t, ecPath, "-----BEGIN PRIVATE KEY-----\nKey-Id: k\n\n"+base64.StdEncoding.EncodeToString(pk8)+"\n-----END PRIVATE KEY-----\n")
	_, _, err = ReadPrivateKey(ecPath)
	wantErr(t, err, errcode.ConfigInvalid, "Ed25519")
}
