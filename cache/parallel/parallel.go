// Package parallel is piship's one parallel for-each: a fixed number of
// workers, on golang.org/x/sync/errgroup, taking the indexes of a slice in
// order and stopping at the first error or when the context ends. It
// lives under cache/ because the cache uses it and may import nothing
// under stages/.
package parallel

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// ForEach calls fn(i) for every i in [0, n) on up to workers goroutines
// (one runs the calls inline). After the first error, or once ctx ends,
// no further call starts; ForEach waits for those running and returns
// the first error (ctx.Err() when the context ended first).
func ForEach(ctx context.Context, n, workers int, fn func(i int) error) error {
	return ForEachWorker(ctx, n, workers, func() func(i int) error { return fn })
}

// ForEachWorker is ForEach where every worker first calls newWorker for a
// fn of its own (holding, say, a buffer only that worker uses).
func ForEachWorker(ctx context.Context, n, workers int, newWorker func() func(i int) error) error {
	workers = min(workers, n)
	if workers <= 1 {
		if n <= 0 {
			return nil
		}
		fn := newWorker()
		for i := range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		g      errgroup.Group
		next   atomic.Int64
		failed atomic.Bool
	)
	for range workers {
		g.Go(func() error {
			fn := newWorker()
			for !failed.Load() {
				if err := ctx.Err(); err != nil {
					failed.Store(true)
					return err
				}
				i := int(next.Add(1) - 1)
				if i >= n {
					return nil
				}
				if err := fn(i); err != nil {
					failed.Store(true)
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}
