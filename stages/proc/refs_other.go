//go:build !linux

package proc

// Referencing cannot tell without starting a process here: ok is false.
func Referencing([]string) (refs []Ref, ok bool) { return nil, false }
