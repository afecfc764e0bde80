// Package oci is piship's client of OCI registries (the distribution API
// that GHCR, ECR, Harbor, Docker Hub and Artifactory serve), on
// oras.land/oras-go/v2: where a CI fleet keeps its shared cache and its
// per-target release artifacts, in a store the team already runs.
//
// A registry is named oci://host[:port]/repository (ParseRef). Open gives a
// Repo whose every request goes through the run's Budget: 5 s to connect,
// 30 s per request, 60 s in all per run for a cache (a release's transfer,
// which moves archives, has TransferBudget: 10 and 30 minutes); the first failure that is not a
// plain "not found" (a refused connection, a timeout, a 5xx) marks the
// registry down for the rest of the run after one warning, so a registry
// that is down or slow costs a run at most that and the run goes on
// without it. Credentials come from the Docker config file and its
// credential helpers ($DOCKER_CONFIG/config.json or ~/.docker/config.json),
// as docker login and oras login write them. Loopback hosts (localhost,
// 127.0.0.0/8, ::1) are spoken to over plain HTTP, as docker and oras do;
// every other host over HTTPS.
//
// Manifests are written by this package, byte for byte (no creation time),
// so the same content gives the same manifest digest on every machine.
// Every blob read is checked against the digest and size its descriptor
// names while it streams (FetchTo, FetchBytes, FetchStream); a registry is
// storage, never trusted for content.
//
// What piship keeps there: cache entries (the remote cache, see
// cache.Remote and stages/remotecache) and release targets (release.go:
// one artifact per target, an index per version).
package oci
