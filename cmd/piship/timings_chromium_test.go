package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// chromium is Debian's headless browser; make test installs it when
// missing (as it builds Jaeger once), so a machine without it is not
// ready to run the tests rather than a reason to skip one.
const chromium = "chromium"

// The timings page of a hello release, opened in a real browser: one bar
// per stage the run's timing line lists, the bars of its critical path
// marked, and no request leaves the page (the browser's only proxy
// counts connections, and none may arrive).
func TestTimingsReportInChromium(t *testing.T) {
	browser, err := exec.LookPath(chromium)
	if err != nil {
		t.Fatalf("%s is not installed (%v): this test opens the timings page in it; run `apt-get install -y chromium` (make test does when it is missing)", chromium, err)
	}
	env := buildEnv(t)
	env["PISHIP_DEBUG_TIMING"] = "1"
	dir := copyDist(t, "hello")
	page := filepath.Join(t.TempDir(), "timings.html")
	trace := filepath.Join(t.TempDir(), "trace.json")
	stderr := mustRelease(t, env, dir, "--timings", page, "--trace-file", trace)
	timing := timingLine(t, stderr)
	if len(timing.Stages) < 5 || len(timing.CriticalPath) == 0 {
		t.Fatalf("a hello release with %d stages and critical path %v", len(timing.Stages), timing.CriticalPath)
	}

	// Nothing in the markup may point outside the file.
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=|url\(|@import|https?://`).Find(html); m != nil {
		t.Errorf("the page refers to something outside it: %q", m)
	}

	proxy, requests := countingProxy(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), // its own profile: parallel browsers must not share one
		"--proxy-server=http://"+proxy, "--proxy-bypass-list=<-loopback>",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--dump-dom", "file://"+page)
	var browserErr strings.Builder
	cmd.Stderr = &browserErr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s --dump-dom: %v\n%s", browser, err, browserErr.String())
	}
	if hosts := requests(); len(hosts) > 0 {
		t.Errorf("the page made network requests to %v", hosts)
	}

	var bars, critical []string
	for _, m := range regexp.MustCompile(`<rect class="bar [^"]*"[^>]* data-stage="([^"]*)"[^>]* data-critical="(true|false)"`).FindAllSubmatch(dom, -1) {
		name := unescapeHTML(string(m[1]))
		bars = append(bars, name)
		if string(m[2]) == "true" {
			critical = append(critical, name)
		}
	}
	var want []string
	for _, s := range timing.Stages {
		want = append(want, s.Name)
	}
	if !slices.Equal(bars, want) {
		t.Errorf("bars in the browser's DOM:\n  %s\nwant one per stage of the timing line, in its order:\n  %s", strings.Join(bars, "\n  "), strings.Join(want, "\n  "))
	}
	if len(critical) == 0 || !sameSet(critical, timing.CriticalPath) {
		t.Errorf("critical bars %v, want the timing line's critical path %v", critical, timing.CriticalPath)
	}
	if !strings.Contains(string(dom), "pipeline release") || !strings.Contains(string(dom), `id="timing"`) {
		t.Errorf("the DOM lacks the header or the timing table")
	}

	// The same page from the trace file (the run's trace ID and all).
	out := filepath.Join(t.TempDir(), "again.html")
	if code, _, stderr := piship(t, nil, "timings", trace, "-o", out); code != exitOK {
		t.Fatalf("timings: exit %d\n%s", code, stderr)
	}
	if again, _ := os.ReadFile(out); string(again) != string(html) {
		t.Errorf("piship timings made a different page from the trace file than --timings did")
	}
}

// timingLine decodes the PISHIP_DEBUG_TIMING=1 JSON line of stderr.
func timingLine(t *testing.T, stderr string) (doc struct {
	Stages []struct {
		Name string `json:"name"`
	} `json:"stages"`
	CriticalPath []string `json:"criticalPath"`
}) {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, `{"schema":"piship-timing/v1"`) {
			if err := json.Unmarshal([]byte(l), &doc); err != nil {
				t.Fatal(err)
			}
			return doc
		}
	}
	t.Fatalf("no timing line on stderr:\n%s", stderr)
	return doc
}

// browserHosts are the hosts headless Chromium contacts on its own,
// whatever the page (component updates, sign-in), which its flags do not
// all turn off; a page's asset elsewhere (a CDN, a font service) counts.
var browserHosts = map[string]bool{"update.googleapis.com": true, "accounts.google.com": true,
	"clients2.google.com": true, "redirector.gvt1.com": true}

// countingProxy listens on loopback as the browser's only proxy and
// records the host of every request that is not the browser's own.
func countingProxy(t *testing.T) (string, func() []string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var hosts []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			// "CONNECT host:443 HTTP/1.1" or "GET http://host/path HTTP/1.1"
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			host := "unreadable request " + strconv.Quote(line)
			if f := strings.Fields(line); len(f) >= 2 {
				target := f[1]
				if u, err := url.Parse(target); err == nil && u.Host != "" {
					target = u.Host
				}
				if h, _, err := net.SplitHostPort(target); err == nil {
					target = h
				}
				host = target
			}
			if !browserHosts[host] {
				mu.Lock()
				hosts = append(hosts, host)
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return l.Addr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(hosts)
	}
}

func unescapeHTML(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&#34;", `"`, "&quot;", `"`, "&#39;", "'").Replace(s)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
