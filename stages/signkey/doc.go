// Package signkey holds the Ed25519 signing key files `piship keygen`
// writes and the TUF repository (package tuf) signs with. They were part
// of package channel (now updatesource); keys have nothing of the network
// in them, so they stand apart.
//
// GenerateKey, WritePrivateKey and ReadPrivateKey handle Ed25519 signing
// keys stored as PKCS#8 PEM with a Key-Id header, mode 0600;
// PublicKeyBase64 and ParsePublicKey convert the public half to and from
// the base64 SubjectPublicKeyInfo DER; Fingerprint names it
// "sha256:<hex>"; CheckKeyID is the rule of key ids.
//
// Errors are CONFIG_INVALID (*errcode.Error), with the messages package
// channel gave them.
package signkey
