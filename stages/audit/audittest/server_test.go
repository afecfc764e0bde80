package audittest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestServer(t *testing.T) {
	s := NewServer(t)
	s.AddPackage(Package{Name: "@scope/pkg", Version: "1.0.0", Integrity: "sha512-AA=="})
	s.AddAdvisory("@scope/pkg", Advisory{ID: 7, Severity: "low", VulnerableVersions: "<2.0.0"})

	get := func(path, accept string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.URL+path, nil)
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("@scope%2fpkg", "application/vnd.npm.install-v1+json")
	if code != 200 || !strings.Contains(body, `"signatures":[{"keyid":"`+s.KeyID) || strings.Contains(body, `"time"`) {
		t.Errorf("abbreviated packument %d %s", code, body)
	}
	if code, body := get("@scope%2fpkg", "application/json"); code != 200 || !strings.Contains(body, `"time":{"1.0.0":"2024-01-01T00:00:00Z"}`) || s.FullPackumentRequests() != 1 {
		t.Errorf("full packument %d %s", code, body)
	}
	if code, _ := get("nothing", ""); code != 404 {
		t.Errorf("unknown package: %d", code)
	}
	if code, body := get("-/npm/v1/keys", ""); code != 200 || !strings.Contains(body, `"expires":null`) || !strings.Contains(body, `"keytype":"ecdsa-sha2-nistp256"`) {
		t.Errorf("keys %d %s", code, body)
	}

	post := func(gz bool) (int, string) {
		t.Helper()
		var b bytes.Buffer
		var w io.Writer = &b
		var zw *gzip.Writer
		if gz {
			zw = gzip.NewWriter(&b)
			w = zw
		}
		json.NewEncoder(w).Encode(map[string][]string{"@scope/pkg": {"1.0.0"}, "other": {"1.0.0"}})
		if zw != nil {
			zw.Close()
		}
		req, _ := http.NewRequest("POST", s.URL+"-/npm/v1/security/advisories/bulk", &b)
		if gz {
			req.Header.Set("Content-Encoding", "gzip")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	if code, body := post(true); code != 200 || strings.TrimSpace(body) != `{"@scope/pkg":[{"id":7,"title":"","severity":"low","vulnerable_versions":"<2.0.0","cwe":null}]}` {
		t.Errorf("bulk %d %s", code, body)
	}
	if code, _ := post(false); code != 400 {
		t.Errorf("uncompressed bulk body: %d", code)
	}
	if reqs := s.BulkRequests(); len(reqs) != 1 || len(reqs[0]) != 2 {
		t.Errorf("bulk requests %v", reqs)
	}

	// FailNext counts down, then answers properly.
	s.FailNext(Keys, ServerError, 2)
	for i, want := range []int{500, 500, 200} {
		if code, _ := get("-/npm/v1/keys", ""); code != want {
			t.Errorf("keys answer %d: %d, want %d", i, code, want)
		}
	}
	if n := s.Requests(Keys); n != 4 {
		t.Errorf("%d keys requests", n)
	}
}
