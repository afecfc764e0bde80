package stages

import "piship.dev/piship/stages/stage"

// Temporary while the kinds move to typed declarations (issue 12).
type (
	Attr       = stage.Attr
	Output     = stage.Output
	Kind       = stage.Kind
	Invocation = stage.Invocation
	CacheSpec  = stage.CacheSpec
)

var Resolve = stage.Resolve
