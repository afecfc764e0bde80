package e2e

import (
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// killAfter starts piship with args and kills it (SIGKILL) after d.
func (w *consumerWorld) killAfter(d time.Duration, args ...string) {
	cmd := exec.Command(w.piship, args...)
	cmd.Env = w.env
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	time.Sleep(d)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
}

// launchOK runs the command shim and fails the test unless the installed
// release starts and answers.
func (w *consumerWorld) launchOK(when string) {
	w.t.Helper()
	cmd := exec.Command(filepath.Join(w.bin, "hello"), "--version")
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1.0.0" {
		w.t.Fatalf("%s: the installed release does not launch: %v\n%s", when, err, out)
	}
}

// Killing install and update at random moments (50 times each) never
// breaks the installed release, and the next attempt succeeds. Every other
// trial runs with the content-addressed store on (objects kept and linked
// while the kill comes).
func TestKilledInstallAndUpdateKeepThePreviousRelease(t *testing.T) {
	w := newConsumerWorld(t)
	base := w.env
	rng := rand.New(rand.NewPCG(11, uint64(time.Now().UnixNano())))
	for _, op := range []string{"install", "update"} {
		t.Run(op, func(t *testing.T) {
			w.t = t
			for trial := range 50 {
				w.env = append(base[:len(base):len(base)], "PISHIP_STORE="+map[bool]string{true: "hardlink", false: "off"}[trial%2 == 1])
				// A fresh installation of 1.0.0, so the interrupted
				// operation has real work (download, extraction, commit).
				w.try("uninstall", "hello")
				w.run("install", w.release["1.0.0"])
				args := []string{"install", w.release["1.1.0"]}
				if op == "update" {
					args = []string{"update", "hello", "--from", w.chanDir}
				}
				delay := time.Duration(rng.IntN(120)) * time.Millisecond
				w.killAfter(delay, args...)
				w.launchOK(op + " killed after " + delay.String())
				if out, err := w.try(args...); err != nil {
					t.Fatalf("trial %d: %s after a kill at %v: %v\n%s", trial, op, delay, err, out)
				}
				if a := w.active(); a != "1.1.0" {
					t.Fatalf("trial %d: active %s after the retried %s", trial, a, op)
				}
				w.launchOK("after the retried " + op)
			}
			// What the kills left aside is reclaimable.
			w.run("doctor", "hello")
		})
	}
}

// Launches running while updates and reinstalls switch the active release
// never see a half-written version (with the store on, so the versions
// share linked files).
func TestLaunchesDuringUpdates(t *testing.T) {
	w := newConsumerWorld(t)
	w.env = append(w.env, "PISHIP_STORE=hardlink")
	w.run("install", w.release["1.0.0"])
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	launches := 0
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				cmd := exec.Command(filepath.Join(w.bin, "hello"), "--version")
				cmd.Env = w.env
				out, err := cmd.CombinedOutput()
				mu.Lock()
				launches++
				if err != nil || strings.TrimSpace(string(out)) != "1.0.0" {
					failures = append(failures, string(out)+" "+errString(err))
				}
				mu.Unlock()
			}
		}()
	}
	enough := func() bool { mu.Lock(); defer mu.Unlock(); return launches >= 30 }
	for cycle := 0; cycle < 40 && !enough(); cycle++ {
		w.run("update", "hello", "--from", w.chanDir)
		w.run("rollback", "hello")
		w.run("install", w.release["1.1.0"])
		w.run("install", w.release["1.0.0"])
	}
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d launches failed during updates, e.g. %s", len(failures), launches, failures[0])
	}
	if launches < 30 {
		t.Fatalf("only %d launches ran", launches)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
