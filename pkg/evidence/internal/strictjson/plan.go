package strictjson

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// kind is how a Go type is decoded.
type kind uint8

const (
	kString kind = iota
	kBool
	kInt
	kStruct
	kSlice
	kPtr
	kMap
	kRaw
	kUnmarshaler
)

type plan struct {
	kind   kind
	typ    reflect.Type
	elem   *plan
	fields []field           // kStruct
	byName map[string]int    // kStruct: json name → index in fields
	fold   map[string]string // kStruct: lower-case name → json name
}

type field struct {
	name      string
	index     []int
	omitEmpty bool
	plan      *plan
}

var (
	plans           sync.Map // reflect.Type → *plan
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// planFor returns the (cached) decoding plan of t. Unsupported types are a
// programming error in this package's schema, caught by its tests.
func planFor(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := buildPlan(t, map[reflect.Type]*plan{})
	actual, _ := plans.LoadOrStore(t, p)
	return actual.(*plan)
}

func buildPlan(t reflect.Type, building map[reflect.Type]*plan) *plan {
	if p, ok := building[t]; ok {
		return p
	}
	p := &plan{typ: t}
	building[t] = p
	switch {
	case t == rawMessageType:
		p.kind = kRaw
		return p
	case t.Kind() != reflect.Pointer && (reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)):
		p.kind = kUnmarshaler
		return p
	}
	switch t.Kind() {
	case reflect.String:
		p.kind = kString
	case reflect.Bool:
		p.kind = kBool
	case reflect.Int, reflect.Int64, reflect.Int32:
		p.kind = kInt
	case reflect.Slice:
		p.kind = kSlice
		p.elem = buildPlan(t.Elem(), building)
	case reflect.Pointer:
		p.kind = kPtr
		p.elem = buildPlan(t.Elem(), building)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic("strictjson: map key of " + t.String() + " is not a string")
		}
		p.kind = kMap
		p.elem = buildPlan(t.Elem(), building)
	case reflect.Struct:
		p.kind = kStruct
		p.byName = map[string]int{}
		p.fold = map[string]string{}
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if name == "" || sf.Anonymous {
				panic("strictjson: field " + t.String() + "." + sf.Name + " needs an explicit json name")
			}
			f := field{name: name, index: sf.Index, plan: buildPlan(sf.Type, building)}
			for _, o := range strings.Split(opts, ",") {
				if o == "omitempty" || o == "omitzero" {
					f.omitEmpty = true
				}
			}
			if _, dup := p.byName[name]; dup {
				panic("strictjson: duplicate json name " + name + " in " + t.String())
			}
			p.byName[name] = len(p.fields)
			p.fold[strings.ToLower(name)] = name
			p.fields = append(p.fields, f)
		}
	default:
		panic("strictjson: unsupported type " + t.String() + " in the evidence schema")
	}
	return p
}

// Paths lists every JSON path a value of type t can produce, sorted and
// without repeats: ".a.b" for a field, "[]" for the elements of a list,
// ".*" for the values of a map. A type for which cut is true ends the path
// where it is used (except at the root), so a shared type is listed once
// under its own name. It reads the decoding plan, so the paths are exactly
// what Decode accepts.
func Paths(t reflect.Type, cut func(reflect.Type) bool) []string {
	var out []string
	var walk func(p *plan, prefix string, seen map[*plan]bool)
	walk = func(p *plan, prefix string, seen map[*plan]bool) {
		if prefix != "" && cut(p.typ) {
			out = append(out, prefix)
			return
		}
		switch p.kind {
		case kStruct:
			if seen[p] {
				return
			}
			seen[p] = true
			for _, f := range p.fields {
				walk(f.plan, prefix+"."+f.name, seen)
			}
			delete(seen, p)
		case kSlice:
			walk(p.elem, prefix+"[]", seen)
		case kPtr:
			walk(p.elem, prefix, seen)
		case kMap:
			walk(p.elem, prefix+".*", seen)
		default:
			out = append(out, prefix)
		}
	}
	walk(planFor(t), "", map[*plan]bool{})
	slices.Sort(out)
	return slices.Compact(out)
}
