// Package audittest is a local npm registry for tests of the release
// audits: it speaks the bulk advisory endpoint, the signing keys endpoint
// and packuments signed with a generated ECDSA P-256 key, and can be made
// to fail in each of the ways a real registry fails.
//
//	s := audittest.NewServer(t)
//	s.AddPackage(audittest.Package{Name: "lodash", Version: "4.17.20", Integrity: "sha512-..."})
//	s.AddAdvisory("lodash", audittest.Advisory{ID: 1, URL: "https://github.com/advisories/GHSA-...", Severity: "high", VulnerableVersions: "<4.17.21"})
//	s.SetFault(audittest.Keys, audittest.NotFound)
//	// audit.Options{Registry: s.URL} ...
//
// It never reaches the network: the server listens on the loopback
// interface and closes when the test ends.
package audittest

import (
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Endpoint names what the server serves.
type Endpoint int

const (
	// Bulk is POST /-/npm/v1/security/advisories/bulk.
	Bulk Endpoint = iota
	// Keys is GET /-/npm/v1/keys.
	Keys
	// Packuments is GET /<name> (a scoped name escaped as @scope%2fname).
	Packuments
)

func (e Endpoint) String() string {
	return [...]string{"bulk", "keys", "packuments"}[e]
}

// Fault is how an endpoint misbehaves.
type Fault int

const (
	// OK answers properly.
	OK Fault = iota
	// Malformed answers 200 with a body that is not the expected JSON.
	Malformed
	// Hang accepts the request and never answers (until the client gives
	// up or the test ends).
	Hang
	// NotFound answers 404.
	NotFound
	// ServerError answers 500.
	ServerError
	// Unavailable answers 503.
	Unavailable
	// TooManyRequests answers 429.
	TooManyRequests
)

func (f Fault) String() string {
	return [...]string{"ok", "malformed", "hang", "404", "500", "503", "429"}[f]
}

// Package is a version the registry serves.
type Package struct {
	Name, Version, Integrity string
	// Published is time[version] in the full packument (zero: 2024-01-01).
	Published time.Time
}

// Advisory is one advisory of the bulk endpoint's answer; a zero ID or an
// empty URL is left out.
type Advisory struct {
	ID                 int      `json:"id,omitempty"`
	URL                string   `json:"url,omitempty"`
	Title              string   `json:"title"`
	Severity           string   `json:"severity"`
	VulnerableVersions string   `json:"vulnerable_versions"`
	CWE                []string `json:"cwe"`
}

// Server is the test registry. Its methods may be called while requests
// are served.
type Server struct {
	// URL is the registry URL, ending in "/".
	URL string
	// Key signs the packuments; KeyID is its keyid ("SHA256:<base64 of
	// the SHA-256 of its SPKI DER>").
	Key   *ecdsa.PrivateKey
	KeyID string

	srv     *httptest.Server
	closing chan struct{}

	mu         sync.Mutex
	keyExpires *time.Time
	advisories map[string][]Advisory
	packages   map[string]map[string]Package // name -> version -> package
	omit       map[string]bool               // name@version, "*" for all
	corrupt    map[string]bool
	faults     map[Endpoint]Fault
	faultN     map[Endpoint]int // remaining faulty answers; <0: forever
	counts     map[Endpoint]int
	full       int
	bulk       []map[string][]string
}

// NewServer starts a registry on the loopback interface; it closes when
// the test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	s := &Server{
		Key: key, KeyID: "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:]),
		closing:    make(chan struct{}),
		advisories: map[string][]Advisory{},
		packages:   map[string]map[string]Package{},
		omit:       map[string]bool{}, corrupt: map[string]bool{},
		faults: map[Endpoint]Fault{}, faultN: map[Endpoint]int{}, counts: map[Endpoint]int{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/"
	t.Cleanup(s.srv.Close)
	t.Cleanup(func() { close(s.closing) }) // runs first: hung handlers return
	return s
}

// AddPackage serves a version, signed by Key over
// "<name>@<version>:<integrity>".
func (s *Server) AddPackage(ps ...Package) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range ps {
		if p.Published.IsZero() {
			p.Published = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		if s.packages[p.Name] == nil {
			s.packages[p.Name] = map[string]Package{}
		}
		s.packages[p.Name][p.Version] = p
	}
}

// AddAdvisory makes the bulk endpoint answer a with every request naming
// the package, whatever versions it asks about (the client must evaluate
// vulnerable_versions itself).
func (s *Server) AddAdvisory(name string, a Advisory) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advisories[name] = append(s.advisories[name], a)
}

// SetKeyExpiry sets the key's "expires" (nil: null, never).
func (s *Server) SetKeyExpiry(t *time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keyExpires = t
}

// OmitSignatures serves name@version without dist.signatures; "*" omits
// them everywhere.
func (s *Server) OmitSignatures(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.omit[id] = true
}

// CorruptSignature serves name@version with a signature that does not
// verify.
func (s *Server) CorruptSignature(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corrupt[id] = true
}

// SetFault makes an endpoint misbehave until SetFault(e, OK).
func (s *Server) SetFault(e Endpoint, f Fault) { s.FailNext(e, f, -1) }

// FailNext makes the next n answers of an endpoint misbehave (n < 0:
// every answer), then it answers properly again.
func (s *Server) FailNext(e Endpoint, f Fault, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[e], s.faultN[e] = f, n
}

// DisableKeys makes the keys endpoint answer 404, as registries that do
// not sign do.
func (s *Server) DisableKeys() { s.SetFault(Keys, NotFound) }

// Requests counts the requests an endpoint received.
func (s *Server) Requests(e Endpoint) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[e]
}

// FullPackumentRequests counts the packument requests that asked for the
// full document (no application/vnd.npm.install-v1+json in Accept).
func (s *Server) FullPackumentRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.full
}

// BulkRequests returns the decoded bodies of the bulk requests received.
func (s *Server) BulkRequests() []map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bulk)
}

// fault returns the fault the next answer of e has, counting it.
func (s *Server) fault(e Endpoint) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[e]++
	f := s.faults[e]
	switch n := s.faultN[e]; {
	case f == OK:
	case n == 0:
		return OK
	case n > 0:
		s.faultN[e] = n - 1
	}
	return f
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.EscapedPath(), "/")
	var e Endpoint
	switch {
	case path == "-/npm/v1/security/advisories/bulk":
		e = Bulk
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
	case path == "-/npm/v1/keys":
		e = Keys
	case strings.HasPrefix(path, "-/"):
		http.NotFound(w, r)
		return
	default:
		e = Packuments
	}
	switch s.fault(e) {
	case Malformed:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"this is": not json`)
		return
	case Hang:
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	case NotFound:
		http.NotFound(w, r)
		return
	case ServerError:
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	case Unavailable:
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	case TooManyRequests:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	}
	switch e {
	case Bulk:
		s.serveBulk(w, r)
	case Keys:
		s.serveKeys(w)
	default:
		name, err := url.PathUnescape(path)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		s.servePackument(w, r, name)
	}
}

func (s *Server) serveBulk(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Content-Encoding") != "gzip" {
		http.Error(w, "the bulk endpoint takes a gzip body (Content-Encoding: gzip)", http.StatusBadRequest)
		return
	}
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		http.Error(w, "not gzip: "+err.Error(), http.StatusBadRequest)
		return
	}
	var req map[string][]string
	if err := json.NewDecoder(zr).Decode(&req); err != nil {
		http.Error(w, "not a {name: [versions]} object: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.bulk = append(s.bulk, req)
	answer := map[string][]Advisory{}
	for name := range req {
		if as := s.advisories[name]; len(as) > 0 {
			answer[name] = slices.Clone(as)
		}
	}
	s.mu.Unlock()
	writeJSON(w, answer)
}

func (s *Server) serveKeys(w http.ResponseWriter) {
	der, _ := x509.MarshalPKIXPublicKey(&s.Key.PublicKey)
	s.mu.Lock()
	var expires *string
	if s.keyExpires != nil {
		e := s.keyExpires.UTC().Format(time.RFC3339Nano)
		expires = &e
	}
	s.mu.Unlock()
	writeJSON(w, map[string]any{"keys": []map[string]any{{
		"expires": expires,
		"keyid":   s.KeyID,
		"keytype": "ecdsa-sha2-nistp256",
		"scheme":  "ecdsa-sha2-nistp256",
		"key":     base64.StdEncoding.EncodeToString(der),
	}}})
}

// servePackument serves the abbreviated packument (no time) to a client
// accepting application/vnd.npm.install-v1+json, else the full one.
func (s *Server) servePackument(w http.ResponseWriter, r *http.Request, name string) {
	corgi := strings.Contains(r.Header.Get("Accept"), "application/vnd.npm.install-v1+json")
	s.mu.Lock()
	if !corgi {
		s.full++
	}
	vs, ok := s.packages[name]
	type sig struct {
		KeyID string `json:"keyid"`
		Sig   string `json:"sig"`
	}
	versions := map[string]any{}
	times := map[string]string{}
	for v, p := range vs {
		id := name + "@" + v
		dist := map[string]any{
			"integrity": p.Integrity,
			"tarball":   s.URL + name + "/-/" + name[strings.LastIndex(name, "/")+1:] + "-" + v + ".tgz",
		}
		if !s.omit[id] && !s.omit["*"] {
			digest := sha256.Sum256([]byte(id + ":" + p.Integrity))
			der, err := ecdsa.SignASN1(rand.Reader, s.Key, digest[:])
			if err != nil {
				panic(err)
			}
			if s.corrupt[id] {
				d2 := sha256.Sum256([]byte(id + ":sha512-something-else"))
				der, _ = ecdsa.SignASN1(rand.Reader, s.Key, d2[:])
			}
			dist["signatures"] = []sig{{KeyID: s.KeyID, Sig: base64.StdEncoding.EncodeToString(der)}}
		}
		versions[v] = map[string]any{"name": name, "version": v, "dist": dist}
		times[v] = p.Published.UTC().Format(time.RFC3339Nano)
	}
	s.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":"Not found"}`)
		return
	}
	doc := map[string]any{"name": name, "versions": versions, "modified": "2024-06-01T00:00:00.000Z"}
	if !corgi {
		doc["time"] = times
	}
	writeJSON(w, doc)
}

func writeJSON(w http.ResponseWriter, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b.Bytes())
}
