package oci

import (
	"fmt"
	"net"
	"strings"

	"oras.land/oras-go/v2/registry"

	"piship.dev/piship/stages/stage/errcode"
)

// Scheme is the prefix of a registry reference on piship's command line.
const Scheme = "oci://"

// Ref names a repository in a registry: oci://host[:port]/repository.
type Ref struct {
	// Host is the registry's host[:port].
	Host string
	// Repository is the repository's path in the registry (lower case,
	// slash-separated).
	Repository string
}

// String returns the reference as the command line spells it.
func (r Ref) String() string { return Scheme + r.Host + "/" + r.Repository }

// IsRef reports whether s is meant as a registry reference (starts with
// oci://).
func IsRef(s string) bool { return strings.HasPrefix(s, Scheme) }

// ParseRef parses oci://host[:port]/repository. A tag or digest is refused:
// piship names its own artifacts inside the repository.
func ParseRef(s string) (Ref, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return Ref{}, errcode.Newf(errcode.ConfigInvalid, "%q is not a registry reference: write oci://host[:port]/repository (for example oci://ghcr.io/acme/piship-cache)", s)
	}
	host, repo, ok := strings.Cut(rest, "/")
	if !ok || host == "" || repo == "" {
		return Ref{}, errcode.Newf(errcode.ConfigInvalid, "%q names no repository: write oci://host[:port]/repository (for example oci://ghcr.io/acme/piship-cache)", s)
	}
	if strings.ContainsAny(repo, ":@") {
		return Ref{}, errcode.Newf(errcode.ConfigInvalid, "%q names a tag or digest: give only oci://host[:port]/repository; piship tags its artifacts itself", s)
	}
	r := registry.Reference{Registry: host, Repository: repo}
	if err := r.ValidateRegistry(); err != nil {
		return Ref{}, errcode.Newf(errcode.ConfigInvalid, "%q: the registry host %q is not valid: %v", s, host, err)
	}
	if err := r.ValidateRepository(); err != nil {
		return Ref{}, errcode.Newf(errcode.ConfigInvalid, "%q: the repository %q is not valid (lower case letters, digits, and . _ - / between them): %v", s, repo, err)
	}
	return Ref{Host: host, Repository: repo}, nil
}

// loopback reports whether host[:port] is this machine, which registries
// (and docker and oras) serve over plain HTTP.
func loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// checkTag refuses a tag the distribution API would refuse, before any
// request is made.
func checkTag(tag string) error {
	if !validTag(tag) {
		return fmt.Errorf("oci: %q is not a valid tag", tag)
	}
	return nil
}

func validTag(tag string) bool {
	if tag == "" || len(tag) > 128 {
		return false
	}
	for i, c := range tag {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		case (c == '.' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}
