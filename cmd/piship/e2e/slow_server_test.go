package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowChannel serves the channel directory dir over plain http on
// loopback, except that requests whose path ends in slowSuffix get mode:
// "silent" (the request is read, no headers are ever sent) or "trickle"
// (the headers, then one byte a second). It returns the base URL.
func slowChannel(t *testing.T, dir, slowSuffix, mode string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(done); ln.Close(); wg.Wait() })
	files := http.FileServer(http.Dir(dir))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					if !strings.HasSuffix(req.URL.Path, slowSuffix) {
						rec := &rawResponse{header: http.Header{}}
						files.ServeHTTP(rec, req)
						rec.writeTo(c)
						continue
					}
					if mode == "trickle" {
						// The true size, so only the pace is wrong.
						size := int64(1000)
						if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(req.URL.Path))); err == nil {
							size = fi.Size()
						}
						fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size)
					}
					tick := time.NewTicker(time.Second)
					defer tick.Stop()
					for {
						select {
						case <-done:
							return
						case <-tick.C:
						}
						if mode == "trickle" {
							if _, err := c.Write([]byte{'x'}); err != nil {
								return
							}
						}
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}

// rawResponse records a handler's answer to write it on a raw connection.
type rawResponse struct {
	header http.Header
	code   int
	body   strings.Builder
}

func (r *rawResponse) Header() http.Header { return r.header }
func (r *rawResponse) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}
func (r *rawResponse) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
func (r *rawResponse) writeTo(c net.Conn) {
	r.WriteHeader(http.StatusOK)
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Length: %d\r\n", r.code, http.StatusText(r.code), r.body.Len())
	for k, vs := range r.header {
		if k != "Content-Length" {
			for _, v := range vs {
				fmt.Fprintf(c, "%s: %s\r\n", k, v)
			}
		}
	}
	fmt.Fprintf(c, "\r\n%s", r.body.String())
}

// updateFromSlowServers runs `piship update --from http://127.0.0.1:P/`
// against a server that never sends headers, or sends them and then one
// byte a second, for the channel document and for the archive: each
// update ends with UPDATE_FAILED naming the limit that fired, within the
// budget the flags set (plus the process's own start), and the installed
// version (w has one) stays active and launchable with nothing left in its
// downloads. TestInstallUpdateRollbackThroughTheShim/http calls it on its
// world, which costs a release of two versions.
func updateFromSlowServers(t *testing.T, w *consumerWorld) {
	before := w.active()
	archive := filepath.Base(w.release["1.1.0"])
	const slack = 5 * time.Second
	for _, c := range []struct {
		name, suffix, mode string
		flags              []string
		budget             time.Duration
		want               []string
	}{
		{"no headers", "/stable.json", "silent", []string{"--timeout", "1s"}, time.Second,
			[]string{"UPDATE_FAILED", "sent no response headers", "/stable.json", "within the 1s header timeout", "raise --timeout"}},
		{"a byte a second", "/stable.json", "trickle", []string{"--max-time", "2s"}, 2 * time.Second,
			[]string{"UPDATE_FAILED", "/stable.json did not arrive within the 2s overall budget", "raise --max-time"}},
		{"archive, no headers", "/" + archive, "silent", []string{"--timeout", "1s"}, time.Second,
			[]string{"UPDATE_FAILED", "sent no response headers", archive, "header timeout"}},
		{"archive, a byte a second", "/" + archive, "trickle", []string{"--max-time", "2s"}, 2 * time.Second,
			[]string{"UPDATE_FAILED", archive + " did not arrive within the 2s overall budget for an archive"}},
	} {
		t.Run("slow server, "+c.name, func(t *testing.T) {
			from := slowChannel(t, w.chanDir, c.suffix, c.mode)
			start := time.Now()
			out, err := w.try(append([]string{"update", w.id, "--from", from}, c.flags...)...)
			took := time.Since(start)
			if err == nil {
				t.Fatalf("update succeeded:\n%s", out)
			}
			for _, want := range c.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if took > c.budget+slack {
				t.Errorf("the update took %v; its budget is %v", took, c.budget)
			}
			if w.active() != before {
				t.Errorf("active after a failed update: %s", w.active())
			}
		})
	}
	if got := w.launch("--version"); got != before {
		t.Fatalf("launch after the failed updates: %q", got)
	}
	entries, _ := os.ReadDir(filepath.Join(w.envValue("PISHIP_INSTALL_HOME="), "apps", w.id, ".downloads"))
	for _, e := range entries {
		t.Errorf("left in the downloads: %s", e.Name())
	}
}
