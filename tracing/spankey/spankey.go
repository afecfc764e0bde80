// Package spankey holds the span attribute keys that kinds and domain
// packages write on their own spans (smoke tests, the content store's
// lookup). It is a leaf: code that writes spans through the OpenTelemetry
// API and tracing/phase does not link package tracing and its exporters
// (engine/layering_test.go, TestKindsDoNotLinkTheExporters). Package
// tracing re-exports each key as its Attr* constant, which everything else
// uses; docs/tracing.md has the table.
package spankey

const (
	// Verdict is an outcome: passed, failed, cancelled, skipped, not started.
	Verdict = "piship.verdict"
	// ExitCode is the run's exit code on the root span, and a smoke
	// test's program's exit code on its span.
	ExitCode = "piship.exit_code"
	// SmokeArgs is a smoke test's argument list.
	SmokeArgs = "piship.smoke.args"
	// CacheName names the cache a "cache lookup" span looked in:
	// "action", "runtime", "bundle" or "store".
	CacheName = "piship.cache.name"
	// CacheKey is a cache key: the stage's, or the one a lookup used.
	CacheKey = "piship.cache.key"
	// CacheHit (bool) says whether a lookup (or its stage) was served
	// from cache. A stage that is not cacheable has no such attribute.
	CacheHit = "piship.cache.hit"
	// CacheMissReason says why a lookup (and its stage) missed: what
	// differs from the newest entry the stage used (cache.MissReason).
	CacheMissReason = "piship.cache.miss_reason"
	// CacheRemote says what the remote cache gave a lookup that missed
	// locally: "remote hit" or "remote miss: WHY" (--remote-cache).
	CacheRemote = "piship.cache.remote"
	// CacheLookupSpanName names a cache lookup's span, a child of its
	// stage's span.
	CacheLookupSpanName = "cache lookup"
)
