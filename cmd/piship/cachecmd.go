package main

import (
	"fmt"
	"time"

	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/pipelines"

	"github.com/spf13/cobra"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/contentstore"
	homes "piship.dev/piship/stages/home"
	"piship.dev/piship/stages/stage/errcode"
)

func cacheCmd(e *cli.Env) *cobra.Command {
	c := &cobra.Command{
		Use:     "cache COMMAND",
		GroupID: cli.GroupPipeline,
		Short:   "manage the action cache (cache prune)",
		Long:    "Manages the action cache under PISHIP_CACHE_HOME and the content-addressed store.",
		Example: "  piship cache prune --max-size 2GiB --max-age 30d",
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for %q%s", args[0], c.CommandPath(), cli.SuggestFor(c, args))
			}
			return fmt.Errorf("%s needs a command: usage: piship cache prune [flags]", c.CommandPath())
		},
	}
	var maxSize, maxAge string
	var asJSON bool
	prune := &cobra.Command{
		Use:   "prune",
		Short: "prune the action cache (and collect the content-addressed store's unused objects)",
		Long: `Removes action cache entries unused for longer than --max-age and, oldest first, whatever
exceeds --max-size; then removes the store objects nothing has linked for 24 h.`,
		Example: `  piship cache prune
  piship cache prune --max-size 2GiB --max-age 30d`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runCachePrune(e, maxSize, maxAge, asJSON))
		},
	}
	prune.Flags().StringVar(&maxSize, "max-size", "", "keep at most `SIZE` (e.g. 2GiB, 500MB)")
	prune.Flags().StringVar(&maxAge, "max-age", "", "remove entries unused for longer than `AGE` (e.g. 30d, 12h)")
	c.AddCommand(prune)
	cli.JSONFlag(prune, &asJSON)
	return c
}

func runCachePrune(e *cli.Env, maxSize, maxAge string, asJSON bool) int {
	var size int64
	var age time.Duration
	if maxSize != "" {
		s, err := cache.ParseSize(maxSize)
		if err != nil {
			return cli.UsageErr(e, errcode.ConfigInvalid, "--max-size: %v", err)
		}
		size = s
	}
	home, err := cache.Home(e.Getenv)
	if err != nil {
		return cli.Fail(e, errcode.Newf(errcode.ConfigUnavailable, "%v", err))
	}
	a := cache.OpenActions(home)
	if maxAge != "" {
		d, err := cache.ParseAge(maxAge)
		if err != nil {
			return cli.UsageErr(e, errcode.ConfigInvalid, "--max-age: %v", err)
		}
		age = d
	}
	rep, err := a.Prune(size, age)
	if err != nil {
		fmt.Fprintf(e.Stderr, "piship: cache prune: %v\n", err)
		return cli.ExitFailed
	}
	var gc *contentstore.GCResult
	if !asJSON {
		fmt.Fprintf(e.Stdout, "cache: %s, removed %d, %s -> %s\n", canon.Count(rep.Entries, "entry", "entries"), rep.Removed, pipelines.HumanBytes(rep.BytesBefore), pipelines.HumanBytes(rep.BytesAfter))
	}
	// The store's objects nothing links any more (doctor does the same for
	// one installation; after the last uninstall only this reaches them).
	store, err := homes.OpenStore(e.Getenv)
	if err != nil {
		fmt.Fprintf(e.Stderr, "piship: cache prune: %v\n", err)
		return cli.ExitFailed
	}
	if store != nil {
		g, err := store.GC(time.Now().Add(time.Minute), contentstore.Grace)
		if err != nil {
			fmt.Fprintf(e.Stderr, "piship: cache prune: store %s: %v\n", store.Dir(), err)
			return cli.ExitFailed
		}
		gc = &g
		if !asJSON {
			fmt.Fprintf(e.Stdout, "store: %s, removed %d no longer linked (%s)\n", canon.Count(g.Objects, "object"), g.Removed, pipelines.HumanBytes(g.Bytes))
		}
	}
	if asJSON {
		cli.PrintJSON(e, CachePruneJSON(rep, gc))
	}
	return cli.ExitOK
}
