// Package v1 declares the two enums of sigstore's protobuf-specs common/v1
// (v0.5.0) that sigstore's signature package uses, without protobuf: see
// the module's README.md for why piship replaces the generated package.
package v1

import "strconv"

// HashAlgorithm is sigstore_common.proto's HashAlgorithm.
type HashAlgorithm int32

// The values of HashAlgorithm.
const (
	HashAlgorithm_HASH_ALGORITHM_UNSPECIFIED HashAlgorithm = 0
	HashAlgorithm_SHA2_256                   HashAlgorithm = 1
	HashAlgorithm_SHA2_384                   HashAlgorithm = 2
	HashAlgorithm_SHA2_512                   HashAlgorithm = 3
	HashAlgorithm_SHA3_256                   HashAlgorithm = 4
	HashAlgorithm_SHA3_384                   HashAlgorithm = 5
)

// HashAlgorithm_name names each value, as the generated code does.
var HashAlgorithm_name = map[int32]string{
	0: "HASH_ALGORITHM_UNSPECIFIED",
	1: "SHA2_256",
	2: "SHA2_384",
	3: "SHA2_512",
	4: "SHA3_256",
	5: "SHA3_384",
}

func (x HashAlgorithm) String() string { return enumName(HashAlgorithm_name, int32(x)) }

// PublicKeyDetails is sigstore_common.proto's PublicKeyDetails: a key's
// encoding and signature algorithm in one value.
type PublicKeyDetails int32

// The values of PublicKeyDetails (the deprecated ones too: sigstore's
// registry names some of them).
const (
	PublicKeyDetails_PUBLIC_KEY_DETAILS_UNSPECIFIED PublicKeyDetails = 0
	PublicKeyDetails_PKCS1_RSA_PKCS1V5              PublicKeyDetails = 1
	PublicKeyDetails_PKCS1_RSA_PSS                  PublicKeyDetails = 2
	PublicKeyDetails_PKIX_RSA_PKCS1V5               PublicKeyDetails = 3
	PublicKeyDetails_PKIX_RSA_PSS                   PublicKeyDetails = 4
	PublicKeyDetails_PKIX_RSA_PKCS1V15_2048_SHA256  PublicKeyDetails = 9
	PublicKeyDetails_PKIX_RSA_PKCS1V15_3072_SHA256  PublicKeyDetails = 10
	PublicKeyDetails_PKIX_RSA_PKCS1V15_4096_SHA256  PublicKeyDetails = 11
	PublicKeyDetails_PKIX_RSA_PSS_2048_SHA256       PublicKeyDetails = 16
	PublicKeyDetails_PKIX_RSA_PSS_3072_SHA256       PublicKeyDetails = 17
	PublicKeyDetails_PKIX_RSA_PSS_4096_SHA256       PublicKeyDetails = 18
	PublicKeyDetails_PKIX_ECDSA_P256_HMAC_SHA_256   PublicKeyDetails = 6
	PublicKeyDetails_PKIX_ECDSA_P256_SHA_256        PublicKeyDetails = 5
	PublicKeyDetails_PKIX_ECDSA_P384_SHA_384        PublicKeyDetails = 12
	PublicKeyDetails_PKIX_ECDSA_P521_SHA_512        PublicKeyDetails = 13
	PublicKeyDetails_PKIX_ED25519                   PublicKeyDetails = 7
	PublicKeyDetails_PKIX_ED25519_PH                PublicKeyDetails = 8
	PublicKeyDetails_PKIX_ECDSA_P384_SHA_256        PublicKeyDetails = 19
	PublicKeyDetails_PKIX_ECDSA_P521_SHA_256        PublicKeyDetails = 20
	PublicKeyDetails_LMS_SHA256                     PublicKeyDetails = 14
	PublicKeyDetails_LMOTS_SHA256                   PublicKeyDetails = 15
	PublicKeyDetails_ML_DSA_65                      PublicKeyDetails = 21
	PublicKeyDetails_ML_DSA_87                      PublicKeyDetails = 22
)

// PublicKeyDetails_name names each value, as the generated code does.
var PublicKeyDetails_name = map[int32]string{
	0:  "PUBLIC_KEY_DETAILS_UNSPECIFIED",
	1:  "PKCS1_RSA_PKCS1V5",
	2:  "PKCS1_RSA_PSS",
	3:  "PKIX_RSA_PKCS1V5",
	4:  "PKIX_RSA_PSS",
	9:  "PKIX_RSA_PKCS1V15_2048_SHA256",
	10: "PKIX_RSA_PKCS1V15_3072_SHA256",
	11: "PKIX_RSA_PKCS1V15_4096_SHA256",
	16: "PKIX_RSA_PSS_2048_SHA256",
	17: "PKIX_RSA_PSS_3072_SHA256",
	18: "PKIX_RSA_PSS_4096_SHA256",
	6:  "PKIX_ECDSA_P256_HMAC_SHA_256",
	5:  "PKIX_ECDSA_P256_SHA_256",
	12: "PKIX_ECDSA_P384_SHA_384",
	13: "PKIX_ECDSA_P521_SHA_512",
	7:  "PKIX_ED25519",
	8:  "PKIX_ED25519_PH",
	19: "PKIX_ECDSA_P384_SHA_256",
	20: "PKIX_ECDSA_P521_SHA_256",
	14: "LMS_SHA256",
	15: "LMOTS_SHA256",
	21: "ML_DSA_65",
	22: "ML_DSA_87",
}

func (x PublicKeyDetails) String() string { return enumName(PublicKeyDetails_name, int32(x)) }

// enumName is the value's name, or its number for one the spec does not
// have, as protobuf prints an unknown enum value.
func enumName(names map[int32]string, v int32) string {
	if n, ok := names[v]; ok {
		return n
	}
	return strconv.Itoa(int(v))
}
