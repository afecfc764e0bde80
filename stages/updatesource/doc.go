// Package updatesource is the network layer the TUF client and repository
// (package tuf) read through: the update Source with its limits, channel
// names and the upgrade rule. It was package channel, named after the
// piship-channel/v1 documents that TUF repositories replaced (issue 16);
// the signing key files it also held are package signkey.
//
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
//   - OpenBlob reads a release archive an OCI registry serves (a TUF
//     target's registryBlob) with plain GETs of the distribution API: the
//     registry's anonymous token step (a 401 Bearer challenge answered
//     from its realm), redirects to its storage over https only, and the
//     same limits, loopback rule and streamed checks (registry.go).
//   - CheckName is the rule of channel names, CheckUpgrade refuses a
//     downgrade (install checks it again under its lock).
//
// Errors are *Error: Code is what users see (CONFIG_INVALID,
// UPDATE_FAILED, NETWORK_DENIED, INTEGRITY_FAILED) and Reason says which
// check refused.
package updatesource
