package main

import (
	"fmt"
	"time"

	"piship.dev/piship/cache"
)

func cmdCache(e *env, args []string) int {
	if len(args) == 0 || args[0] != "prune" {
		return usageErr(e, "usage: piship cache prune [--max-size SIZE] [--max-age AGE]")
	}
	fs := newFlags(e, "cache prune")
	maxSize := fs.String("max-size", "", "keep at most this much (e.g. 2GiB, 500MB)")
	maxAge := fs.String("max-age", "", "remove entries unused for longer (e.g. 30d, 12h)")
	if _, err := parseInterleaved(fs, args[1:]); err != nil {
		return flagErr(err)
	}
	var size int64
	var age time.Duration
	if *maxSize != "" {
		s, err := cache.ParseSize(*maxSize)
		if err != nil {
			return usageErr(e, "--max-size: %v", err)
		}
		size = s
	}
	home, err := cache.Home(e.getenv)
	if err != nil {
		return usageErr(e, "CONFIG_UNAVAILABLE: %v", err)
	}
	a := cache.OpenActions(home)
	if *maxAge != "" {
		d, err := cache.ParseAge(*maxAge)
		if err != nil {
			return usageErr(e, "--max-age: %v", err)
		}
		age = d
	}
	rep, err := a.Prune(size, age)
	if err != nil {
		fmt.Fprintf(e.stderr, "piship: cache prune: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(e.stdout, "cache: %d entries, removed %d, %s -> %s\n", rep.Entries, rep.Removed, humanBytes(rep.BytesBefore), humanBytes(rep.BytesAfter))
	// The store's objects nothing links any more (doctor does the same for
	// one installation; after the last uninstall only this reaches them).
	store, err := cache.OpenStore(e.getenv)
	if err != nil {
		fmt.Fprintf(e.stderr, "piship: cache prune: %v\n", err)
		return exitFailed
	}
	if store != nil {
		g, err := store.GC(time.Now().Add(time.Minute), cache.StoreGrace)
		if err != nil {
			fmt.Fprintf(e.stderr, "piship: cache prune: store %s: %v\n", store.Dir(), err)
			return exitFailed
		}
		fmt.Fprintf(e.stdout, "store: %d objects, removed %d no longer linked (%s)\n", g.Objects, g.Removed, humanBytes(g.Bytes))
	}
	return exitOK
}
