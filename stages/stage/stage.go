// Package stage is the contract between the engine and every stage kind: the
// Kind interface, typed configuration and output declarations, the registry
// type, cache specs and cleaners. It imports no other piship package, so the
// graph and the engine link the contract, never the kinds (see
// docs/architecture.md).
//
// A kind declares its configuration schema (attributes with cty types) and its
// typed outputs, so a pipeline can be validated before anything runs. At run
// time the engine evaluates a stage's configuration into a cty object and calls
// Run; the outputs it returns must match the declared types. Kinds may
// optionally be cacheable (Cacheable) and may release resources after a run
// (Cleaner).
package stage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Attr is one configuration attribute of a kind. Its json tags are what
// `piship stages --json` prints (docs/json.md, piship-stages/v1).
type Attr struct {
	Name     string   `json:"name"`
	Type     cty.Type `json:"type"`
	Required bool     `json:"required"`
	Doc      string   `json:"doc"`
}

// Output is one typed output of a kind, referable as stage.<name>.<output>.
type Output struct {
	Name string   `json:"name"`
	Type cty.Type `json:"type"`
	Doc  string   `json:"doc"`
}

// MarshalJSON writes the attribute with its type as HCL spells it.
func (a Attr) MarshalJSON() ([]byte, error) { return declJSON(a) }

// MarshalJSON writes the output with its type as HCL spells it.
func (o Output) MarshalJSON() ([]byte, error) { return declJSON(o) }

// declJSON marshals a declaration struct field by field in declaration order,
// a cty.Type as HCL writes it (list(string)) rather than cty's own JSON form,
// so a field added to Attr or Output reaches the JSON by its tag alone. It
// leaves <, > and & unescaped: the caller's encoder escapes them if it wants.
func declJSON(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	var b bytes.Buffer
	e := json.NewEncoder(&b) // its newlines are whitespace between tokens
	e.SetEscapeHTML(false)
	b.WriteByte('{')
	for _, f := range reflect.VisibleFields(rv.Type()) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			return nil, fmt.Errorf("stage: field %s.%s has no json name", rv.Type().Name(), f.Name)
		}
		val := rv.FieldByIndex(f.Index).Interface()
		if t, ok := val.(cty.Type); ok {
			val = typeexpr.TypeString(t)
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		if err := e.Encode(name); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := e.Encode(val); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Kind is a stage kind: a schema, typed outputs and the code that runs it.
type Kind interface {
	// Name is the kind's name as written in `stage "<kind>" "<name>"`.
	Name() string
	// Version changes whenever the kind's behaviour changes; it is part of
	// every cache key of the kind.
	Version() string
	// Doc is a one-paragraph description for `piship stages`.
	Doc() string
	Attrs() []Attr
	Outputs() []Output
	// Run executes the stage. inv.Config holds the evaluated configuration;
	// the returned map must hold every declared output.
	Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error)
}

// Cacheable is implemented by kinds whose results can be served from the
// action cache. CacheSpec returns ok=false when this configuration must not be
// cached (for example exec with cache = false).
type Cacheable interface {
	CacheSpec(inv *Invocation) (spec CacheSpec, ok bool, err error)
}

// CacheSwitch is implemented by cacheable kinds whose caching one boolean
// attribute turns on (exec's cache); CacheSwitch names it, "" when there is
// none. A stage whose switch is unset or false is not cacheable whatever
// its other attributes, so a plan can say so while they still wait on
// other stages' outputs.
type CacheSwitch interface {
	CacheSwitch() string
}

// CacheSpec says what decides a cacheable stage's result besides its kind and
// configuration, and which files it produces.
type CacheSpec struct {
	// Inputs are files whose contents are part of the key, relative to Dir
	// or absolute.
	Inputs []string
	// Outputs are files the stage writes; a cache hit restores them.
	Outputs []string
	// Dir is the directory relative paths are resolved against.
	Dir string
}

// Cleaner is implemented by kinds that must release something after a run,
// whether it succeeded, failed or was cancelled.
type Cleaner interface {
	Cleanup(ctx context.Context, inv *Invocation) error
}

// Invocation is what a stage receives when it runs.
type Invocation struct {
	Pipeline string
	Name     string
	// Dir is the directory of the pipeline file; relative paths in the
	// configuration are resolved against it.
	Dir string
	// Config is the evaluated configuration: an object with one attribute
	// per declared Attr (null where optional and unset).
	Config cty.Value
	// Log receives the stage's human-readable messages; never nil.
	Log io.Writer
	// Progress receives its lines about what it is doing (extracting,
	// activated): Log, or io.Discard when the run prints no progress
	// (engine.Options.QuietProgress: a consumer command prints its own
	// result). Warnings go to Log. nil (a kind run outside the engine)
	// means Log.
	Progress io.Writer
	// Getenv reads the run's environment (PISHIP_CACHE_HOME ...); never
	// nil. Kinds use it instead of os.Getenv so a run's settings are
	// explicit.
	Getenv func(string) string
	// OnCacheLookup receives the lookups a kind reports with CacheLookup;
	// the engine sets it, nil drops them (a kind run outside the engine).
	OnCacheLookup func(CacheLookup)
}

// CacheLookup is one lookup in a cache a kind keeps itself (the runtime
// cache's i- and b- entries, the content store), reported so the engine
// can trace it, count a hit as the stage's cache hit, and say why it
// missed.
type CacheLookup struct {
	// Cache names the cache: "runtime", "bundle" or "store".
	Cache string
	Key   string
	Hit   bool
	// Inputs are the named inputs of Key ("input runtime/package-lock.json"
	// -> sha256, "node version" -> "22.1" ...); nil when unknown.
	Inputs map[string]string
	// Scope narrows "the same stage" beyond pipeline file and stage name
	// (the distribution directory), so two distributions built by one
	// pipeline are not compared with each other.
	Scope string
	// Reason, on a miss the kind chose (a rebuild was asked for), says
	// so instead of the engine comparing inputs.
	Reason string
	// Remote is the remote cache's part on a local miss: "remote hit" or
	// "remote miss: WHY" (cache.RemoteOutcome.String); empty without one.
	Remote string
}

// CacheLookup reports a lookup in a cache the kind keeps itself (see
// CacheLookup the type). A hit marks the stage as served from cache.
func (inv *Invocation) CacheLookup(l CacheLookup) {
	if inv.OnCacheLookup != nil {
		inv.OnCacheLookup(l)
	}
}

// Schema returns the HCL body schema of a kind's configuration: one
// attribute per Attr, in declaration order. (It replaces an hcldec spec
// whose only use was hcldec.ImpliedSchema: hcldec links encoding/gob, whose
// initialisation every piship command paid.)
func Schema(k Kind) *hcl.BodySchema {
	attrs := k.Attrs()
	s := &hcl.BodySchema{Attributes: make([]hcl.AttributeSchema, 0, len(attrs))}
	for _, a := range attrs {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: a.Name, Required: a.Required})
	}
	return s
}

// OutputType returns the object type of a kind's outputs.
func OutputType(k Kind) cty.Type {
	attrs := map[string]cty.Type{}
	for _, o := range k.Outputs() {
		attrs[o.Name] = o.Type
	}
	return cty.Object(attrs)
}

// CheckOutputs converts outputs to the declared types and reports a missing
// or mistyped one as an error naming the kind: a bug in the kind, not in the
// pipeline.
func CheckOutputs(k Kind, out map[string]cty.Value) (map[string]cty.Value, error) {
	res := make(map[string]cty.Value, len(k.Outputs()))
	for _, o := range k.Outputs() {
		v, ok := out[o.Name]
		if !ok {
			return nil, fmt.Errorf("kind %s did not produce output %q", k.Name(), o.Name)
		}
		cv, err := convertValue(v, o.Type)
		if err != nil {
			return nil, fmt.Errorf("kind %s output %q: %v", k.Name(), o.Name, err)
		}
		res[o.Name] = cv
	}
	return res, nil
}

// Registry maps kind names to kinds.
type Registry struct {
	kinds map[string]Kind
}

// NewRegistry returns a registry holding kinds.
func NewRegistry(kinds ...Kind) *Registry {
	r := &Registry{kinds: map[string]Kind{}}
	for _, k := range kinds {
		r.Register(k)
	}
	return r
}

// Register adds k; registering a name twice is a programming error.
func (r *Registry) Register(k Kind) {
	if _, dup := r.kinds[k.Name()]; dup {
		panic("stage: kind registered twice: " + k.Name())
	}
	r.kinds[k.Name()] = k
}

// Lookup returns the kind called name.
func (r *Registry) Lookup(name string) (Kind, bool) {
	k, ok := r.kinds[name]
	return k, ok
}

// Names returns the registered kind names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.kinds))
	for n := range r.kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func convertValue(v cty.Value, ty cty.Type) (cty.Value, error) {
	return convert.Convert(v, ty)
}

// Resolve returns p resolved against dir unless it is absolute.
func Resolve(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, filepath.FromSlash(p))
}
