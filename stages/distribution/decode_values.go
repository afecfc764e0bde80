package distribution

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// str decodes a string attribute; key is its dotted path.
func (dc *decoder) str(attrs hcl.Attributes, key string) (string, hcl.Range, bool) {
	attr, ok := attrs[lastName(key)]
	if !ok {
		return "", hcl.Range{}, false
	}
	return dc.exprString(attr.Expr, key, key)
}

func (dc *decoder) exprString(expr hcl.Expression, key, what string) (string, hcl.Range, bool) {
	r := expr.Range()
	dc.d.ranges[key] = r
	v, ok := dc.value(expr)
	if !ok {
		return "", r, false
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		dc.add(typeDiag(r, what, "a string"+exampleFor(key), v))
		return "", r, false
	}
	return v.AsString(), r, true
}

func (dc *decoder) boolean(attrs hcl.Attributes, key string) (bool, hcl.Range, bool) {
	attr, ok := attrs[lastName(key)]
	if !ok {
		return false, hcl.Range{}, false
	}
	r := attr.Expr.Range()
	dc.d.ranges[key] = r
	v, ok := dc.value(attr.Expr)
	if !ok {
		return false, r, false
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.Bool {
		dc.add(typeDiag(r, key, "true or false", v))
		return false, r, false
	}
	return v.True(), r, true
}

// uniqueList checks each entry of a list attribute (rs are the entries'
// ranges) with check, which returns the value to keep (normalized) or
// false after adding its own diagnostic, and refuses an entry whose value
// was kept before with dupSummary, naming where the first stands. It
// returns the kept values, in order (never nil), and their ranges.
func (dc *decoder) uniqueList(list []string, rs []hcl.Range, dupSummary string, check func(v string, r hcl.Range) (string, bool)) ([]string, []hcl.Range) {
	kept, ranges := []string{}, []hcl.Range{}
	seen := map[string]int{}
	for i, v := range list {
		k, ok := check(v, rs[i])
		if !ok {
			continue
		}
		if j, dup := seen[k]; dup {
			dc.add(errDiag(dupSummary, fmt.Sprintf("%q is already listed at %s.", v, fmtPos(rs[j])), rs[i]))
			continue
		}
		seen[k] = i
		kept, ranges = append(kept, k), append(ranges, rs[i])
	}
	return kept, ranges
}

// strList decodes a list of strings written as a list literal, keeping
// each element's range.
func (dc *decoder) strList(attrs hcl.Attributes, key string) ([]string, []hcl.Range, bool) {
	attr, ok := attrs[lastName(key)]
	if !ok {
		return nil, nil, false
	}
	r := attr.Expr.Range()
	dc.d.ranges[key] = r
	exprs, diags := hcl.ExprList(attr.Expr)
	if diags.HasErrors() {
		if v, ok := dc.value(attr.Expr); ok {
			dc.add(typeDiag(r, key, "a list of strings"+exampleFor(key), v))
		}
		return nil, nil, false
	}
	list := make([]string, 0, len(exprs))
	ranges := make([]hcl.Range, 0, len(exprs))
	ok = true
	for i, e := range exprs {
		v, vok := dc.value(e)
		if !vok {
			ok = false
			continue
		}
		if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
			dc.add(typeDiag(e.Range(), fmt.Sprintf("%s[%d]", key, i), "a string", v))
			ok = false
			continue
		}
		dc.d.ranges[fmt.Sprintf("%s[%d]", key, i)] = e.Range()
		list = append(list, v.AsString())
		ranges = append(ranges, e.Range())
	}
	return list, ranges, ok
}

// value evaluates an expression of the static distribution file: no
// variables, no functions.
func (dc *decoder) value(expr hcl.Expression) (cty.Value, bool) {
	v, diags := expr.Value(nil)
	for _, d := range diags {
		switch d.Summary {
		case "Variables not allowed", "Function calls not allowed":
			d.Detail = strings.TrimSuffix(d.Detail, ".") + ": " + FileName + " is static; write the value itself."
		}
	}
	dc.add(diags...)
	return v, !diags.HasErrors()
}

// sentence ends s with a full stop unless it already ends a sentence.
func sentence(s string) string {
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, "?") {
		return s
	}
	return s + "."
}

func typeDiag(r hcl.Range, what, want string, got cty.Value) *hcl.Diagnostic {
	return errDiag("Incorrect attribute value type", fmt.Sprintf("%s must be %s; this is %s.", what, want, describe(got)), r)
}

func describe(v cty.Value) string {
	switch {
	case v.IsNull():
		return "null"
	case !v.IsKnown():
		return "unknown"
	}
	switch t := v.Type(); {
	case t == cty.String:
		return "a string"
	case t == cty.Number:
		return "a number"
	case t == cty.Bool:
		return "a bool"
	case t.IsTupleType() || t.IsListType() || t.IsSetType():
		return "a list"
	case t.IsObjectType() || t.IsMapType():
		return "an object"
	}
	return v.Type().FriendlyName()
}

func exampleFor(key string) string {
	f, ok := fieldByName(key)
	if !ok {
		// In a labelled block: smoke.<name>.args is smoke.args.
		if i := strings.LastIndexByte(key, '.'); i > 0 {
			if j := strings.LastIndexByte(key[:i], '.'); j > 0 {
				f, ok = fieldByName(key[:j] + key[i:])
			}
		}
	}
	if ok && f.Example != "" {
		return ", e.g. " + f.Example
	}
	return ""
}

func lastName(key string) string {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[i+1:]
	}
	return key
}

// stringFields decodes key = { field = "..." ... }, an object whose fields
// are strings named in allowed: each field written, its value and range
// (recorded as key.field; ranges holds every field written, vals those
// whose value is a string). An expression that is not an object is refused
// with shape (the object's form, for the message); a field not in allowed
// with takes (what the object takes). ok is false when anything was
// refused; the fields read are returned either way, so a caller checks
// their values and which are missing.
func (dc *decoder) stringFields(key string, expr hcl.Expression, allowed []string, shape, takes string) (vals map[string]string, ranges map[string]hcl.Range, ok bool) {
	fields, diags := hcl.ExprMap(expr)
	if diags.HasErrors() {
		dc.add(errDiag("Incorrect attribute value type", fmt.Sprintf("%s must be an object %s.", key, shape), expr.Range()))
		return nil, nil, false
	}
	vals, ranges, ok = map[string]string{}, map[string]hcl.Range{}, true
	for _, kv := range fields {
		kval, kd := kv.Key.Value(nil)
		field := ""
		if !kd.HasErrors() && !kval.IsNull() && kval.IsKnown() && kval.Type() == cty.String {
			field = kval.AsString()
		}
		if !slices.Contains(allowed, field) {
			dc.add(errDiag("Unsupported argument", fmt.Sprintf("%s takes %s.", key, takes), kv.Key.Range()))
			ok = false
			continue
		}
		// Written, even when its value is refused (not missing too).
		ranges[field] = kv.Value.Range()
		v, _, vok := dc.exprString(kv.Value, key+"."+field, key+" "+field)
		if !vok {
			ok = false
			continue
		}
		vals[field] = v
	}
	return vals, ranges, ok
}

// httpsArchiveURL reports whether v is an https:// URL of a .tar.gz, .tgz
// or .zip archive (the search tools' and Node's URL pins).
func httpsArchiveURL(v string) bool {
	low := strings.ToLower(v)
	return strings.HasPrefix(v, "https://") && (strings.HasSuffix(low, ".tar.gz") || strings.HasSuffix(low, ".tgz") || strings.HasSuffix(low, ".zip"))
}
