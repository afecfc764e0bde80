package graph

import (
	"context"
	"runtime"
	"sync"

	"github.com/hashicorp/hcl/v2"

	par "piship.dev/piship/cache/parallel"
	"piship.dev/piship/stages/stage"
)

// parallelFor calls fn(i) for every i in [0, n), spread over the CPUs in
// contiguous ranges. Small inputs run inline: goroutines cost more than
// they save below a few hundred items.
func parallelFor(n int, fn func(i int)) {
	workers := runtime.GOMAXPROCS(0)
	if n < 512 || workers < 2 {
		for i := range n {
			fn(i)
		}
		return
	}
	per := (n + workers - 1) / workers
	chunks := (n + per - 1) / per
	_ = par.ForEach(context.Background(), chunks, chunks, func(c int) error {
		for i := c * per; i < min((c+1)*per, n); i++ {
			fn(i)
		}
		return nil
	})
}

// kindSchema is what validation needs of a kind, computed once per parse.
type kindSchema struct {
	attrs    []stage.Attr
	body     *hcl.BodySchema
	known    map[string]bool
	required []string
}

// schemaCache memoises kind schemas; safe for concurrent use.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]*kindSchema
}

func newSchemaCache() *schemaCache { return &schemaCache{m: map[string]*kindSchema{}} }

func (c *schemaCache) get(k stage.Kind) *kindSchema {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[k.Name()]; ok {
		return s
	}
	s := &kindSchema{attrs: k.Attrs(), body: stage.Schema(k), known: map[string]bool{}}
	for _, a := range s.attrs {
		s.known[a.Name] = true
		if a.Required {
			s.required = append(s.required, a.Name)
		}
	}
	c.m[k.Name()] = s
	return s
}
