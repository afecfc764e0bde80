package stage

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
)

// Typed is a stage kind written against Go types: C is its configuration
// struct and O its outputs struct. Their fields carry the whole declaration:
//
//	type Config struct {
//		Command []string `cty:"command" required:"true" doc:"program and arguments"`
//		Dir     string   `cty:"dir" doc:"working directory (default: the pipeline's)"`
//	}
//
// `cty` names the attribute (or output), its Go type gives the cty type
// (string, bool, int/float64 as number, slices as lists, map[string]T as
// maps, tagged structs as objects, cty.Value as any type), `required:"true"`
// makes a configuration attribute mandatory and `doc` is what `piship
// stages` prints. An unset optional attribute leaves the field's zero value;
// use a pointer where unset and zero must differ.
type Typed[C, O any] interface {
	Name() string
	Version() string
	Doc() string
	Run(ctx context.Context, inv *Invocation, cfg C) (O, error)
}

// TypedCacheable is implemented by typed kinds whose results may be served
// from the action cache; see Cacheable.
type TypedCacheable[C any] interface {
	CacheSpec(inv *Invocation, cfg C) (spec CacheSpec, ok bool, err error)
}

// TypedCleaner is implemented by typed kinds that release something after a
// run; see Cleaner.
type TypedCleaner[C any] interface {
	Cleanup(ctx context.Context, inv *Invocation, cfg C) error
}

// Define turns a typed kind into a Kind: its schema, validation, decoding
// and output encoding all come from C and O. A malformed declaration (an
// untagged or unsupported field type) panics at start, like a kind
// registered twice.
func Define[C, O any](k Typed[C, O]) Kind {
	t := &typed[C, O]{k: k, attrs: mustAttrs[C](k.Name()), outputs: mustOutputs[O](k.Name())}
	_, cacheable := k.(TypedCacheable[C])
	_, cleaner := k.(TypedCleaner[C])
	switch {
	case cacheable && cleaner:
		return &typedBoth[C, O]{typedCache[C, O]{t}}
	case cacheable:
		return &typedCache[C, O]{t}
	case cleaner:
		return &typedClean[C, O]{t}
	}
	return t
}

type typed[C, O any] struct {
	k       Typed[C, O]
	attrs   []Attr
	outputs []Output
}

func (t *typed[C, O]) Name() string      { return t.k.Name() }
func (t *typed[C, O]) Version() string   { return t.k.Version() }
func (t *typed[C, O]) Doc() string       { return t.k.Doc() }
func (t *typed[C, O]) Attrs() []Attr     { return t.attrs }
func (t *typed[C, O]) Outputs() []Output { return t.outputs }

// Typed returns the Go value the kind was defined from, so a test or a
// caller can reach its typed methods.
func (t *typed[C, O]) Typed() any { return t.k }

func (t *typed[C, O]) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	var cfg C
	if err := DecodeConfig(inv, &cfg); err != nil {
		return nil, err
	}
	out, err := t.k.Run(ctx, inv, cfg)
	if err != nil {
		return nil, err
	}
	return EncodeOutputs(out)
}

type typedCache[C, O any] struct{ *typed[C, O] }

func (t *typedCache[C, O]) CacheSpec(inv *Invocation) (CacheSpec, bool, error) {
	var cfg C
	if err := DecodeConfig(inv, &cfg); err != nil {
		return CacheSpec{}, false, err
	}
	return t.k.(TypedCacheable[C]).CacheSpec(inv, cfg)
}

// CacheSwitch implements CacheSwitch for every typed cacheable kind: the
// typed kind's own switch, or "" when it has none.
func (t *typedCache[C, O]) CacheSwitch() string {
	if s, ok := t.k.(CacheSwitch); ok {
		return s.CacheSwitch()
	}
	return ""
}

type typedClean[C, O any] struct{ *typed[C, O] }

func (t *typedClean[C, O]) Cleanup(ctx context.Context, inv *Invocation) error {
	return cleanup[C](ctx, t.k, inv)
}

type typedBoth[C, O any] struct{ typedCache[C, O] }

func (t *typedBoth[C, O]) Cleanup(ctx context.Context, inv *Invocation) error {
	return cleanup[C](ctx, t.k, inv)
}

func cleanup[C any](ctx context.Context, k any, inv *Invocation) error {
	var cfg C
	if err := DecodeConfig(inv, &cfg); err != nil {
		return err
	}
	return k.(TypedCleaner[C]).Cleanup(ctx, inv, cfg)
}

// field is one tagged field of a declaration struct.
type field struct {
	index    int
	name     string
	ty       cty.Type
	required bool
	doc      string
}

var fieldCache sync.Map // reflect.Type -> []field

// fieldsOf reads the tagged fields of struct type rt.
func fieldsOf(rt reflect.Type) ([]field, error) {
	if v, ok := fieldCache.Load(rt); ok {
		return v.([]field), nil
	}
	if rt.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%s is not a struct", rt)
	}
	var fs []field
	seen := map[string]bool{}
	for i := 0; i < rt.NumField(); i++ {
		sf := rt.Field(i)
		name := sf.Tag.Get("cty")
		if name == "" {
			if sf.IsExported() {
				return nil, fmt.Errorf("%s.%s has no cty tag", rt, sf.Name)
			}
			continue
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: %q declared twice", rt, name)
		}
		seen[name] = true
		ty, err := impliedType(sf.Type)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %v", rt, sf.Name, err)
		}
		fs = append(fs, field{index: i, name: name, ty: ty, required: sf.Tag.Get("required") == "true", doc: sf.Tag.Get("doc")})
	}
	fieldCache.Store(rt, fs)
	return fs, nil
}

var ctyValueType = reflect.TypeOf(cty.Value{})

func impliedType(rt reflect.Type) (cty.Type, error) {
	if rt == ctyValueType {
		return cty.DynamicPseudoType, nil
	}
	return gocty.ImpliedType(reflect.Zero(rt).Interface())
}

func mustAttrs[C any](kind string) []Attr {
	fs, err := fieldsOf(reflect.TypeFor[C]())
	if err != nil {
		panic("stage: kind " + kind + " config: " + err.Error())
	}
	attrs := make([]Attr, len(fs))
	for i, f := range fs {
		attrs[i] = Attr{Name: f.name, Type: f.ty, Required: f.required, Doc: f.doc}
	}
	return attrs
}

func mustOutputs[O any](kind string) []Output {
	fs, err := fieldsOf(reflect.TypeFor[O]())
	if err != nil {
		panic("stage: kind " + kind + " outputs: " + err.Error())
	}
	outs := make([]Output, len(fs))
	for i, f := range fs {
		outs[i] = Output{Name: f.name, Type: f.ty, Doc: f.doc}
	}
	return outs
}

// DecodeConfig fills the struct dst points to from inv.Config by the
// fields' cty tags. Null (unset) attributes leave the zero value.
func DecodeConfig(inv *Invocation, dst any) error {
	if err := decodeObject(inv.Config, dst); err != nil {
		return fmt.Errorf("stage %s: configuration: %w", inv.Name, err)
	}
	return nil
}

// DecodeOutputs reads a stage's outputs (as the engine returns them) into
// O, the kind's outputs struct: how callers read results without naming
// outputs by string.
func DecodeOutputs[O any](out map[string]cty.Value) (O, error) {
	var o O
	fs, err := fieldsOf(reflect.TypeFor[O]())
	if err != nil {
		return o, err
	}
	rv := reflect.ValueOf(&o).Elem()
	for _, f := range fs {
		v, ok := out[f.name]
		if !ok {
			return o, fmt.Errorf("output %q missing", f.name)
		}
		if err := setField(rv.Field(f.index), v); err != nil {
			return o, fmt.Errorf("output %q: %w", f.name, err)
		}
	}
	return o, nil
}

func decodeObject(obj cty.Value, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode target %T is not a pointer to a struct", dst)
	}
	rv = rv.Elem()
	fs, err := fieldsOf(rv.Type())
	if err != nil {
		return err
	}
	if obj.IsNull() {
		return nil
	}
	if !obj.Type().IsObjectType() {
		return fmt.Errorf("configuration is %s, not an object", obj.Type().FriendlyName())
	}
	for _, f := range fs {
		if !obj.Type().HasAttribute(f.name) {
			continue
		}
		if err := setField(rv.Field(f.index), obj.GetAttr(f.name)); err != nil {
			return fmt.Errorf("attribute %q: %w", f.name, err)
		}
	}
	return nil
}

func setField(fv reflect.Value, v cty.Value) error {
	if fv.Type() == ctyValueType {
		fv.Set(reflect.ValueOf(v))
		return nil
	}
	if v.IsNull() {
		return nil
	}
	if !v.IsWhollyKnown() {
		return fmt.Errorf("value is not known yet")
	}
	return gocty.FromCtyValue(v, fv.Addr().Interface())
}

// EncodeOutputs turns an outputs struct into the map the engine checks
// against the declaration. Nil slices and maps become empty collections, so
// a pipeline can always take their length.
func EncodeOutputs(o any) (map[string]cty.Value, error) {
	rv := reflect.ValueOf(o)
	fs, err := fieldsOf(rv.Type())
	if err != nil {
		return nil, err
	}
	out := make(map[string]cty.Value, len(fs))
	for _, f := range fs {
		fv := rv.Field(f.index)
		if fv.Type() == ctyValueType {
			out[f.name] = fv.Interface().(cty.Value)
			continue
		}
		v, err := gocty.ToCtyValue(fv.Interface(), f.ty)
		if err != nil {
			return nil, fmt.Errorf("output %q: %w", f.name, err)
		}
		out[f.name] = emptyNotNull(v)
	}
	return out, nil
}

// emptyNotNull replaces null lists, sets and maps (Go's nil slices and maps)
// with empty ones, at any depth.
func emptyNotNull(v cty.Value) cty.Value {
	v, _ = cty.Transform(v, func(_ cty.Path, v cty.Value) (cty.Value, error) {
		if !v.IsNull() {
			return v, nil
		}
		ty := v.Type()
		switch {
		case ty.IsListType():
			return cty.ListValEmpty(ty.ElementType()), nil
		case ty.IsSetType():
			return cty.SetValEmpty(ty.ElementType()), nil
		case ty.IsMapType():
			return cty.MapValEmpty(ty.ElementType()), nil
		}
		return v, nil
	})
	return v
}
