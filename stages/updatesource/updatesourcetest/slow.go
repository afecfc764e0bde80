// Package updatesourcetest serves a channel over plain http on loopback and
// misbehaves the ways an update must survive: a server that never sends
// headers, one that stalls after them, one that trickles a byte a second.
// The updatesource package's limit tests and the e2e update tests share it.
//
//	base := updatesourcetest.Serve(t, updatesourcetest.Options{Mode: updatesourcetest.Trickle, Suffix: "/stable.json", Dir: chanDir})
//	// piship update ID --from base ...
//
// It never reaches the network, and everything it started ends with the test.
package updatesourcetest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Mode is how the server answers the requests it is slow for.
type Mode string

const (
	// Silent reads the request and never sends a byte, headers included.
	Silent Mode = "silent"
	// Stall sends the headers (a 200 with the body's size) and no byte more.
	Stall Mode = "stall"
	// Trickle sends the headers, then one byte of the body a second.
	Trickle Mode = "trickle"
)

// Options say what is served and which requests are slow.
type Options struct {
	Mode Mode
	// Suffix picks the slow requests by the end of their path; empty picks
	// every request.
	Suffix string
	// Dir answers the other requests (nothing: 404). A slow answer declares
	// the size of the file in Dir it stands for, or 100 bytes without one,
	// so only the pace is wrong.
	Dir string
}

// DefaultSize is the Content-Length of a slow answer with no file behind it.
const DefaultSize = 100

// Serve starts the server and returns its base URL (http://127.0.0.1:P/).
// It stops when t ends, slow answers included.
func Serve(t testing.TB, o Options) string {
	t.Helper()
	files := http.NotFoundHandler()
	if o.Dir != "" {
		files = http.FileServer(http.Dir(o.Dir))
	}
	done := make(chan struct{})
	var slow sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, o.Suffix) {
			files.ServeHTTP(w, r)
			return
		}
		// Counted before the hijack, while httptest still waits for this
		// request, so the cleanup's Wait cannot start before the Add.
		slow.Add(1)
		defer slow.Done()
		size := int64(DefaultSize)
		if o.Dir != "" {
			if fi, err := os.Stat(filepath.Join(o.Dir, filepath.FromSlash(path.Clean(r.URL.Path)))); err == nil {
				size = fi.Size()
			}
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("updatesourcetest: cannot take the connection of %s: %v", r.URL.Path, err)
			return
		}
		defer c.Close()
		if o.Mode != Silent {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size)
		}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for sent := int64(0); ; {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if o.Mode == Trickle && sent < size {
				if _, err := c.Write([]byte{'x'}); err != nil {
					return // the client gave up, as it should
				}
				sent++
			}
		}
	}))
	t.Cleanup(func() { close(done); srv.Close(); slow.Wait() })
	return srv.URL + "/"
}
