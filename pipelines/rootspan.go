package pipelines

import (
	"maps"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"piship.dev/piship/engine"
	"piship.dev/piship/tracing"
)

// rootAttrs are the root span's attributes naming what the run produced,
// read from the built-in pipelines' typed stage outputs: the distribution
// and version (build, release), the release name and archive digest
// (release). A stage that did not succeed contributes nothing, and other
// pipelines get none, so a reader of the trace never sees a guess.
func rootAttrs(pipeline string, res *engine.Result) []attribute.KeyValue {
	out := &outputs{res: res}
	var kv []attribute.KeyValue
	add := func(key, v string) {
		if v != "" {
			kv = append(kv, attribute.String(key, v))
		}
	}
	switch pipeline {
	case "build":
		if in, ok := buildInputs.from(out); ok {
			add(tracing.AttrDistribution, in.ID)
			add(tracing.AttrVersion, in.Version)
		}
	case "release":
		// One name and digest per target, space-separated in target
		// order (one target: as one release has always had them).
		if in, ok := releaseInputs.from(out); ok {
			add(tracing.AttrDistribution, in.ID)
			add(tracing.AttrVersion, in.Version)
			var names []string
			byTarget := in.targetNames()
			for _, t := range slices.Sorted(maps.Keys(byTarget)) {
				names = append(names, byTarget[t])
			}
			add(tracing.AttrReleaseName, strings.Join(names, " "))
		}
		arcs := releaseArchive.each(out)
		var sums []string
		for _, t := range slices.Sorted(maps.Keys(arcs)) {
			sums = append(sums, arcs[t].SHA256)
		}
		add(tracing.AttrArchiveSHA256, strings.Join(sums, " "))
	}
	return kv
}
