package tools

import (
	"context"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"

	invopop "github.com/invopop/jsonschema"
)

// Where an answer may hold null, its output schema says so: strict clients (the TypeScript
// MCP SDK) check every answer against it. One rule, kept here for every tool:
//
//   - a list or map is never null: a nil slice or map that encoding/json would write as null
//     is written as [] or {} (emptyFiller, run on every answer New's tools give and replay);
//   - a pointer or interface written without omitempty may be null (none), and the output
//     schema admits it (markNullable, run on every output schema New generates).
//
// A type that writes its own JSON (MarshalJSON, MarshalText) or gives its own schema
// (JSONSchema) is its author's: its schema must admit what it writes (the answers tests
// check every answer they see).

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	ownSchema     = reflect.TypeFor[interface{ JSONSchema() *invopop.Schema }]()
)

// marshalsItself reports whether t writes its own JSON or gives its own schema.
func marshalsItself(t reflect.Type) bool {
	for _, i := range []reflect.Type{jsonMarshaler, textMarshaler, ownSchema} {
		if t.Implements(i) || reflect.PointerTo(t).Implements(i) {
			return true
		}
	}
	return false
}

// isList reports whether t is a slice or map that emptyFiller writes as [] or {} when nil.
func isList(t reflect.Type) bool {
	k := t.Kind()
	return (k == reflect.Slice || k == reflect.Map) && !marshalsItself(t) && t != reflect.TypeFor[[]byte]()
}

// mayBeNull reports whether a value of type t, written (not omitted), can be null in an
// answer: a nil pointer or interface, or a nil []byte.
func mayBeNull(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		return true
	case reflect.Slice, reflect.Map:
		return !isList(t) && !marshalsItself(t)
	}
	return false
}

// jsonField is how encoding/json writes one struct field: its name, whether it is left out
// when empty, and (for an embedded struct whose fields are promoted) embedded.
type jsonField struct {
	name     string
	omitted  bool
	embedded bool
}

// fieldOf reads f's json tag; ok is false for a field encoding/json never writes.
func fieldOf(f reflect.StructField) (jf jsonField, ok bool) {
	name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" && opts == "" {
		return jf, false
	}
	if f.Anonymous && name == "" {
		et := f.Type
		if et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if et.Kind() == reflect.Struct {
			return jsonField{embedded: true}, true
		}
	}
	if !f.IsExported() {
		return jf, false
	}
	if name == "" {
		name = f.Name
	}
	jf.name = name
	for _, o := range strings.Split(opts, ",") {
		jf.omitted = jf.omitted || o == "omitempty" || o == "omitzero"
	}
	return jf, true
}

// admitsNull reports whether s validates null.
func admitsNull(s *invopop.Schema) bool {
	if s == nil || s.Type == "null" {
		return true
	}
	for _, b := range append(append([]*invopop.Schema(nil), s.AnyOf...), s.OneOf...) {
		if admitsNull(b) {
			return true
		}
	}
	return false
}

// orNull is s or null, in invopop's nullable form (strictSchema folds it into anyOf).
func orNull(s *invopop.Schema) *invopop.Schema {
	return &invopop.Schema{OneOf: []*invopop.Schema{s, {Type: "null"}}}
}

// nonNull returns the branch of a nullable union that is not null, s itself otherwise.
func nonNull(s *invopop.Schema) *invopop.Schema {
	list := s.AnyOf
	if len(list) == 0 {
		list = s.OneOf
	}
	if len(list) == 2 {
		for i, b := range list {
			if b.Type == "null" {
				return list[1-i]
			}
		}
	}
	return s
}

// markNullable walks the output schema s of Go type t and makes every place an answer can be
// null (mayBeNull, written without omitempty) admit null.
func markNullable(t reflect.Type, s *invopop.Schema) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil || marshalsItself(t) {
		return
	}
	s = nonNull(s)
	switch t.Kind() {
	case reflect.Struct:
		markFields(t, s)
	case reflect.Slice, reflect.Array:
		if s.Items == nil {
			return
		}
		if mayBeNull(t.Elem()) && !admitsNull(s.Items) {
			s.Items = orNull(s.Items)
		}
		markNullable(t.Elem(), s.Items)
	case reflect.Map:
		if s.AdditionalProperties == nil {
			return
		}
		if mayBeNull(t.Elem()) && !admitsNull(s.AdditionalProperties) {
			s.AdditionalProperties = orNull(s.AdditionalProperties)
		}
		markNullable(t.Elem(), s.AdditionalProperties)
	}
}

// markFields is markNullable on the fields of struct t (embedded structs' promoted, as
// encoding/json writes them), against the properties of s.
func markFields(t reflect.Type, s *invopop.Schema) {
	if s.Properties == nil {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		jf, ok := fieldOf(f)
		switch {
		case !ok:
			continue
		case jf.embedded:
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			markFields(et, s)
			continue
		}
		p, ok := s.Properties.Get(jf.name)
		if !ok {
			continue
		}
		if !jf.omitted && mayBeNull(f.Type) && !admitsNull(p) {
			s.Properties.Set(jf.name, orNull(p))
		}
		markNullable(f.Type, p)
	}
}

// fill returns v with its nil lists and maps made empty, and whether it changed anything.
// v itself is never modified: what changes is copied (a handler's answer may share its
// slices with a cache).
type fill func(v reflect.Value) (reflect.Value, bool)

// emptyFiller returns the fill of type t at a place where it is always written (emptyNil:
// a nil list there becomes empty), nil when there is nothing to fill. Recursive types are
// filled to the depth where they recur (no output type is: its schema is inlined).
func emptyFiller(t reflect.Type, emptyNil bool, seen map[reflect.Type]bool) fill {
	if seen[t] || (marshalsItself(t) && t.Kind() != reflect.Pointer) {
		return nil
	}
	seen[t] = true
	defer delete(seen, t)
	switch t.Kind() {
	case reflect.Pointer:
		inner := emptyFiller(t.Elem(), true, seen)
		if inner == nil {
			return nil
		}
		return func(v reflect.Value) (reflect.Value, bool) {
			if v.IsNil() {
				return v, false
			}
			nv, changed := inner(v.Elem())
			if !changed {
				return v, false
			}
			p := reflect.New(t.Elem())
			p.Elem().Set(nv)
			return p, true
		}
	case reflect.Struct:
		return structFiller(t, seen)
	case reflect.Array:
		inner := emptyFiller(t.Elem(), true, seen)
		if inner == nil {
			return nil
		}
		return func(v reflect.Value) (reflect.Value, bool) {
			var cp reflect.Value
			for i := range v.Len() {
				if nv, changed := inner(v.Index(i)); changed {
					if !cp.IsValid() {
						cp = reflect.New(t).Elem()
						cp.Set(v)
					}
					cp.Index(i).Set(nv)
				}
			}
			return orSelf(cp, v)
		}
	case reflect.Slice, reflect.Map:
		if !isList(t) {
			return nil
		}
		inner := emptyFiller(t.Elem(), true, seen)
		if inner == nil && !emptyNil {
			return nil
		}
		if t.Kind() == reflect.Map {
			return mapFiller(t, inner, emptyNil)
		}
		return func(v reflect.Value) (reflect.Value, bool) {
			if v.IsNil() {
				if emptyNil {
					return reflect.MakeSlice(t, 0, 0), true
				}
				return v, false
			}
			if inner == nil {
				return v, false
			}
			var cp reflect.Value
			for i := range v.Len() {
				if nv, changed := inner(v.Index(i)); changed {
					if !cp.IsValid() {
						cp = reflect.MakeSlice(t, v.Len(), v.Len())
						reflect.Copy(cp, v)
					}
					cp.Index(i).Set(nv)
				}
			}
			return orSelf(cp, v)
		}
	}
	return nil
}

func orSelf(cp, v reflect.Value) (reflect.Value, bool) {
	if cp.IsValid() {
		return cp, true
	}
	return v, false
}

func mapFiller(t reflect.Type, inner fill, emptyNil bool) fill {
	return func(v reflect.Value) (reflect.Value, bool) {
		if v.IsNil() {
			if emptyNil {
				return reflect.MakeMap(t), true
			}
			return v, false
		}
		if inner == nil {
			return v, false
		}
		var cp reflect.Value
		it := v.MapRange()
		for it.Next() {
			nv, changed := inner(it.Value())
			if !changed {
				continue
			}
			if !cp.IsValid() {
				cp = reflect.MakeMapWithSize(t, v.Len())
				for _, k := range v.MapKeys() {
					cp.SetMapIndex(k, v.MapIndex(k))
				}
			}
			cp.SetMapIndex(it.Key(), nv)
		}
		return orSelf(cp, v)
	}
}

// structFiller fills the fields of struct t that encoding/json writes, those of embedded
// structs by their path (promoted fields of an unexported embedded struct can be set).
func structFiller(t reflect.Type, seen map[reflect.Type]bool) fill {
	type part struct {
		path []int
		fill fill
	}
	var parts []part
	var collect func(t reflect.Type, prefix []int)
	collect = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			jf, ok := fieldOf(f)
			if !ok {
				continue
			}
			path := append(append([]int(nil), prefix...), i)
			if jf.embedded && f.Type.Kind() == reflect.Struct {
				collect(f.Type, path)
				continue
			}
			if !f.IsExported() {
				continue // an unexported embedded pointer cannot be set; no answer has one
			}
			if fl := emptyFiller(f.Type, !jf.omitted && !jf.embedded, seen); fl != nil {
				parts = append(parts, part{path, fl})
			}
		}
	}
	collect(t, nil)
	if len(parts) == 0 {
		return nil
	}
	return func(v reflect.Value) (reflect.Value, bool) {
		var cp reflect.Value
		for _, p := range parts {
			if nv, changed := p.fill(v.FieldByIndex(p.path)); changed {
				if !cp.IsValid() {
					cp = reflect.New(t).Elem()
					cp.Set(v)
				}
				cp.FieldByIndex(p.path).Set(nv)
			}
		}
		return orSelf(cp, v)
	}
}

// answerFiller returns what New runs on every answer of type Out: its nil lists and maps
// made empty (the identity when Out has none).
func answerFiller[Out any]() func(Out) Out {
	f := emptyFiller(reflect.TypeFor[Out](), true, map[reflect.Type]bool{})
	if f == nil {
		return func(o Out) Out { return o }
	}
	return func(o Out) Out {
		v, changed := f(reflect.ValueOf(&o).Elem())
		if !changed {
			return o
		}
		return v.Interface().(Out)
	}
}

// CheckingAnswers returns copies of list whose every answer (not an error) is checked
// against its tool's output schema as the doors will write it; report is called with each
// that breaks it. Tests run the whole service this way (apptest), so every call a test makes
// checks what a strict client (the TypeScript MCP SDK) would check.
func CheckingAnswers(list []*Tool, report func(tool string, err error)) []*Tool {
	out := make([]*Tool, len(list))
	for i, t := range list {
		w := *t
		run := t.run
		w.run = func(ctx context.Context, c *Caller, args []byte) (any, error) {
			answer, err := run(ctx, c, args)
			if err == nil && StartedTask(answer) == nil { // a task's answer comes later, checked by its door
				if verr := t.ValidateOutput(answer); verr != nil {
					report(t.Name, verr)
				}
			}
			return answer, err
		}
		out[i] = &w
	}
	return out
}
