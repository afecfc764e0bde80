package graph

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/stage/errcode"
)

// ParseInput converts a --input value for the named input. A string input
// (and one without a type) takes the value as written, bare words and all;
// any other type reads it as an HCL value of that type (3, true,
// '["a", "b"]', '{ k = "v" }'). A value that is not one says so in the
// terms of the command line: `--input n=abc: n is a number; abc is not a
// number (write --input n=3)`, never the HCL parser's words for an
// expression it could not read.
func (g *Graph) ParseInput(name, raw string) (cty.Value, error) {
	var ty cty.Type = cty.DynamicPseudoType
	for _, in := range g.Inputs {
		if in.Name == name {
			ty = in.Type
		}
	}
	if ty == cty.String || ty == cty.DynamicPseudoType {
		return cty.StringVal(raw), nil
	}
	expr, diags := diag.ParseExpression([]byte(raw), "--input "+name, hcl.InitialPos)
	if diags.HasErrors() {
		for _, d := range diags {
			// The nesting bound keeps its own words: the value is
			// refused before parsing.
			if strings.Contains(d.Summary, "nesting too deep") {
				return cty.NilVal, fmt.Errorf("--input %s: %s: %s", name, strings.TrimPrefix(d.Summary, errcode.ConfigInvalid+": "), d.Detail)
			}
		}
		return cty.NilVal, badInput(name, raw, ty, "")
	}
	v, diags := expr.Value(&hcl.EvalContext{Functions: g.funcs})
	if diags.HasErrors() {
		return cty.NilVal, badInput(name, raw, ty, "")
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		why := ""
		if !ty.IsPrimitiveType() {
			why = err.Error()
		}
		return cty.NilVal, badInput(name, raw, ty, why)
	}
	return cv, nil
}

// badInput words a value that is not of its input's type, with an example
// of one that is.
func badInput(name, raw string, ty cty.Type, why string) error {
	shown := raw
	if len(shown) > 40 {
		shown = shown[:40] + "..."
	}
	if shown == "" {
		shown = `""`
	}
	var what string
	switch {
	case ty == cty.Number:
		what = fmt.Sprintf("%s is a number; %s is not a number", name, shown)
	case ty == cty.Bool:
		what = fmt.Sprintf("%s is a bool; %s is not true or false", name, shown)
	default:
		t := typeexpr.TypeString(ty)
		what = fmt.Sprintf("%s is %s; %s is not a %s value", name, t, shown, t)
	}
	if why != "" {
		what += " (" + why + ")"
	}
	return fmt.Errorf("--input %s=%s: %s (write --input %s=%s)", name, shown, what, name, shellQuote(example(ty)))
}

// example is an HCL value of type ty, as a user would write it: the
// first of two (n 0 or 1), so a list's elements differ.
func example(ty cty.Type) string { return exampleN(ty, 0) }

func exampleN(ty cty.Type, n int) string {
	switch {
	case ty == cty.String:
		return []string{`"a"`, `"b"`}[n]
	case ty == cty.Number:
		return []string{"3", "4"}[n]
	case ty == cty.Bool:
		return []string{"true", "false"}[n]
	case ty.IsListType() || ty.IsSetType():
		return "[" + exampleN(ty.ElementType(), 0) + ", " + exampleN(ty.ElementType(), 1) + "]"
	case ty.IsMapType():
		return "{ k = " + exampleN(ty.ElementType(), 0) + " }"
	case ty.IsObjectType():
		var parts []string
		for _, a := range sortedAttrNames(ty) {
			parts = append(parts, a+" = "+exampleN(ty.AttributeType(a), 0))
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	case ty.IsTupleType():
		var parts []string
		for _, e := range ty.TupleElementTypes() {
			parts = append(parts, exampleN(e, 0))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return `"a"`
}

func sortedAttrNames(ty cty.Type) []string {
	var names []string
	for n := range ty.AttributeTypes() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if strings.ContainsAny(s, " \"'[]{}$*?\\;&|<>()") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}
