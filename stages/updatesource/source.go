package updatesource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
)

// MaxDocumentBytes bounds a metadata file a Source fetches (Fetch with
// limit 0).
const MaxDocumentBytes = 64 << 10

// Fetching policy.
const (
	// MaxRedirects is how many redirects a fetch follows, all to the
	// source's own origin.
	MaxRedirects = 5
	// maxTries is how often a request answered 429 or 5xx is made.
	maxTries = 3
)

var (
	// retryBase is the first backoff; the second is three times it.
	retryBase = 100 * time.Millisecond
	// maxRetryAfter caps a server's Retry-After.
	maxRetryAfter = 2 * time.Second
)

// Source is where a channel is read from: a local directory or the
// http(s) URL of a directory holding <channel>.json, its .sig and the
// archives. Plain http is allowed only to loopback hosts, so a tampered
// network can at most withhold updates (signatures cover the documents,
// and the documents cover the archives).
type Source struct {
	dir    string   // a local directory, absolute; or
	base   *url.URL // an http(s) URL whose path ends in "/"
	client *http.Client
	limits Limits
	shown  string
	// blob is the one name a registry blob's Source fetches,
	// sha256:<hex> (OpenBlob), "" for a directory.
	blob string
}

// SourceOptions are how a Source reaches the network.
type SourceOptions struct {
	// Client is used for http(s); nil: a client on a transport of the
	// source's own whose dialer keeps plain http on loopback (see
	// OpenSource). A client with its own Transport keeps it (tests).
	Client *http.Client
	// Limits bound every request and body (zero fields: DefaultLimits).
	Limits Limits
	// Dial is the source's transport's raw dialer (nil: net.Dialer); the
	// plain-http rule wraps it, so it only ever sees literal addresses.
	Dial Dialer
}

// OpenSource reads a source without touching it: a directory path
// (relative paths resolve against the working directory), a file:// URL,
// an https:// URL, or an http:// URL of a loopback host: a literal
// loopback address (127.0.0.0/8 in dotted decimal, [::1]) or the name
// localhost (any case, one optional trailing dot), which is dialed as
// 127.0.0.1 or ::1 without asking a resolver. Plain http to any other
// host is NETWORK_DENIED before any name is resolved or connection made,
// and the plain-http dialer refuses a connection whose remote address is
// not loopback; other forms are CONFIG_INVALID. client is used for http(s)
// (see SourceOptions.Client); its redirect policy is replaced by the
// source's: at most MaxRedirects, all to the source's scheme, host and
// port, else NETWORK_DENIED. Every request runs under DefaultLimits.
func OpenSource(s string, client *http.Client) (*Source, error) {
	return OpenSourceWith(s, SourceOptions{Client: client})
}

// OpenSourceWith is OpenSource with the limits and the dialer of o.
func OpenSourceWith(s string, o SourceOptions) (*Source, error) {
	switch {
	case strings.TrimSpace(s) == "":
		return nil, configErr("the update source is empty: give a directory, a file:// URL or an https:// URL of the channel directory")
	case isURL(s):
		return openURL(s, o)
	}
	abs, err := filepath.Abs(s)
	if err != nil {
		return nil, configErr("update source %s: %v", s, err)
	}
	return &Source{dir: abs, shown: s}, nil
}

// isURL tells a URL from a path: a scheme of two letters or more
// followed by "://" (C:\x is a Windows path).
func isURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	if !ok || len(scheme) < 2 {
		return false
	}
	for i := 0; i < len(scheme); i++ {
		c := scheme[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

func openURL(s string, o SourceOptions) (*Source, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, configErr("update source %q is not a URL: %v", s, err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch u.Scheme {
	case "file":
		if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
			return nil, configErr("update source %s: a file:// URL names a local directory: file:///path (no host)", s)
		}
		p := u.Path
		if runtime.GOOS == "windows" && len(p) >= 3 && p[0] == '/' && p[2] == ':' {
			p = p[1:] // file:///C:/x
		}
		p = filepath.FromSlash(p)
		if !filepath.IsAbs(p) {
			return nil, configErr("update source %s: a file:// URL needs an absolute path: file:///path", s)
		}
		return &Source{dir: filepath.Clean(p), shown: s}, nil
	case "http", "https":
	default:
		return nil, configErr("update source %s: the scheme %q is not supported: use https://, file:// or a directory path", s, u.Scheme)
	}
	switch {
	case u.Host == "" || u.Hostname() == "":
		return nil, configErr("update source %s: the URL has no host", s)
	case u.User != nil:
		return nil, configErr("update source %s: the URL holds credentials; a source URL is recorded in piship.lock and shown in messages, so it must not", redact(u))
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, configErr("update source %s: the URL of the channel directory has no query or fragment", s)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return nil, newErr(CodeNetworkDenied, ReasonPolicy, "update source %s: plain http to %s is refused; only loopback hosts may be reached without TLS: use https://%s", s, u.Hostname(), strings.TrimPrefix(s[len("http://"):], "/"))
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		if u.RawPath != "" {
			u.RawPath += "/"
		}
	}
	src := &Source{base: u, shown: u.String(), limits: o.Limits.withDefaults()}
	var c http.Client
	if o.Client != nil {
		c = *o.Client
	}
	c.CheckRedirect = src.checkRedirect
	if c.Transport == nil {
		raw := o.Dial
		if raw == nil {
			raw = (&net.Dialer{Timeout: src.limits.Connect, KeepAlive: 30 * time.Second}).DialContext
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = src.dialer(raw)
		tr.TLSHandshakeTimeout = src.limits.Connect
		if u.Scheme == "http" {
			tr.Proxy = nil // loopback is dialed directly, never through a proxy
		}
		c.Transport = tr
	}
	src.client = &c
	return src, nil
}

func redact(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

func (s *Source) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return newErr(CodeNetworkDenied, ReasonPolicy, "%s: more than %d redirects", via[0].URL.Redacted(), MaxRedirects)
	}
	if !sameOrigin(req.URL, s.base) {
		return newErr(CodeNetworkDenied, ReasonPolicy, "%s redirects to %s, another origin than the source %s: a channel directory and its archives are served from one place",
			via[len(via)-1].URL.Redacted(), req.URL.Redacted(), originOf(s.base))
	}
	return nil
}

func sameOrigin(a, b *url.URL) bool { return originOf(a) == originOf(b) }

func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// String names the source as given (a URL normalized to end in "/").
func (s *Source) String() string { return s.shown }

// Local reports whether the source is a directory on this machine.
func (s *Source) Local() bool { return s.dir != "" }

// location is where name is, for messages and requests.
func (s *Source) location(name string) string {
	if s.dir != "" {
		return filepath.Join(s.dir, name)
	}
	return s.base.JoinPath(name).String()
}

// Fetch reads the file name (one plain path element) of the source, at
// most limit bytes (0: MaxDocumentBytes); a larger file is refused
// (UPDATE_FAILED, ReasonTooLarge). A missing file is UPDATE_FAILED
// (ReasonNotFound) and matches errors.Is(err, fs.ErrNotExist).
func (s *Source) Fetch(ctx context.Context, name string, limit int64) ([]byte, error) {
	return s.fetchWithin(ctx, name, limit, s.limits.Document, "a channel file")
}

// FetchArchive is Fetch under the archive budget (Limits.Archive) instead
// of the document one: for a caller that checks a release archive itself
// after reading it whole (the TUF client checks length and hashes with
// go-tuf), where limit is the archive's signed length.
func (s *Source) FetchArchive(ctx context.Context, name string, limit int64) ([]byte, error) {
	return s.fetchWithin(ctx, name, limit, s.limits.Archive, "an archive")
}

// Sub is the source of the directory rel ('/'-separated plain names) below
// s, with s's client, limits, plain-http rule and redirect policy (all to
// s's origin): a TUF repository's metadata/ and targets/<channel>/ are
// read through it, so the rules live here once.
func (s *Source) Sub(rel string) (*Source, error) {
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if msg := checkFileName(p); msg != "" {
			return nil, updateErr(ReasonMalformed, "%s: directory %q: %s", s.shown, rel, msg)
		}
	}
	c := *s
	if c.dir != "" {
		c.dir = filepath.Join(append([]string{c.dir}, parts...)...)
		c.shown = c.dir
		return &c, nil
	}
	c.base = s.base.JoinPath(parts...)
	c.base.Path += "/"
	if c.base.RawPath != "" {
		c.base.RawPath += "/"
	}
	c.shown = c.base.String()
	return &c, nil
}

func (s *Source) fetchWithin(ctx context.Context, name string, limit int64, budget time.Duration, what string) ([]byte, error) {
	if limit <= 0 {
		limit = MaxDocumentBytes
	}
	rc, size, err := s.open(ctx, name, budget, what)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	tooLarge := func() error {
		return updateErr(ReasonTooLarge, "%s is larger than the %s bound", s.location(name), sizeString(limit))
	}
	if size > limit {
		return nil, tooLarge()
	}
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		if e, ok := AsError(err); ok {
			return nil, e // a limit fired
		}
		return nil, s.readErr(ctx, name, err)
	}
	if int64(len(b)) > limit {
		return nil, tooLarge()
	}
	return b, nil
}

// OpenVerified opens the file name of the source for reading, checking
// while it is read that it is wantSize bytes with the lowercase hex SHA-256
// wantSHA256: the reader fails with INTEGRITY_FAILED as soon as it passes
// wantSize bytes, and at the end when it is short or the digest differs.
// Only a read that reaches io.EOF has been checked; an installer extracts
// from it in one pass and commits nothing before that EOF.
func (s *Source) OpenVerified(ctx context.Context, name string, wantSize int64, wantSHA256 string) (io.ReadCloser, error) {
	if wantSize <= 0 {
		return nil, updateErr(ReasonMalformed, "%s: the signed size %d is not a size", name, wantSize)
	}
	if !canon.IsSHA256Hex(wantSHA256) {
		return nil, updateErr(ReasonMalformed, "%s: the signed sha256 %q is not 64 lowercase hex digits", name, wantSHA256)
	}
	rc, size, err := s.open(ctx, name, s.limits.Archive, "an archive")
	if err != nil {
		return nil, err
	}
	loc := s.location(name)
	if size >= 0 && size != wantSize {
		rc.Close()
		return nil, sizeErr(loc, size, wantSize)
	}
	return &verifyingReader{ctx: ctx, r: io.LimitReader(rc, wantSize+1), c: rc, h: sha256.New(), want: wantSize, wantSum: wantSHA256, loc: loc}, nil
}

// Download streams the file name of the source to dst through a temporary
// sibling, checking size and SHA-256 while writing (see OpenVerified), and
// renames it into place only when both match. On any failure nothing is
// left at dst (a file already there is not touched); a mismatch is
// INTEGRITY_FAILED.
func (s *Source) Download(ctx context.Context, name, dst string, wantSize int64, wantSHA256 string) (err error) {
	rc, err := s.OpenVerified(ctx, name, wantSize, wantSHA256)
	if err != nil {
		return err
	}
	defer rc.Close()
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return updateErr(ReasonFetch, "cannot download to %s: %v", dst, err)
	}
	tmp, err := atomicfs.Create(dst, 0o600, atomicfs.Options{Pattern: "." + filepath.Base(dst) + ".part-*"})
	if err != nil {
		return updateErr(ReasonFetch, "cannot download to %s: %v", dst, err)
	}
	defer tmp.Abort() // nothing once committed
	buf := make([]byte, 256<<10)
	if _, err := io.CopyBuffer(tmp.File, rc, buf); err != nil {
		if _, ok := AsError(err); ok {
			return err
		}
		return updateErr(ReasonFetch, "cannot download %s to %s: %v", s.location(name), dst, err)
	}
	if err := tmp.Commit(); err != nil {
		return updateErr(ReasonFetch, "cannot download to %s: %v", dst, err)
	}
	return nil
}

type verifyingReader struct {
	ctx     context.Context
	r       io.Reader
	c       io.Closer
	h       hash.Hash
	n, want int64
	wantSum string
	loc     string
	err     error
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if err := v.ctx.Err(); err != nil {
		v.err = err
		return 0, err
	}
	n, err := v.r.Read(p)
	if v.n+int64(n) > v.want {
		n = int(v.want - v.n)
		v.err = &Error{Code: CodeIntegrityFailed, Reason: ReasonSize, Msg: fmt.Sprintf("%s is larger than the %d bytes the channel signs", v.loc, v.want)}
		err = v.err
	}
	v.h.Write(p[:n])
	v.n += int64(n)
	switch {
	case err == io.EOF:
		if v.n != v.want {
			v.err = sizeErr(v.loc, v.n, v.want)
		} else if sum := hex.EncodeToString(v.h.Sum(nil)); sum != v.wantSum {
			v.err = &Error{Code: CodeIntegrityFailed, Reason: ReasonDigest, Msg: fmt.Sprintf("%s has sha256 %s, the channel signs %s", v.loc, sum, v.wantSum)}
		} else {
			v.err = io.EOF
		}
		err = v.err
	case err != nil && v.err == nil:
		if e, ok := AsError(err); ok {
			v.err = e // a limit fired
		} else {
			v.err = updateErr(ReasonFetch, "cannot read %s: %v", v.loc, err)
		}
		err = v.err
	}
	return n, err
}

func (v *verifyingReader) Close() error { return v.c.Close() }

func sizeErr(loc string, got, want int64) error {
	return &Error{Code: CodeIntegrityFailed, Reason: ReasonSize, Msg: fmt.Sprintf("%s is %d bytes, the channel signs %d", loc, got, want)}
}

// open returns the file's content and its size (-1 when unknown); an
// http(s) fetch runs under the limits with budget as its overall budget
// (what names the file in its message).
func (s *Source) open(ctx context.Context, name string, budget time.Duration, what string) (io.ReadCloser, int64, error) {
	if msg := checkFileName(name); msg != "" && (s.blob == "" || name != s.blob) {
		return nil, 0, updateErr(ReasonMalformed, "%q: %s", name, msg)
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if s.dir != "" {
		p := filepath.Join(s.dir, name)
		f, err := os.Open(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, 0, &Error{Code: CodeUpdateFailed, Reason: ReasonNotFound, Msg: fmt.Sprintf("%s does not exist", p), Err: fs.ErrNotExist}
			}
			return nil, 0, updateErr(ReasonFetch, "cannot read %s: %v", p, err)
		}
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			f.Close()
			return nil, 0, updateErr(ReasonFetch, "%s is not a regular file", p)
		}
		return f, fi.Size(), nil
	}
	f := s.startFetch(ctx, name, budget, what)
	resp, err := s.get(ctx, f, name)
	if err != nil {
		f.stop()
		return nil, 0, err
	}
	return &fetchBody{ReadCloser: resp.Body, f: f}, resp.ContentLength, nil
}

func (s *Source) readErr(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return updateErr(ReasonFetch, "cannot read %s: %v", s.location(name), err)
}

// get requests name under f's limits, retrying 429 and 5xx answers:
// maxTries in all, after retryBase and three times it, or the server's
// Retry-After up to maxRetryAfter. ctx is the caller's (f.ctx is derived
// from it).
func (s *Source) get(ctx context.Context, f *fetch, name string) (*http.Response, error) {
	u := s.base.JoinPath(name)
	loc := u.String()
	bearer := "" // a registry's anonymous token, once its 401 asked for one
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, loc, nil)
		if err != nil {
			return nil, updateErr(ReasonFetch, "%s: %v", loc, err)
		}
		req.Header.Set("User-Agent", "piship")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := f.do(s.client, req)
		if err != nil {
			if e := f.after(ctx, err); e != nil {
				return nil, e // a limit fired, or ctx is done
			}
			if e, ok := AsError(err); ok {
				return nil, e // the redirect policy, the plain-http dialer
			}
			return nil, updateErr(ReasonFetch, "cannot fetch %s: %v", loc, unwrapURLError(err))
		}
		if resp.StatusCode == http.StatusOK {
			return resp, nil
		}
		// Drain a little so the connection can be reused.
		io.CopyN(io.Discard, resp.Body, 4<<10)
		resp.Body.Close()
		switch code := resp.StatusCode; {
		case code == http.StatusUnauthorized && s.blob != "" && bearer == "":
			// The registry's anonymous token step (registry.go), once;
			// it is not counted as a try.
			if bearer, err = s.token(ctx, f, resp.Header.Get("WWW-Authenticate"), loc); err != nil {
				return nil, err
			}
			attempt--
		case code == http.StatusNotFound || code == http.StatusGone:
			return nil, &Error{Code: CodeUpdateFailed, Reason: ReasonNotFound, Msg: fmt.Sprintf("%s does not exist (%s)", loc, resp.Status), Err: fs.ErrNotExist}
		case (code == http.StatusTooManyRequests || code >= 500) && attempt < maxTries:
			delay := retryBase
			if attempt > 1 {
				delay = 3 * retryBase
			}
			if ra, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				delay = min(ra, maxRetryAfter)
			}
			t := time.NewTimer(delay)
			select {
			case <-f.ctx.Done():
				t.Stop()
				return nil, f.after(ctx, f.ctx.Err())
			case <-t.C:
			}
		default:
			tries := ""
			if attempt > 1 {
				tries = fmt.Sprintf(" (after %d tries)", attempt)
			}
			return nil, updateErr(ReasonFetch, "%s answered %s%s", loc, resp.Status, tries)
		}
	}
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		if n > 3600 {
			n = 3600
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func sizeString(n int64) string {
	if n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
