package evidence

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/jsonnum"
)

// This file is the strict decoder every evidence document goes through (the
// bundle, its statement, the trust and the expectations documents). It exists
// because encoding/json cannot enforce the parse rules: it matches
// keys case-insensitively, keeps the last of duplicate keys, turns null into
// "no change", silently replaces invalid UTF-8 and accepts 1e3 or 1.0 for an
// integer. Each of those is a way for two different byte strings to mean the
// same document — or for a verifier and a signer to disagree about what was
// signed.
//
// The decoder is driven by the Go types themselves (their json tags), so the
// types stay the one place that knows the schema:
//
//   - every key must be exactly a field's json name (case-sensitive); an
//     unknown, duplicate or case-variant key is an error;
//   - every field without omitempty is required; a field with omitempty must
//     be absent rather than present with its zero value (json.Marshal never
//     writes it, so a present zero value is a second encoding of the same
//     document);
//   - null is never accepted;
//   - integers are plain JSON integers within ±(2^53−1), the range RFC 8785
//     (I-JSON) numbers represent exactly;
//   - strings are valid UTF-8 and escaped as RFC 8785 escapes them (only
//     '"', '\\' and control characters), so a value has one spelling;
//   - json.RawMessage fields hold a JSON object, validated generically
//     (duplicate and case-variant keys rejected at every depth);
//   - a type with its own UnmarshalJSON or UnmarshalText must re-marshal to
//     exactly the bytes it was decoded from.

// maxDepth bounds nesting in every evidence document. The deepest legitimate
// path (predicate.checks[].findings[].ids[]) is 6 levels deep; generic
// objects (the sandbox probe) get the rest.
const maxDepth = 32

// maxSafeInt is 2^53−1: larger integers are not exact in I-JSON / RFC 8785,
// where every number is an IEEE 754 double.
const maxSafeInt = 1<<53 - 1

// SchemaError is a document that does not have the shape its type demands.
type SchemaError struct {
	Path   string // JSON path of the offending value, "$.predicate.checks[3].phase"
	Offset int    // byte offset in the document
	Msg    string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("%s (byte %d): %s", e.Path, e.Offset, e.Msg)
}

type pathSeg struct {
	key string
	idx int // -1 for object members
}

type decoder struct {
	data []byte
	// src is data as one string: decoded strings without escapes are
	// substrings of it, so 1 M test ids cost no allocation each.
	src   string
	pos   int
	depth int
	path  []pathSeg
}

// decodeStrict decodes data into v (a non-nil pointer) under the rules above.
func decodeStrict(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("evidence: decodeStrict needs a non-nil pointer")
	}
	d := &decoder{data: data, src: string(data)}
	d.ws()
	if err := d.value(planFor(rv.Type().Elem()), rv.Elem()); err != nil {
		return err
	}
	d.ws()
	if d.pos != len(d.data) {
		return d.errf("trailing data after the document")
	}
	return nil
}

func (d *decoder) errf(format string, args ...any) error {
	var b strings.Builder
	b.WriteByte('$')
	for _, s := range d.path {
		if s.idx >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
		} else {
			b.WriteByte('.')
			b.WriteString(s.key)
		}
	}
	return &SchemaError{Path: b.String(), Offset: d.pos, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) peek() byte {
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

func (d *decoder) expect(c byte) error {
	d.ws()
	if d.peek() != c {
		if d.pos >= len(d.data) {
			return d.errf("unexpected end of document, want %q", c)
		}
		return d.errf("unexpected %q, want %q", d.data[d.pos], c)
	}
	d.pos++
	return nil
}

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
			panic("evidence: map key of " + t.String() + " is not a string")
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
				panic("evidence: field " + t.String() + "." + sf.Name + " needs an explicit json name")
			}
			f := field{name: name, index: sf.Index, plan: buildPlan(sf.Type, building)}
			for _, o := range strings.Split(opts, ",") {
				if o == "omitempty" || o == "omitzero" {
					f.omitEmpty = true
				}
			}
			if _, dup := p.byName[name]; dup {
				panic("evidence: duplicate json name " + name + " in " + t.String())
			}
			p.byName[name] = len(p.fields)
			p.fold[strings.ToLower(name)] = name
			p.fields = append(p.fields, f)
		}
	default:
		panic("evidence: unsupported type " + t.String() + " in the evidence schema")
	}
	return p
}

func (d *decoder) enter() error {
	d.depth++
	if d.depth > maxDepth {
		return d.errf("nested deeper than %d levels", maxDepth)
	}
	return nil
}

func (d *decoder) value(p *plan, v reflect.Value) error {
	d.ws()
	if d.pos >= len(d.data) {
		return d.errf("unexpected end of document")
	}
	if d.data[d.pos] == 'n' {
		return d.errf("null is not allowed here; omit an optional field, write [] for an empty list")
	}
	switch p.kind {
	case kString:
		s, err := d.str()
		if err != nil {
			return err
		}
		v.SetString(s)
	case kBool:
		switch {
		case bytes.HasPrefix(d.data[d.pos:], []byte("true")):
			d.pos += 4
			v.SetBool(true)
		case bytes.HasPrefix(d.data[d.pos:], []byte("false")):
			d.pos += 5
			v.SetBool(false)
		default:
			return d.errf("want true or false")
		}
	case kInt:
		n, err := d.integer()
		if err != nil {
			return err
		}
		if v.OverflowInt(n) {
			return d.errf("integer %d out of range", n)
		}
		v.SetInt(n)
	case kStruct:
		return d.object(p, v)
	case kSlice:
		return d.array(p, v)
	case kPtr:
		e := reflect.New(p.typ.Elem())
		if err := d.value(p.elem, e.Elem()); err != nil {
			return err
		}
		v.Set(e)
	case kMap:
		return d.mapValue(p, v)
	case kRaw:
		if d.data[d.pos] != '{' {
			return d.errf("want a JSON object")
		}
		start := d.pos
		if err := d.skip(); err != nil {
			return err
		}
		v.SetBytes(bytes.Clone(d.data[start:d.pos]))
	case kUnmarshaler:
		start := d.pos
		if err := d.skip(); err != nil {
			return err
		}
		raw := d.data[start:d.pos]
		pv := v.Addr().Interface()
		var err error
		if u, ok := pv.(json.Unmarshaler); ok {
			err = u.UnmarshalJSON(raw)
		} else {
			var s string
			if raw[0] != '"' {
				return d.errf("want a string")
			}
			if err = json.Unmarshal(raw, &s); err == nil {
				err = pv.(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
			}
		}
		if err != nil {
			d.pos = start
			return d.errf("%v", err)
		}
		back, err := json.Marshal(v.Interface())
		if err != nil || !bytes.Equal(back, raw) {
			d.pos = start
			return d.errf("value %s is not in its one canonical form (want %s)", clip(raw), clip(back))
		}
	}
	return nil
}

func (d *decoder) object(p *plan, v reflect.Value) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	if err := d.enter(); err != nil {
		return err
	}
	seen := make([]bool, len(p.fields))
	var f *field
	err := d.members(func(key string, keyPos int) error {
		i, ok := p.byName[key]
		if !ok {
			d.pos = keyPos
			if known, variant := p.fold[strings.ToLower(key)]; variant {
				return d.errf("key %q is a case variant of %q; keys are case-sensitive", key, known)
			}
			return d.errf("unknown key %q", key)
		}
		if seen[i] {
			d.pos = keyPos
			return d.errf("duplicate key %q", key)
		}
		seen[i] = true
		f = &p.fields[i]
		return nil
	}, func(string) error {
		fv := v.FieldByIndex(f.index)
		if err := d.value(f.plan, fv); err != nil {
			return err
		}
		if f.omitEmpty && fv.IsZero() || f.omitEmpty && (fv.Kind() == reflect.Slice || fv.Kind() == reflect.Map) && fv.Len() == 0 {
			return d.errf("optional field is present with an empty value; omit it instead")
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, f := range p.fields {
		if !seen[i] && !f.omitEmpty {
			return d.errf("required key %q is missing", f.name)
		}
	}
	d.depth--
	return nil
}

func (d *decoder) array(p *plan, v reflect.Value) error {
	if err := d.expect('['); err != nil {
		return err
	}
	if err := d.enter(); err != nil {
		return err
	}
	// Slices of strings (1 M test ids) are the hot path: build them
	// directly instead of through reflect.Append.
	if p.elem.kind == kString {
		var out []string
		err := d.elements(func(i int) error {
			if d.peek() != '"' {
				return d.errf("want a string")
			}
			s, err := d.str()
			out = append(out, s)
			return err
		})
		if err != nil {
			return err
		}
		sv := reflect.MakeSlice(p.typ, len(out), len(out))
		if p.typ.Elem() == reflect.TypeFor[string]() {
			reflect.Copy(sv, reflect.ValueOf(out))
		} else {
			for i, s := range out {
				sv.Index(i).SetString(s)
			}
		}
		v.Set(sv)
		d.depth--
		return nil
	}
	sv := reflect.New(p.typ).Elem() // addressable, so SetLen works
	sv.Set(reflect.MakeSlice(p.typ, 0, 4))
	err := d.elements(func(i int) error {
		if sv.Len() == sv.Cap() {
			grown := reflect.MakeSlice(p.typ, sv.Len(), 2*sv.Cap())
			reflect.Copy(grown, sv)
			sv.Set(grown)
		}
		sv.SetLen(sv.Len() + 1)
		return d.value(p.elem, sv.Index(i))
	})
	if err != nil {
		return err
	}
	v.Set(sv)
	d.depth--
	return nil
}

// elements calls each for every element of an array whose '[' was consumed.
func (d *decoder) elements(each func(i int) error) error {
	for i := 0; ; i++ {
		d.ws()
		if d.peek() == ']' {
			d.pos++
			return nil
		}
		if i > 0 {
			if err := d.expect(','); err != nil {
				return err
			}
			d.ws()
		}
		d.path = append(d.path, pathSeg{idx: i})
		if err := each(i); err != nil {
			return err
		}
		d.path = d.path[:len(d.path)-1]
	}
}

// members walks an object whose '{' was consumed: for every member it
// reads the key, lets check refuse it (before the ':'), then calls value
// with the key on the path. The object counterpart of elements.
func (d *decoder) members(check func(key string, keyPos int) error, value func(key string) error) error {
	for i := 0; ; i++ {
		d.ws()
		if d.peek() == '}' {
			d.pos++
			return nil
		}
		if i > 0 {
			if err := d.expect(','); err != nil {
				return err
			}
			d.ws()
		}
		keyPos := d.pos
		if d.peek() != '"' {
			return d.errf("want an object key")
		}
		key, err := d.str()
		if err != nil {
			return err
		}
		if err := check(key, keyPos); err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		d.path = append(d.path, pathSeg{key: key, idx: -1})
		if err := value(key); err != nil {
			return err
		}
		d.path = d.path[:len(d.path)-1]
	}
}

// fold refuses a key already seen in this object, in any letter case.
func (d *decoder) fold(seen map[string]bool, key string, keyPos int) error {
	k := strings.ToLower(key)
	if seen[k] {
		d.pos = keyPos
		return d.errf("duplicate or case-variant key %q", key)
	}
	seen[k] = true
	return nil
}

func (d *decoder) mapValue(p *plan, v reflect.Value) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	if err := d.enter(); err != nil {
		return err
	}
	m := reflect.MakeMap(p.typ)
	folded := map[string]bool{}
	err := d.members(func(key string, keyPos int) error { return d.fold(folded, key, keyPos) }, func(key string) error {
		e := reflect.New(p.typ.Elem()).Elem()
		if err := d.value(p.elem, e); err != nil {
			return err
		}
		m.SetMapIndex(reflect.ValueOf(key).Convert(p.typ.Key()), e)
		return nil
	})
	if err != nil {
		return err
	}
	v.Set(m)
	d.depth--
	return nil
}

// skip validates one generic JSON value (objects, arrays, strings, numbers,
// literals) and moves past it. Objects may not repeat a key, not even in a
// different case.
func (d *decoder) skip() error {
	d.ws()
	switch c := d.peek(); {
	case c == '{':
		d.pos++
		if err := d.enter(); err != nil {
			return err
		}
		folded := map[string]bool{}
		err := d.members(func(key string, keyPos int) error { return d.fold(folded, key, keyPos) },
			func(string) error { return d.skip() })
		if err != nil {
			return err
		}
		d.depth--
	case c == '[':
		d.pos++
		if err := d.enter(); err != nil {
			return err
		}
		if err := d.elements(func(int) error { return d.skip() }); err != nil {
			return err
		}
		d.depth--
	case c == '"':
		_, err := d.str()
		return err
	case c == 't' && bytes.HasPrefix(d.data[d.pos:], []byte("true")):
		d.pos += 4
	case c == 'f' && bytes.HasPrefix(d.data[d.pos:], []byte("false")):
		d.pos += 5
	case c == 'n' && bytes.HasPrefix(d.data[d.pos:], []byte("null")):
		d.pos += 4
	case c == '-' || c >= '0' && c <= '9':
		end := numberEnd(d.data, d.pos)
		if end < 0 {
			return d.errf("malformed number")
		}
		d.pos = end
	default:
		if d.pos >= len(d.data) {
			return d.errf("unexpected end of document")
		}
		return d.errf("unexpected %q", c)
	}
	return nil
}

// integer parses a plain JSON integer (no fraction, no exponent, no leading
// zeros, no "-0") within ±(2^53−1).
func (d *decoder) integer() (int64, error) {
	start := d.pos
	end := numberEnd(d.data, start)
	if end < 0 {
		return 0, d.errf("want an integer")
	}
	tok := d.data[start:end]
	if bytes.ContainsAny(tok, ".eE") || string(tok) == "-0" {
		return 0, d.errf("want a plain integer, got %s", clip(tok))
	}
	n, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil || n > maxSafeInt || n < -maxSafeInt {
		return 0, d.errf("integer %s is outside ±(2^53−1)", clip(tok))
	}
	d.pos = end
	return n, nil
}

// numberEnd returns the end of the RFC 8259 number starting at i, or -1
// when there is none or something other than a delimiter follows it.
func numberEnd(b []byte, i int) int {
	i = jsonnum.End(b, i)
	if i >= 0 && i < len(b) {
		switch b[i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
		default:
			return -1
		}
	}
	return i
}

// str parses a JSON string at d.pos (which must be '"') and returns its
// value. Invalid UTF-8, raw control characters and escapes RFC 8785 would
// not write are errors (encoding/json would substitute U+FFFD or accept a
// second spelling).
func (d *decoder) str() (string, error) {
	start := d.pos + 1
	i := start
	// Fast path: printable ASCII without escapes.
	for i < len(d.data) && plainASCII[d.data[i]] {
		i++
	}
	if i < len(d.data) && d.data[i] == '"' {
		d.pos = i + 1
		if d.src != "" {
			return d.src[start:i], nil
		}
		return string(d.data[start:i]), nil
	}
	var b []byte
	b = append(b, d.data[start:i]...)
	for {
		if i >= len(d.data) {
			d.pos = i
			return "", d.errf("unterminated string")
		}
		c := d.data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return string(b), nil
		case c < 0x20:
			d.pos = i
			return "", d.errf("raw control character 0x%02x in a string", c)
		case c < 0x80 && c != '\\':
			b = append(b, c)
			i++
		case c >= 0x80:
			r, n := utf8.DecodeRune(d.data[i:])
			if r == utf8.RuneError && n <= 1 {
				d.pos = i
				return "", d.errf("invalid UTF-8 in a string")
			}
			b = append(b, d.data[i:i+n]...)
			i += n
		default: // backslash
			// Every evidence document writes strings with RFC 8785's
			// escaping: characters literally, except '"', '\\' and control
			// characters. "\/" or "\u0041" would be a second spelling of
			// the same value.
			if i+1 >= len(d.data) {
				d.pos = i
				return "", d.errf("unterminated escape")
			}
			e := d.data[i+1]
			i += 2
			switch e {
			case '"', '\\':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := hex4(d.data, i)
				if !ok || !canonicalUEscape(r, d.data[i:i+4]) {
					d.pos = i - 2
					return "", d.errf("\\u escape is not in canonical form (write the character itself)")
				}
				i += 4
				b = append(b, byte(r))
			default:
				d.pos = i - 2
				return "", d.errf("escape \\%c is not in canonical form", e)
			}
		}
	}
}

// canonicalUEscape reports whether \u<h> is how RFC 8785 writes r: only
// control characters without a short escape, in lower-case hex.
func canonicalUEscape(r rune, h []byte) bool {
	return r < 0x20 && r != '\b' && r != '\f' && r != '\n' && r != '\r' && r != '\t' && !bytes.ContainsAny(h, "ABCDEF")
}

// plainASCII marks the bytes a string may hold without a closer look.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// clip bounds how much of a document an error message quotes.
func clip(b []byte) string {
	const max = 48
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "…"
	}
	return strconv.Quote(string(b))
}
