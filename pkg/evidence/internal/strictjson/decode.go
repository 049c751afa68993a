// Package strictjson is the strict decoder every evidence document goes
// through (the bundle, its statement, the trust and the expectations
// documents), and the one string scanner it shares with pkg/evidence's
// canonical checker. It exists
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
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// MaxDepth bounds nesting in every evidence document. The deepest legitimate
// path (predicate.checks[].findings[].ids[]) is 6 levels deep; generic
// objects (the sandbox probe) get the rest.
const MaxDepth = 32

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

// Decode decodes data into v (a non-nil pointer) under the rules of the
// package comment.
func Decode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("strictjson: Decode needs a non-nil pointer")
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

func (d *decoder) enter() error {
	d.depth++
	if d.depth > MaxDepth {
		return d.errf("nested deeper than %d levels", MaxDepth)
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
		return d.boolean(v)
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
		return d.unmarshaler(v)
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
		end := NumberEnd(d.data, d.pos)
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
	end := NumberEnd(d.data, start)
	if end < 0 {
		return 0, d.errf("want an integer")
	}
	tok := d.data[start:end]
	if bytes.ContainsAny(tok, ".eE") || string(tok) == "-0" {
		return 0, d.errf("want a plain integer, got %s", Clip(tok))
	}
	n, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil || n > maxSafeInt || n < -maxSafeInt {
		return 0, d.errf("integer %s is outside ±(2^53−1)", Clip(tok))
	}
	d.pos = end
	return n, nil
}

// str parses a JSON string at d.pos (which must be '"') and returns its
// value, under ScanString's rules (encoding/json would substitute U+FFFD or
// accept a second spelling).
func (d *decoder) str() (string, error) {
	start := d.pos + 1
	end, esc, serr := ScanString(d.data, d.pos)
	if serr != nil {
		d.pos = serr.Off
		return "", d.errf("%s", serr)
	}
	d.pos = end
	if esc {
		return string(Unescape(d.data[start : end-1])), nil
	}
	return d.src[start : end-1], nil
}

func (d *decoder) boolean(v reflect.Value) error {
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
	return nil
}

// unmarshaler decodes a type with its own UnmarshalJSON or UnmarshalText and
// refuses a value that does not re-marshal to exactly its bytes: the type's
// own decoder may be lenient, the document may not.
func (d *decoder) unmarshaler(v reflect.Value) error {
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
		return d.errf("value %s is not in its one canonical form (want %s)", Clip(raw), Clip(back))
	}
	return nil
}
