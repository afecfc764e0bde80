// Package channel signs, fetches and verifies update channels: the
// documents that tell installations which releases of a distribution exist
// and let them update safely.
//
// A channel directory holds <channel>.json (Schema, piship-channel/v1:
// distribution, channel, sequence, expires, releases [{version, target,
// archive, sha256, bytes, lockSha256}] sorted by target then version),
// <channel>.json.sig ({"signatures": [{keyId, algorithm: "ed25519",
// signature}]}, one per signing key, each over the exact bytes of the
// document) and the release archives <id>-<version>-<target>.tar.gz with
// their .sha256 sidecars.
//
//   - Keys: GenerateKey, WritePrivateKey and ReadPrivateKey handle Ed25519
//     signing keys stored as PKCS#8 PEM with a Key-Id header, mode 0600;
//     PublicKeyBase64 and ParsePublicKey convert the public half to and
//     from the base64 SubjectPublicKeyInfo DER that distribution.hcl's
//     updates block trusts; Fingerprint names it "sha256:<hex>".
//   - Sign reads each release archive once (digest, size and release.json
//     from the stream, copying it beside the document as it goes), holds
//     release.json to the rules install reads it by (releasejson.Parse:
//     what install would refuse is not signed), merges
//     it into the existing channel, raises the sequence, sets the expiry,
//     and writes the document and its signatures.
//   - Source reads a channel directory: a local directory, a file:// URL,
//     or an https:// URL (http:// only to loopback by address: a literal
//     loopback IP, or localhost dialed as 127.0.0.1/::1 without a
//     resolver; the plain-http dialer refuses a non-loopback remote end);
//     redirects stay on the source's origin (at most MaxRedirects); 429
//     and 5xx answers are retried; documents are bounded by
//     MaxDocumentBytes and archives by their signed size, and Download and
//     OpenVerified check the signed size and SHA-256 while the bytes
//     stream. Limits (DefaultLimits; ParseLimits reads update's --timeout
//     and --max-time) put a connect, header and idle timeout and an
//     overall budget on every request: one that fires is UPDATE_FAILED
//     with ReasonTimeout, naming the limit, the URL and the flag to raise.
//   - Verify checks a document against a Trust (the distribution id, its
//     keys by id and a threshold, as the distribution's lock records them)
//     and the installation's replay floor: signatures by at least
//     Threshold distinct trusted keys over the exact bytes, then the
//     schema, distribution, channel name, expiry (one fixed now per
//     attempt) and sequence. Channel.Newest picks the highest version for
//     a target and CheckUpgrade refuses a downgrade.
//
// Errors are *Error: Code is what users see (CONFIG_INVALID,
// UPDATE_FAILED, NETWORK_DENIED, INTEGRITY_FAILED) and Reason says which
// check refused.
package channel
