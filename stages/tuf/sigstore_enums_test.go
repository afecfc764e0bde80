package tuf

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	v1 "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore/pkg/signature"
)

// TestSigstoreEnumsMatchTheSpec holds go.mod's replacement of sigstore's
// protobuf-specs (stages/tuf/protobufspecs: two enums without protobuf) to
// sigstore_common.proto: every value sigstore's registry uses has the
// spec's number and name, and the registry still resolves the keys piship
// signs and verifies with.
func TestSigstoreEnumsMatchTheSpec(t *testing.T) {
	for _, c := range []enumValue[v1.PublicKeyDetails]{
		{v1.PublicKeyDetails_PUBLIC_KEY_DETAILS_UNSPECIFIED, 0, "PUBLIC_KEY_DETAILS_UNSPECIFIED"},
		{v1.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256, 5, "PKIX_ECDSA_P256_SHA_256"},
		{v1.PublicKeyDetails_PKIX_ED25519, 7, "PKIX_ED25519"},
		{v1.PublicKeyDetails_PKIX_ED25519_PH, 8, "PKIX_ED25519_PH"},
		{v1.PublicKeyDetails_PKIX_RSA_PKCS1V15_2048_SHA256, 9, "PKIX_RSA_PKCS1V15_2048_SHA256"},
		{v1.PublicKeyDetails_PKIX_RSA_PKCS1V15_4096_SHA256, 11, "PKIX_RSA_PKCS1V15_4096_SHA256"},
		{v1.PublicKeyDetails_PKIX_ECDSA_P384_SHA_384, 12, "PKIX_ECDSA_P384_SHA_384"},
		{v1.PublicKeyDetails_PKIX_ECDSA_P521_SHA_512, 13, "PKIX_ECDSA_P521_SHA_512"},
		{v1.PublicKeyDetails_PKIX_RSA_PSS_2048_SHA256, 16, "PKIX_RSA_PSS_2048_SHA256"},
		{v1.PublicKeyDetails_PKIX_RSA_PSS_4096_SHA256, 18, "PKIX_RSA_PSS_4096_SHA256"},
		{v1.PublicKeyDetails_PKIX_ECDSA_P384_SHA_256, 19, "PKIX_ECDSA_P384_SHA_256"},
		{v1.PublicKeyDetails_PKIX_ECDSA_P521_SHA_256, 20, "PKIX_ECDSA_P521_SHA_256"},
		{v1.PublicKeyDetails(99), 99, "99"},
	} {
		c.check(t)
	}
	for _, c := range []enumValue[v1.HashAlgorithm]{
		{v1.HashAlgorithm_SHA2_256, 1, "SHA2_256"},
		{v1.HashAlgorithm_SHA2_384, 2, "SHA2_384"},
		{v1.HashAlgorithm_SHA2_512, 3, "SHA2_512"},
	} {
		c.check(t)
	}

	edPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		key  any
		want v1.PublicKeyDetails
		flag string
	}{
		{edPub, v1.PublicKeyDetails_PKIX_ED25519, "ed25519"},
		{&ecKey.PublicKey, v1.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256, "ecdsa-sha2-256-nistp256"},
	} {
		d, err := signature.GetDefaultPublicKeyDetails(k.key)
		if err != nil || d != k.want {
			t.Errorf("sigstore's registry gives %T %v (%v), want %v", k.key, d, err, k.want)
			continue
		}
		if flag, err := signature.FormatSignatureAlgorithmFlag(d); err != nil || flag != k.flag {
			t.Errorf("%v's flag is %q (%v), want %q", d, flag, err, k.flag)
		}
		if _, err := signature.GetAlgorithmDetails(d); err != nil {
			t.Errorf("sigstore's registry has no details for %v: %v", d, err)
		}
	}
}

// enumValue is one value of a protobuf-specs enum as the shim declares it
// (got) and as sigstore_common.proto numbers and names it.
type enumValue[E interface {
	~int32
	String() string
}] struct {
	got  E
	num  int32
	name string
}

func (c enumValue[E]) check(t *testing.T) {
	t.Helper()
	if int32(c.got) != c.num || c.got.String() != c.name {
		t.Errorf("%T %d %q, want %d %q (sigstore_common.proto)", c.got, int32(c.got), c.got.String(), c.num, c.name)
	}
}
