package stages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"piship.dev/piship/stages/buildstate"
	"strconv"
	"time"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/payload"
)

// ReleaseInputs is the first stage of a release: the same decoding, lock
// check and gates as a build, then a staging directory for the release
// (never a build stamp: a release always assembles its payload, served by
// the runtime cache unless told not to use it).
type ReleaseInputs struct{}

func (ReleaseInputs) Name() string    { return "release_inputs" }
func (ReleaseInputs) Version() string { return "1" }
func (ReleaseInputs) Doc() string {
	return "Reads distribution.hcl and piship.lock (LOCK_INVALID when stale), applies the release gates, names the release <id>-<version>-<target>, " +
		"takes created from SOURCE_DATE_EPOCH (default 0) and opens the staging directory <out>/.staging-release-<name>-*/<name>/ with an empty payload/. " +
		"With no_cache the runtime and bundle caches are replaced by a throwaway one, so npm ci and the bundler run again."
}

func (ReleaseInputs) Attrs() []Attr {
	return []Attr{
		{Name: "distribution", Type: cty.String, Required: true, Doc: "the distribution directory"},
		{Name: "out", Type: cty.String, Doc: "output directory (default: DIST/dist); releases go to <out>/releases/"},
		{Name: "channel", Type: cty.String, Doc: "update channel recorded in release.json (default stable)"},
		{Name: "no_cache", Type: cty.Bool, Doc: "ignore the runtime and bundle caches (a cold release)"},
	}
}

func (ReleaseInputs) Outputs() []Output {
	return []Output{
		{Name: "id", Type: cty.String}, {Name: "version", Type: cty.String}, {Name: "command", Type: cty.String},
		{Name: "name", Type: cty.String, Doc: "<id>-<version>-<target>"}, {Name: "target", Type: cty.String},
		{Name: "dir", Type: cty.String, Doc: "absolute distribution directory"}, {Name: "runtime_dir", Type: cty.String},
		{Name: "entry", Type: cty.String}, {Name: "bundle", Type: cty.Bool}, {Name: "strip", Type: cty.Bool},
		{Name: "platform", Type: cty.String}, {Name: "arch", Type: cty.String},
		{Name: "install_key", Type: cty.String}, {Name: "bundle_key", Type: cty.String}, {Name: "bundle_cached", Type: cty.Bool},
		{Name: "cache_home", Type: cty.String, Doc: "runtime cache home to use (empty: PISHIP_CACHE_HOME)"},
		{Name: "staging", Type: cty.String, Doc: "staging root, removed unless published"},
		{Name: "release_dir", Type: cty.String, Doc: "<staging>/<name>"}, {Name: "payload", Type: cty.String, Doc: "<release_dir>/payload"},
		{Name: "releases", Type: cty.String, Doc: "<out>/releases"},
		{Name: "created", Type: cty.String, Doc: "RFC 3339 time from SOURCE_DATE_EPOCH"}, {Name: "epoch", Type: cty.Number},
		{Name: "channel", Type: cty.String}, {Name: "lock_sha256", Type: cty.String},
		{Name: "runtime_package", Type: cty.String}, {Name: "runtime_version", Type: cty.String},
	}
}

// SourceDateEpoch reads SOURCE_DATE_EPOCH (seconds; default 0).
func SourceDateEpoch(getenv func(string) string) (int64, error) {
	v := getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("CONFIG_INVALID: SOURCE_DATE_EPOCH=%q is not a number of seconds since 1970", v)
	}
	return n, nil
}

// Run implements Kind.
func (ReleaseInputs) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	st, err := buildstate.Load(ctx, Resolve(inv.Dir, stringOr(inv.Get("distribution"), "")))
	if err != nil {
		return nil, err
	}
	d := st.Dist
	epoch, err := SourceDateEpoch(inv.Getenv)
	if err != nil {
		return nil, err
	}
	target := st.Platform + "-" + st.Arch
	name := d.ID + "-" + d.Version + "-" + target
	out := stringOr(inv.Get("out"), "")
	if out == "" {
		out = filepath.Join(d.Dir, "dist")
	} else {
		out = Resolve(inv.Dir, out)
	}
	channel := stringOr(inv.Get("channel"), "stable")
	stg, err := payload.Begin(ctx, out, "release-"+name)
	if err != nil {
		return nil, err
	}
	releaseDir := filepath.Join(stg.Dir, name)
	payloadDir := filepath.Join(releaseDir, "payload")
	if err := os.MkdirAll(payloadDir, 0o755); err != nil {
		return nil, err
	}
	cacheHome := ""
	noCache := !inv.Get("no_cache").IsNull() && inv.Get("no_cache").True()
	if noCache {
		cacheHome = filepath.Join(stg.Dir, ".no-cache")
	}
	return map[string]cty.Value{
		"id": cty.StringVal(d.ID), "version": cty.StringVal(d.Version), "command": cty.StringVal(d.Command),
		"name": cty.StringVal(name), "target": cty.StringVal(target),
		"dir": cty.StringVal(d.Dir), "runtime_dir": cty.StringVal(st.RuntimeDir), "entry": cty.StringVal(d.Runtime.Entry),
		"bundle": cty.BoolVal(d.Release.Bundle), "strip": cty.BoolVal(d.Release.Strip),
		"platform": cty.StringVal(st.Platform), "arch": cty.StringVal(st.Arch),
		"install_key": cty.StringVal(st.InstallKey), "bundle_key": cty.StringVal(st.BundleKey),
		"bundle_cached": cty.BoolVal(!noCache && bundleCached(inv, st)),
		"cache_home":    cty.StringVal(cacheHome), "staging": cty.StringVal(stg.Dir),
		"release_dir": cty.StringVal(releaseDir), "payload": cty.StringVal(payloadDir),
		"releases": cty.StringVal(filepath.Join(out, "releases")),
		"created":  cty.StringVal(time.Unix(epoch, 0).UTC().Format(time.RFC3339)), "epoch": cty.NumberIntVal(epoch),
		"channel": cty.StringVal(channel), "lock_sha256": cty.StringVal(sha256Hex(st.LockBytes)),
		"runtime_package": cty.StringVal(st.RuntimePackage), "runtime_version": cty.StringVal(st.RuntimeVersion),
	}, nil
}
