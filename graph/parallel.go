package graph

import (
	"runtime"
	"sync"

	"github.com/hashicorp/hcl/v2"

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
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				fn(i)
			}
		}()
	}
	wg.Wait()
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
