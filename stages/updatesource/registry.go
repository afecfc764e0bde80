package updatesource

// Registry blobs: a release archive a publisher serves from an OCI registry
// (piship publish, then repo add --registry) is fetched with plain GETs of
// the distribution API, GET /v2/<repository>/blobs/sha256:<hex>, not with
// an OCI client library: the end-user installer links none. A registry
// that wants a token for anonymous pulls (GHCR, Docker Hub, Harbor) answers
// 401 with `WWW-Authenticate: Bearer realm="...",service="...",scope="..."`;
// the realm is asked for an anonymous token with that service and scope,
// and the blob asked again with `Authorization: Bearer <token>`, as
// Homebrew does with GHCR. Registries answer a blob GET with a redirect to
// their storage (S3, a CDN) on another host: those redirects are followed
// over https (Go's client does not send the token to another host), plain
// http only on the registry's own loopback origin. Nothing the registry
// says is trusted: the size and sha256 the caller passes to Download are
// the signed ones, checked while the bytes stream, and the limits are
// every Source's.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// maxTokenBytes bounds a token answer (GHCR's are under 2 KiB).
const maxTokenBytes = 64 << 10

var blobPathRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^/v2/([a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)/blobs/sha256:([0-9a-f]{64})$`)
})

// ParseBlobURL checks that s is the distribution API address of a blob,
// https://host[:port]/v2/<repository>/blobs/sha256:<hex> (http:// only to
// a loopback host), and returns the blob's sha256 hex.
func ParseBlobURL(s string) (string, error) {
	_, sum, err := parseBlobURL(s)
	return sum, err
}

// BlobRepository names the registry repository a blob URL ParseBlobURL
// accepts is in, host/repository, as messages say it ("" for another URL).
func BlobRepository(s string) string {
	repo, _, err := parseBlobURL(s)
	if err != nil {
		return ""
	}
	return repo
}

// parseBlobURL is ParseBlobURL, also returning host/repository.
func parseBlobURL(s string) (repo, sum string, err error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", "", configErr("registry blob %q is not a URL: %v", s, err)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return "", "", configErr("registry blob %s: the scheme %q is not https", s, u.Scheme)
	case u.Hostname() == "":
		return "", "", configErr("registry blob %s: the URL has no host", s)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || u.RawPath != "":
		return "", "", configErr("registry blob %s: a blob URL has no credentials, query, fragment or escapes", redact(u))
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return "", "", newErr(CodeNetworkDenied, ReasonPolicy, "registry blob %s: plain http to %s is refused; only loopback hosts may be reached without TLS", s, u.Hostname())
	}
	m := blobPathRE().FindStringSubmatch(u.Path)
	if m == nil {
		return "", "", configErr("registry blob %s: the path is not /v2/<repository>/blobs/sha256:<64 hex>", s)
	}
	return u.Host + "/" + m[1], m[2], nil
}

// OpenBlob returns the Source that fetches the registry blob at blobURL
// (ParseBlobURL) and the name to give its Download or OpenVerified, with
// o's client, limits and dialer, the plain-http rule, the registry's
// redirect policy and its anonymous token step.
func OpenBlob(blobURL string, o SourceOptions) (*Source, string, error) {
	sum, err := ParseBlobURL(blobURL)
	if err != nil {
		return nil, "", err
	}
	dir := strings.TrimSuffix(blobURL, "sha256:"+sum)
	s, err := openURL(dir, o)
	if err != nil {
		return nil, "", err
	}
	s.blob = "sha256:" + sum
	s.shown = blobURL
	s.client.CheckRedirect = s.registryRedirect
	return s, s.blob, nil
}

// registryRedirect is the redirect policy of a registry blob: at most
// MaxRedirects, to https anywhere (a registry's storage), plain http only
// to the blob's own origin (a loopback registry).
func (s *Source) registryRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return newErr(CodeNetworkDenied, ReasonPolicy, "%s: more than %d redirects", via[0].URL.Redacted(), MaxRedirects)
	}
	if req.URL.Scheme != "https" && !sameOrigin(req.URL, s.base) {
		return newErr(CodeNetworkDenied, ReasonPolicy, "%s redirects to %s: a registry blob's storage is reached over https only",
			via[len(via)-1].URL.Redacted(), req.URL.Redacted())
	}
	return nil
}

// challenge reads a `WWW-Authenticate: Bearer k="v",...` header.
func challenge(h string) (map[string]string, bool) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	if !strings.EqualFold(scheme, "bearer") {
		return nil, false
	}
	params := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ",")) {
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			return nil, false
		}
		k = strings.ToLower(strings.TrimSpace(k))
		if strings.HasPrefix(v, `"`) {
			end := strings.IndexByte(v[1:], '"')
			if end < 0 {
				return nil, false
			}
			params[k], rest = v[1:1+end], v[2+end:]
		} else {
			val, tail, _ := strings.Cut(v, ",")
			params[k], rest = strings.TrimSpace(val), tail
		}
	}
	return params, params["realm"] != ""
}

// token asks the realm a registry's 401 named (header, for loc) for an
// anonymous token, under f's limits: GET realm?service=...&scope=...,
// whose JSON answer holds "token" (or "access_token", the OAuth2 name).
// The realm is reached over https, or plain http on the blob's own
// loopback origin.
func (s *Source) token(ctx context.Context, f *fetch, header, loc string) (string, error) {
	params, ok := challenge(header)
	if !ok {
		return "", updateErr(ReasonFetch, "%s answered 401 Unauthorized without a Bearer challenge (WWW-Authenticate: %q): the registry does not serve this blob anonymously; ask the publisher to make the package public", loc, header)
	}
	realm, err := url.Parse(params["realm"])
	if err != nil || realm.Host == "" || realm.User != nil {
		return "", updateErr(ReasonFetch, "%s: the registry's token realm %q is not a URL", loc, params["realm"])
	}
	if realm.Scheme != "https" && !(realm.Scheme == "http" && s.base.Scheme == "http" && isLoopback(realm.Hostname())) {
		return "", newErr(CodeNetworkDenied, ReasonPolicy, "%s: the registry's token realm %s is not https: refused", loc, realm.Redacted())
	}
	q := realm.Query()
	for _, k := range []string{"service", "scope"} {
		if params[k] != "" {
			q.Set(k, params[k])
		}
	}
	realm.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, realm.String(), nil)
	if err != nil {
		return "", updateErr(ReasonFetch, "%s: %v", realm.Redacted(), err)
	}
	req.Header.Set("User-Agent", "piship")
	resp, err := f.do(s.client, req)
	if err != nil {
		if e := f.after(ctx, err); e != nil {
			return "", e
		}
		if e, ok := AsError(err); ok {
			return "", e
		}
		return "", updateErr(ReasonFetch, "cannot fetch a token for %s from %s: %v", loc, realm.Redacted(), unwrapURLError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenBytes+1))
	if err != nil {
		if e := f.after(ctx, err); e != nil {
			return "", e
		}
		return "", updateErr(ReasonFetch, "cannot read the token for %s from %s: %v", loc, realm.Redacted(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", updateErr(ReasonFetch, "the registry's token realm %s answered %s for %s: the blob is not served anonymously; ask the publisher to make the package public", realm.Redacted(), resp.Status, loc)
	}
	var tok struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if len(body) > maxTokenBytes || json.Unmarshal(body, &tok) != nil || tok.Token+tok.AccessToken == "" {
		return "", updateErr(ReasonMalformed, "the registry's token realm %s answered no token for %s (a JSON object with \"token\", at most %s)", realm.Redacted(), loc, sizeString(maxTokenBytes))
	}
	if tok.Token != "" {
		return tok.Token, nil
	}
	return tok.AccessToken, nil
}
