// Command crosscheck type-checks the piship module, from source, as it
// would compile for other operating systems (GOOS=windows, darwin ...),
// with every dependency and the standard library type-checked from source
// too (go/packages in LoadAllSyntax mode). It is what `make lint` runs
// instead of `GOOS=... go build ./...`: the same compile errors (types,
// undefined names, unused imports and variables, build constraints that
// leave a symbol undefined) for a fifth of the CPU, because nothing is
// optimised, generated or written.
//
//	go run . [-dir MODULE_ROOT] GOOS...
package main

import (
	"flag"
	"fmt"
	"os"

	"golang.org/x/tools/go/packages"
)

func main() {
	dir := flag.String("dir", "../..", "the module root to check")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: crosscheck [-dir MODULE_ROOT] GOOS...")
		os.Exit(2)
	}
	failed := false
	for _, goos := range flag.Args() {
		cfg := &packages.Config{
			Mode: packages.LoadAllSyntax,
			Dir:  *dir,
			Env:  append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0"),
		}
		pkgs, err := packages.Load(cfg, "./...")
		if err != nil {
			fmt.Fprintf(os.Stderr, "crosscheck GOOS=%s: %v\n", goos, err)
			os.Exit(1)
		}
		n := 0
		packages.Visit(pkgs, nil, func(p *packages.Package) {
			for _, e := range p.Errors {
				fmt.Fprintf(os.Stderr, "GOOS=%s: %s\n", goos, e)
				n++
			}
		})
		if n > 0 {
			failed = true
			continue
		}
		fmt.Printf("GOOS=%s: %d packages type-check\n", goos, len(pkgs))
	}
	if failed {
		os.Exit(1)
	}
}
