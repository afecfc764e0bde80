package updatesource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"piship.dev/piship/cache/canon"
)

var ctx = context.Background()

// countingTransport fails every request, counting them.
type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	c.n.Add(1)
	return nil, errors.New("no network in tests")
}

func TestSourceDirectory(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "stable.json"), "{}")
	writeTestFile(t, filepath.Join(dir, "big.json"), strings.Repeat(" ", MaxDocumentBytes+1))
	for _, spec := range []string{dir, "file://" + filepath.ToSlash(dir)} {
		s, err := OpenSource(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Local() || s.String() != spec {
			t.Errorf("%s: local %v, shown %s", spec, s.Local(), s)
		}
		if b, err := s.Fetch(ctx, "stable.json", 0); err != nil || string(b) != "{}" {
			t.Errorf("%s: fetch %q %v", spec, b, err)
		}
		_, err = s.Fetch(ctx, "beta.json", 0)
		wantErr(t, err, CodeUpdateFailed, ReasonNotFound, "does not exist")
		if !errors.Is(err, fs.ErrNotExist) {
			t.Error("a missing file is not fs.ErrNotExist")
		}
		_, err = s.Fetch(ctx, "big.json", 0)
		wantErr(t, err, CodeUpdateFailed, ReasonTooLarge, "64 KiB")
		for _, name := range []string{"../stable.json", "a/b", "", ".."} {
			_, err = s.Fetch(ctx, name, 0)
			wantErr(t, err, CodeUpdateFailed, ReasonMalformed)
		}
	}
	// A relative directory resolves against the working directory.
	if s, err := OpenSource("some/dir", nil); err != nil || !filepath.IsAbs(s.dir) {
		t.Errorf("relative: %v", err)
	}
	for spec, frag := range map[string]string{
		"":                         "empty",
		"file://host/x":            "no host",
		"ftp://example.com/x/":     `scheme "ftp"`,
		"https://u:p@example.com/": "credentials",
		"https://example.com/?a=1": "no query",
		"https:///x":               "no host",
	} {
		_, err := OpenSource(spec, nil)
		wantErr(t, err, CodeConfigInvalid, "", frag)
	}
}

func TestSourceNonLoopbackHTTPRefused(t *testing.T) {
	rt := &countingTransport{}
	client := &http.Client{Transport: rt}
	for _, spec := range []string{"http://example.com/hello/", "http://10.0.0.1:8080/x", "http://[2001:db8::1]/", "HTTP://example.com", "http://localhost.example.com/"} {
		s, err := OpenSource(spec, client)
		if s != nil {
			t.Errorf("%s accepted", spec)
		}
		wantErr(t, err, CodeNetworkDenied, ReasonPolicy, "plain http to", "use https://")
	}
	if rt.n.Load() != 0 {
		t.Errorf("%d requests were made", rt.n.Load())
	}
	// Loopback hosts and https are accepted without a request either.
	for _, spec := range []string{"http://127.0.0.1:1/x", "http://127.1.2.3/", "http://[::1]:9/", "http://localhost:8080/", "https://example.com/hello"} {
		s, err := OpenSource(spec, client)
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		if !strings.HasSuffix(s.String(), "/") {
			t.Errorf("%s: base %s does not end in /", spec, s)
		}
	}
	if rt.n.Load() != 0 {
		t.Errorf("%d requests were made", rt.n.Load())
	}
}

func TestSourceHTTP(t *testing.T) {
	var hits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/ch/stable.json", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"ok":true}`) })
	mux.HandleFunc("/ch/flaky.json", func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "second time")
	})
	mux.HandleFunc("/ch/down.json", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	mux.HandleFunc("/ch/missing.json", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	})
	// /ch/r<N> redirects N times, then serves.
	mux.HandleFunc("/ch/", func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/ch/")
		n, err := strconv.Atoi(strings.TrimPrefix(name, "r"))
		if !strings.HasPrefix(name, "r") || err != nil {
			http.NotFound(w, r)
			return
		}
		if n == 0 {
			fmt.Fprint(w, "arrived")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/ch/r%d", n-1), http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s, err := OpenSource(srv.URL+"/ch", srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s.Fetch(ctx, "stable.json", 0); err != nil || string(b) != `{"ok":true}` {
		t.Errorf("fetch: %q %v", b, err)
	}
	_, err = s.Fetch(ctx, "stable.json", 5)
	wantErr(t, err, CodeUpdateFailed, ReasonTooLarge, "5 bytes")

	// 503 then 200.
	if b, err := s.Fetch(ctx, "flaky.json", 0); err != nil || string(b) != "second time" || hits.Load() != 2 {
		t.Errorf("retry: %q %v after %d requests", b, err, hits.Load())
	}
	// 429 every time: three tries, Retry-After capped.
	defer func(old time.Duration) { maxRetryAfter = old }(maxRetryAfter)
	maxRetryAfter = 20 * time.Millisecond
	hits.Store(0)
	start := time.Now()
	_, err = s.Fetch(ctx, "down.json", 0)
	wantErr(t, err, CodeUpdateFailed, ReasonFetch, "429", "after 3 tries")
	if hits.Load() != 3 || time.Since(start) > 5*time.Second {
		t.Errorf("%d tries in %v", hits.Load(), time.Since(start))
	}
	// 404 is not retried.
	hits.Store(0)
	_, err = s.Fetch(ctx, "missing.json", 0)
	wantErr(t, err, CodeUpdateFailed, ReasonNotFound, "404")
	if hits.Load() != 1 || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("404: %d tries", hits.Load())
	}

	// Redirects: 5 followed, 6 refused.
	if b, err := s.Fetch(ctx, "r5", 0); err != nil || string(b) != "arrived" {
		t.Errorf("5 redirects: %q %v", b, err)
	}
	_, err = s.Fetch(ctx, "r6", 0)
	wantErr(t, err, CodeNetworkDenied, ReasonPolicy, "more than 5 redirects")

	// A redirect to another origin (another port of the same host).
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "elsewhere") }))
	defer other.Close()
	away := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/stable.json", http.StatusMovedPermanently)
	}))
	defer away.Close()
	s2, err := OpenSource(away.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s2.Fetch(ctx, "stable.json", 0)
	wantErr(t, err, CodeNetworkDenied, ReasonPolicy, "another origin", other.URL)

	// A canceled context.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Fetch(cctx, "stable.json", 0); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}

func TestDownload(t *testing.T) {
	body := []byte(strings.Repeat("archive bytes ", 1000))
	sum := canon.SHA256Hex(body)
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "a.tar.gz"), string(body))
	// chunked: no Content-Length, so the size is checked while streaming.
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(dir)))
	mux.HandleFunc("/chunked/a.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		w.Write(body[:100])
		w.(http.Flusher).Flush()
		w.Write(body[100:])
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	sources := map[string]string{"dir": dir, "http": srv.URL + "/", "chunked": srv.URL + "/chunked/"}
	for kind, spec := range sources {
		t.Run(kind, func(t *testing.T) {
			s, err := OpenSource(spec, srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			dst := filepath.Join(out, "dl", "a.tar.gz")
			if err := s.Download(ctx, "a.tar.gz", dst, int64(len(body)), sum); err != nil {
				t.Fatal(err)
			}
			if got := readTestFile(t, dst); string(got) != string(body) {
				t.Error("downloaded bytes differ")
			}
			for _, c := range []struct {
				name   string
				size   int64
				sum    string
				reason Reason
				frag   string
			}{
				{"short", int64(len(body)) + 1, sum, ReasonSize, "the channel signs 14001"},
				{"long", int64(len(body)) - 1, sum, ReasonSize, "13999"},
				{"digest", int64(len(body)), strings.Repeat("ab", 32), ReasonDigest, "has sha256 " + sum},
			} {
				bad := filepath.Join(out, c.name+".tar.gz")
				err := s.Download(ctx, "a.tar.gz", bad, c.size, c.sum)
				wantErr(t, err, CodeIntegrityFailed, c.reason, c.frag)
				if _, err := os.Lstat(bad); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: something at dst: %v", c.name, err)
				}
			}
			entries, _ := os.ReadDir(out)
			if len(entries) != 1 {
				t.Errorf("left in the download directory: %v", entries)
			}
			err = s.Download(ctx, "a.tar.gz", filepath.Join(out, "x"), int64(len(body)), "nothex")
			wantErr(t, err, CodeUpdateFailed, ReasonMalformed, "64 lowercase hex")

			// OpenVerified fails at the end of a reader whose digest differs.
			rc, err := s.OpenVerified(ctx, "a.tar.gz", int64(len(body)), strings.Repeat("0", 64))
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.ReadAll(rc)
			rc.Close()
			wantErr(t, err, CodeIntegrityFailed, ReasonDigest)
		})
	}
}
