package runtimecache

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRuntimePlaceCopyFallback(t *testing.T) {
	r, _ := rtCreate(t)
	e, err := r.Get(rtKey("sample"), false)
	if err != nil || e == nil {
		t.Fatalf("Get = %v, %v", e, err)
	}
	e.noLink = true
	dst := t.TempDir()
	st, err := e.Place(dst)
	if err != nil {
		t.Fatal(err)
	}
	if st.Linked != 0 || st.Copied != len(rtSample.files) || st.Symlinks != len(rtSample.links) {
		t.Fatalf("stats = %+v, want every file copied", st)
	}
	rtDiff(t, "copied tree", rtListing(t, dst), rtWantListing())
	for p := range rtSample.files {
		a, _ := os.Stat(filepath.Join(e.Dir, p))
		b, _ := os.Stat(filepath.Join(dst, p))
		if os.SameFile(a, b) {
			t.Fatalf("%s was linked, want a copy", p)
		}
	}
}

// BenchmarkPlace places 1,000 small files by hardlink and by copy, side by
// side, and reports both times and their ratio.
func BenchmarkPlace(b *testing.B) {
	r := Open(b.TempDir())
	e, err := r.Create(rtKey("bench"), func(dir string) error {
		for i := range 1000 {
			p := filepath.Join(dir, fmt.Sprintf("pkg%02d", i%50), "lib", fmt.Sprintf("f%d.js", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(strings.Repeat("x", 200+i%4000)), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	out := b.TempDir()
	var linkT, copyT time.Duration
	n := 0
	place := func(noLink bool) time.Duration {
		dst := filepath.Join(out, fmt.Sprint(n))
		n++
		ee := *e
		ee.noLink = noLink
		start := time.Now()
		st, err := ee.Place(dst)
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if noLink && st.Copied != 1000 || !noLink && st.Linked != 1000 {
			b.Fatalf("stats %+v", st)
		}
		b.StopTimer()
		os.RemoveAll(dst)
		b.StartTimer()
		return d
	}
	for b.Loop() {
		linkT += place(false)
		copyT += place(true)
	}
	iters := float64(n / 2)
	b.ReportMetric(float64(linkT.Microseconds())/1000/iters, "link-ms/op")
	b.ReportMetric(float64(copyT.Microseconds())/1000/iters, "copy-ms/op")
	b.ReportMetric(float64(copyT)/float64(linkT), "copy/link")
}
