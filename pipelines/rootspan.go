package pipelines

import (
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
		if in, ok := releaseInputs.from(out); ok {
			add(tracing.AttrDistribution, in.ID)
			add(tracing.AttrVersion, in.Version)
			add(tracing.AttrReleaseName, in.Name)
		}
		if arc, ok := releaseArchive.from(out); ok {
			add(tracing.AttrArchiveSHA256, arc.SHA256)
		}
	}
	return kv
}
