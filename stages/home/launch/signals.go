package launch

import (
	"os"
	"os/signal"
	"sync"
)

// forwarder relays the signals this process receives to node. Signals that
// arrive before node starts are held and delivered once it has.
type forwarder struct {
	ch      chan os.Signal
	mu      sync.Mutex
	proc    *os.Process
	pending []os.Signal
	once    sync.Once
	done    chan struct{}
}

func forwardSignals() *forwarder {
	f := &forwarder{ch: make(chan os.Signal, 8), done: make(chan struct{})}
	signal.Notify(f.ch, caughtSignals...)
	go func() {
		for {
			select {
			case <-f.done:
				return
			case s := <-f.ch:
				f.mu.Lock()
				if f.proc == nil {
					f.pending = append(f.pending, s)
				} else {
					deliver(f.proc, s)
				}
				f.mu.Unlock()
			}
		}
	}()
	return f
}

func (f *forwarder) attach(p *os.Process) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.proc = p
	for _, s := range f.pending {
		deliver(p, s)
	}
	f.pending = nil
}

func (f *forwarder) stop() {
	f.once.Do(func() {
		signal.Stop(f.ch)
		close(f.done)
	})
}
