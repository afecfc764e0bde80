package parallel

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestForEachCallsEveryIndexOnce(t *testing.T) {
	for _, workers := range []int{0, 1, 3, 64} {
		const n = 1000
		var seen [n]atomic.Int32
		if err := ForEach(context.Background(), n, workers, func(i int) error { seen[i].Add(1); return nil }); err != nil {
			t.Fatal(err)
		}
		for i := range seen {
			if c := seen[i].Load(); c != 1 {
				t.Fatalf("workers %d: index %d called %d times", workers, i, c)
			}
		}
	}
	if err := ForEach(context.Background(), 0, 4, func(int) error { t.Fatal("called"); return nil }); err != nil {
		t.Fatal(err)
	}
}

func TestForEachStops(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int32
	err := ForEach(context.Background(), 10000, 4, func(i int) error {
		calls.Add(1)
		if i == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || calls.Load() > 1000 {
		t.Fatalf("err %v after %d calls", err, calls.Load())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, workers := range []int{1, 4} {
		if err := ForEach(ctx, 10, workers, func(int) error { t.Fatal("called"); return nil }); !errors.Is(err, context.Canceled) {
			t.Fatalf("workers %d: err %v", workers, err)
		}
	}
}

func TestForEachWorkerState(t *testing.T) {
	var mu sync.Mutex
	workers := 0
	err := ForEachWorker(context.Background(), 100, 4, func() func(int) error {
		mu.Lock()
		workers++
		mu.Unlock()
		buf := make([]byte, 1)
		return func(i int) error { buf[0] = byte(i); return nil }
	})
	if err != nil || workers < 1 || workers > 4 {
		t.Fatalf("err %v, %d workers", err, workers)
	}
}
