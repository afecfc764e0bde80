// Package report is the footprint report, metadata/pi-package-footprint.json
// of a payload (written by stages/footprint, read back by the doctor): each
// vendored Pi package's closure decision with its findings, each shared
// dependency with its places and the files it saved, the copies kept by
// reason, and the two lines a build prints and doctor shows. It links
// nothing but the standard library, so readers do not pay for esbuild.
package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"piship.dev/piship/cache/canon"
)

// Name is the report's path in a payload; Schema its schema.
const (
	Name   = "metadata/pi-package-footprint.json"
	Schema = "piship-pi-package-footprint/v1"
)

// Closure is one package's closure decision.
type Closure struct {
	Package  string   `json:"package"`
	Decision string   `json:"decision"` // "vendored" (kept as files) or "bundled"
	Findings []string `json:"findings"`
	// Modules is how many modules the closure has (its import graph; 0
	// when an entry is TypeScript, which refuses it without one);
	// a bundled one wrote Written files (chunks and entry outputs under
	// <package>/.bundle) and removed Removed modules.
	Modules int `json:"modules,omitempty"`
	// Detail is esbuild's first error when the import graph could not be
	// made (the import that does not resolve).
	Detail  string `json:"detail,omitempty"`
	Written int    `json:"written,omitempty"`
	Removed int    `json:"removed,omitempty"`
	// Pretranspiled is how many TypeScript modules were written as
	// JavaScript beside them (package pretranspile = true).
	Pretranspiled int `json:"pretranspiled,omitempty"`
}

// Shared is one shared dependency.
type Shared struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Dir     string   `json:"dir"`
	Places  []string `json:"places"`
	// Files is how many files the shared directory holds, Saved how many
	// fewer files the payload has for it.
	Files int `json:"files"`
	Saved int `json:"saved"`
}

// Report is metadata/pi-package-footprint.json.
type Report struct {
	Schema   string    `json:"schema"`
	Sharing  bool      `json:"sharing"`
	Closures []Closure `json:"closures"`
	Shared   []Shared  `json:"shared"`
	// Kept counts the dependency copies kept in place, by reason.
	Kept       map[string]int `json:"kept"`
	FilesSaved int            `json:"filesSaved"`
}

// Lines are the two lines a build prints about it.
func (r *Report) Lines() []string {
	var vend []string
	bundled := 0
	for _, c := range r.Closures {
		if c.Decision == "bundled" {
			bundled++
			continue
		}
		vend = append(vend, c.Package+" ("+strings.Join(c.Findings, ", ")+")")
	}
	l1 := fmt.Sprintf("Pi package closures: %d of %d bundled", bundled, len(r.Closures))
	if len(vend) > 0 {
		l1 += "; vendored: " + strings.Join(vend, "; ")
	}
	var kept []string
	for _, k := range slices.SortedFunc(maps.Keys(r.Kept), func(a, b string) int {
		if c := r.Kept[b] - r.Kept[a]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	}) {
		kept = append(kept, fmt.Sprintf("%s %d", k, r.Kept[k]))
	}
	l2 := fmt.Sprintf("Pi package dependencies: %d shared (%s)", len(r.Shared), canon.Count(r.FilesSaved, "fewer file"))
	if !r.Sharing {
		l2 = "Pi package dependencies: sharing off"
	}
	if len(kept) > 0 {
		l2 += "; copies kept: " + strings.Join(kept, ", ")
	}
	return []string{l1, l2}
}
