package updatesource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"piship.dev/piship/stages/updatesource/updatesourcetest"
)

// A server that never answers, stalls after the headers or trickles a byte
// a second ends the fetch with UPDATE_FAILED naming the limit that fired,
// within that limit (plus slack), for a channel file and an archive alike.
func TestSourceLimits(t *testing.T) {
	const slack = 1500 * time.Millisecond
	short := Limits{Connect: 700 * time.Millisecond, Header: 700 * time.Millisecond, Idle: 700 * time.Millisecond,
		Document: 2500 * time.Millisecond, Archive: 2500 * time.Millisecond}
	hang := func(ctx context.Context, network, addr string) (net.Conn, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Second):
			return nil, errors.New("the test dialer gave up")
		}
	}
	for _, c := range []struct {
		name    string
		mode    updatesourcetest.Mode
		dial    Dialer
		archive bool
		budget  time.Duration
		frags   []string
	}{
		{"connect", updatesourcetest.Silent, hang, false, short.Connect, []string{"connect timeout", "cannot connect to http://127.0.0.1:", "raise --timeout"}},
		{"no headers", updatesourcetest.Silent, nil, false, short.Header, []string{"sent no response headers", "header timeout", "/stable.json", "raise --timeout"}},
		{"no headers, archive", updatesourcetest.Silent, nil, true, short.Header, []string{"header timeout", "/a.tar.gz"}},
		{"stall after headers", updatesourcetest.Stall, nil, false, short.Idle, []string{"idle timeout", "sent no byte of", "after 0 bytes"}},
		// A byte a second never trips the idle timeout (here 2s, 30s by
		// default): the overall budget ends it.
		{"a byte a second", updatesourcetest.Trickle, nil, false, short.Document, []string{"overall budget", "2.5s", "a channel file", "2 bytes read", "raise --max-time"}},
		{"a byte a second, archive", updatesourcetest.Trickle, nil, true, short.Archive, []string{"overall budget", "an archive", "/a.tar.gz", "2 bytes read"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			base := updatesourcetest.Serve(t, updatesourcetest.Options{Mode: c.mode})
			limits := short
			if c.mode == updatesourcetest.Trickle {
				limits.Idle = 2 * time.Second
			}
			s, err := OpenSourceWith(base, SourceOptions{Limits: limits, Dial: c.dial})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if c.archive {
				err = s.Download(ctx, "a.tar.gz", filepath.Join(t.TempDir(), "a.tar.gz"), 100, strings.Repeat("0", 64))
			} else {
				_, err = s.Fetch(ctx, "stable.json", 0)
			}
			took := time.Since(start)
			wantErr(t, err, CodeUpdateFailed, ReasonTimeout, c.frags...)
			if took < c.budget-100*time.Millisecond || took > c.budget+slack {
				t.Errorf("ended after %v, the limit is %v", took, c.budget)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	l, err := ParseLimits("", "")
	if err != nil || l != DefaultLimits {
		t.Fatalf("defaults: %+v %v", l, err)
	}
	l, err = ParseLimits("2s", "1m")
	if err != nil || l.Connect != 2*time.Second || l.Header != 2*time.Second || l.Idle != 2*time.Second ||
		l.Document != time.Minute || l.Archive != time.Minute {
		t.Fatalf("2s, 1m: %+v %v", l, err)
	}
	for _, c := range [][3]string{
		{"abc", "", "--timeout \"abc\" is not a duration"},
		{"0s", "", "--timeout 0s is out of range"},
		{"-1s", "", "out of range"},
		{"", "25h", "--max-time 25h is out of range"},
	} {
		_, err := ParseLimits(c[0], c[1])
		wantErr(t, err, CodeConfigInvalid, "", c[2])
	}
}

// recordingDialer dials for real, recording every address it is given.
type recordingDialer struct {
	mu    sync.Mutex
	addrs []string
}

func (r *recordingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	r.mu.Lock()
	r.addrs = append(r.addrs, addr)
	r.mu.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// Plain http reaches loopback by address: a literal loopback IP, or the
// name localhost in any case with one trailing dot, dialed as 127.0.0.1
// without a lookup. Any other name is refused before anything is resolved
// or dialed, and so is a connection whose remote end is not loopback.
func TestPlainHTTPLoopbackByAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "{}") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, host := range []string{"LOCALHOST.", "localhost", "LocalHost", "127.0.0.1", "[::ffff:127.0.0.1]"} {
		rec := &recordingDialer{}
		s, err := OpenSourceWith("http://"+host+":"+port+"/", SourceOptions{Dial: rec.dial})
		if err != nil {
			t.Errorf("%s: %v", host, err)
			continue
		}
		if b, err := s.Fetch(ctx, "stable.json", 0); err != nil || string(b) != "{}" {
			t.Errorf("%s: fetch %q %v", host, b, err)
		}
		// The dialer only ever sees a literal address: nothing asked a
		// resolver for the name.
		for _, a := range rec.addrs {
			h, _, _ := net.SplitHostPort(a)
			if ip := net.ParseIP(h); ip == nil || !ip.IsLoopback() {
				t.Errorf("%s: dialed %s", host, a)
			}
		}
		if len(rec.addrs) == 0 {
			t.Errorf("%s: nothing dialed", host)
		}
	}

	// Refused names: no dial, so no lookup either.
	rec := &recordingDialer{}
	for _, host := range []string{"localhost.example", "localhost..", "127.1", "127.0.0.1.", "0x7f.0.0.1", "2130706433", "localhost-", "[fe80::1%25lo]", "[::2]"} {
		s, err := OpenSourceWith("http://"+host+":"+port+"/", SourceOptions{Dial: rec.dial})
		if s != nil {
			t.Errorf("%s accepted", host)
		}
		wantErr(t, err, CodeNetworkDenied, ReasonPolicy, "plain http to", "use https://")
	}
	if len(rec.addrs) != 0 {
		t.Errorf("refused names were dialed: %v", rec.addrs)
	}

	// [::1] is a loopback literal (where this machine has IPv6).
	if ln, err := net.Listen("tcp", "[::1]:0"); err == nil {
		srv6 := httptest.NewUnstartedServer(srv.Config.Handler)
		srv6.Listener.Close()
		srv6.Listener = ln
		srv6.Start()
		defer srv6.Close()
		s, err := OpenSourceWith(srv6.URL+"/", SourceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if b, err := s.Fetch(ctx, "stable.json", 0); err != nil || string(b) != "{}" {
			t.Errorf("[::1]: fetch %q %v", b, err)
		}
	}

	// Defence in depth: a dialer that lands anywhere but loopback (here a
	// connection whose remote address says 192.0.2.1) is refused.
	elsewhere := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return remoteConn{c}, nil
	}
	s, err := OpenSourceWith(srv.URL+"/", SourceOptions{Dial: elsewhere})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Fetch(ctx, "stable.json", 0)
	wantErr(t, err, CodeNetworkDenied, ReasonPolicy, "192.0.2.1", "not a loopback address")
}

// remoteConn claims a remote address outside loopback.
type remoteConn struct{ net.Conn }

func (remoteConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 80} }
