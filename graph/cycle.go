package graph

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// checkCycles finds strongly connected components with Tarjan's algorithm
// and reports each cycle once, starting at its earliest-declared stage, with
// the position of every reference that closes it.
func (g *Graph) checkCycles() hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, scc := range g.tarjan() {
		if len(scc) == 1 && !selfLoop(scc[0]) {
			continue
		}
		diags = append(diags, g.cycleDiag(scc))
	}
	return sortDiags(diags)
}

func selfLoop(s *Stage) bool {
	for _, d := range s.DepStages {
		if d == s {
			return true
		}
	}
	return false
}

// tarjan returns the strongly connected components of the "depends on"
// relation. It is iterative so a 10,000-stage chain does not recurse deeply.
func (g *Graph) tarjan() [][]*Stage {
	n := len(g.Stages)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []*Stage
	var sccs [][]*Stage
	next := 0
	type frame struct {
		s *Stage
		i int // next dependency to visit
	}
	for _, root := range g.Stages {
		if index[root.Index] >= 0 {
			continue
		}
		call := []frame{{s: root}}
		index[root.Index], low[root.Index] = next, next
		next++
		stack = append(stack, root)
		onStack[root.Index] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.s
			if f.i < len(v.DepStages) {
				w := v.DepStages[f.i]
				f.i++
				if index[w.Index] < 0 {
					index[w.Index], low[w.Index] = next, next
					next++
					stack = append(stack, w)
					onStack[w.Index] = true
					call = append(call, frame{s: w})
				} else if onStack[w.Index] && index[w.Index] < low[v.Index] {
					low[v.Index] = index[w.Index]
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].s
				if low[v.Index] < low[p.Index] {
					low[p.Index] = low[v.Index]
				}
			}
			if low[v.Index] == index[v.Index] {
				var scc []*Stage
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w.Index] = false
					scc = append(scc, w)
					if w == v {
						break
					}
				}
				sccs = append(sccs, scc)
			}
		}
	}
	return sccs
}

// cycleDiag describes one cycle inside a component: the shortest path from
// the earliest-declared stage back to itself, following dependencies in
// declaration order, so the rotation and the path never depend on map order.
func (g *Graph) cycleDiag(scc []*Stage) *hcl.Diagnostic {
	in := map[*Stage]bool{}
	start := scc[0]
	for _, s := range scc {
		in[s] = true
		if s.Index < start.Index {
			start = s
		}
	}
	// BFS over dependency edges from start until an edge returns to start.
	prev := map[*Stage]*Edge{}
	queue := []*Stage{start}
	var closing *Edge
	for len(queue) > 0 && closing == nil {
		v := queue[0]
		queue = queue[1:]
		for _, e := range v.Deps {
			w := e.From
			if !in[w] {
				continue
			}
			if w == start {
				closing = &Edge{From: w, To: v, Range: e.Range, Data: e.Data, Via: e.Via}
				break
			}
			if _, seen := prev[w]; !seen {
				prev[w] = e
				queue = append(queue, w)
			}
		}
	}
	// Rebuild the path start -> ... -> last -> start.
	var path []*Edge
	for v := closing.To; v != start; {
		e := prev[v]
		path = append([]*Edge{e}, path...)
		v = e.To
	}
	path = append(path, closing)

	names := []string{start.Name}
	var lines []string
	for _, e := range path {
		names = append(names, e.From.Name)
		how := "refers to"
		if !e.Data {
			how = "depends_on"
		}
		line := fmt.Sprintf("  stage %q %s stage %q at %s", e.To.Name, how, e.From.Name, fmtPos(e.Range))
		if len(e.Via) > 0 {
			line += ", through " + strings.Join(e.Via, ", then ")
		}
		lines = append(lines, line)
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Dependency cycle",
		Detail: fmt.Sprintf("These stages depend on each other, so none of them can start: %s.\n%s\nRemove one of these references to break the cycle.",
			strings.Join(names, " -> "), strings.Join(lines, "\n")),
		Subject: path[0].Range.Ptr(),
	}
}
