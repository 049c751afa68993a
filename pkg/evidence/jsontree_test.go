package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// jnode is a JSON value that keeps member order and allows duplicate keys,
// so the tamper matrix can write documents encoding/json cannot.
type jnode struct {
	kind    byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	members []jmember
	elems   []*jnode
	str     string // string value
	raw     string // number or literal text, or a string's raw spelling when set
}

type jmember struct {
	key    string
	rawKey string // raw spelling of the key when set
	val    *jnode
}

func parseTree(t testing.TB, b []byte) *jnode {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // a number keeps its spelling
	n, err := tree(d)
	if err != nil {
		t.Fatalf("parsing tree: %v", err)
	}
	return n
}

// tree reads one value from d's token stream, which keeps member order and
// repeated keys as they are written.
func tree(d *json.Decoder) (*jnode, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		n := &jnode{kind: 'a'}
		if v == '{' {
			n.kind = 'o'
		}
		for d.More() {
			var key string
			if n.kind == 'o' {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				key = k.(string)
			}
			e, err := tree(d)
			if err != nil {
				return nil, err
			}
			if n.kind == 'o' {
				n.members = append(n.members, jmember{key: key, val: e})
			} else {
				n.elems = append(n.elems, e)
			}
		}
		if _, err := d.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &jnode{kind: 's', str: v}, nil
	case json.Number:
		return &jnode{kind: 'n', raw: string(v)}, nil
	case bool:
		return &jnode{kind: 'b', raw: strconv.FormatBool(v)}, nil
	default: // nil
		return &jnode{kind: 'z', raw: "null"}, nil
	}
}

// encode writes n compactly with RFC 8785 string escaping; for a canonical
// document parsed by parseTree it reproduces the exact bytes.
func (n *jnode) encode(b *strings.Builder) {
	switch n.kind {
	case 'o':
		b.WriteByte('{')
		for i, m := range n.members {
			if i > 0 {
				b.WriteByte(',')
			}
			if m.rawKey != "" {
				b.WriteString(m.rawKey)
			} else {
				writeString(b, m.key)
			}
			b.WriteByte(':')
			m.val.encode(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, e := range n.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			e.encode(b)
		}
		b.WriteByte(']')
	case 's':
		if n.raw != "" {
			b.WriteString(n.raw)
		} else {
			writeString(b, n.str)
		}
	default:
		b.WriteString(n.raw)
	}
}

func (n *jnode) bytes() []byte {
	var b strings.Builder
	n.encode(&b)
	return []byte(b.String())
}

func writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, c := range []byte(s) {
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

func (n *jnode) clone() *jnode {
	c := *n
	c.members = nil
	for _, m := range n.members {
		c.members = append(c.members, jmember{key: m.key, rawKey: m.rawKey, val: m.val.clone()})
	}
	c.elems = nil
	for _, e := range n.elems {
		c.elems = append(c.elems, e.clone())
	}
	return &c
}

// mutation is one tampered document.
type mutation struct {
	path string // $.a.b[0].c
	kind string // changed, removed, duplicated, re-encoded, key-case, reordered
	doc  []byte
}

// mutate enumerates every mutation of every member, element and leaf of
// doc. reorder says whether reordering the array at a path matters.
func mutate(t testing.TB, doc []byte, reorder func(path string) bool) []mutation {
	root := parseTree(t, doc)
	var out []mutation
	// A locator finds, in a fresh clone of the tree, the node the walk is
	// at; each mutation clones the tree and changes the located node.
	type locator func(root *jnode) *jnode
	emit := func(path, kind string, f func(root *jnode)) {
		c := root.clone()
		f(c)
		out = append(out, mutation{path: path, kind: kind, doc: c.bytes()})
	}
	var walk func(n *jnode, path string, loc locator)
	walk = func(n *jnode, path string, loc locator) {
		switch n.kind {
		case 'o':
			for i, m := range n.members {
				p := path + "." + m.key
				emit(p, "removed", func(r *jnode) {
					o := loc(r)
					o.members = append(o.members[:i:i], o.members[i+1:]...)
				})
				emit(p, "duplicated", func(r *jnode) {
					o := loc(r)
					dup := jmember{key: o.members[i].key, val: o.members[i].val.clone()}
					o.members = append(o.members[:i+1:i+1], append([]jmember{dup}, o.members[i+1:]...)...)
				})
				if v := caseVariant(m.key); v != m.key {
					emit(p, "key-case", func(r *jnode) { loc(r).members[i].key = v })
				}
				emit(p, "key-re-encoded", func(r *jnode) {
					o := loc(r)
					o.members[i].rawKey = reencodeString(o.members[i].key)
				})
				walk(m.val, p, func(r *jnode) *jnode { return loc(r).members[i].val })
			}
			if len(n.members) > 1 && reorder(path+".{}") {
				emit(path+".{}", "reordered", func(r *jnode) {
					ms := loc(r).members
					ms[0], ms[len(ms)-1] = ms[len(ms)-1], ms[0]
				})
			}
		case 'a':
			for i, e := range n.elems {
				p := fmt.Sprintf("%s[%d]", path, i)
				emit(p, "removed", func(r *jnode) {
					a := loc(r)
					a.elems = append(a.elems[:i:i], a.elems[i+1:]...)
				})
				emit(p, "duplicated", func(r *jnode) {
					a := loc(r)
					a.elems = append(a.elems[:i+1:i+1], append([]*jnode{a.elems[i].clone()}, a.elems[i+1:]...)...)
				})
				walk(e, p, func(r *jnode) *jnode { return loc(r).elems[i] })
			}
			if len(n.elems) > 1 && reorder(path) {
				emit(path, "reordered", func(r *jnode) {
					a := loc(r)
					a.elems[0], a.elems[len(a.elems)-1] = a.elems[len(a.elems)-1], a.elems[0]
				})
			}
		default:
			emit(path, "changed", func(r *jnode) { change(loc(r)) })
			if re := reencode(n); re != "" {
				emit(path, "re-encoded", func(r *jnode) { loc(r).raw = re })
			}
		}
	}
	walk(root, "$", func(r *jnode) *jnode { return r })
	return out
}

var timestampRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT`)

// change alters a leaf's value while keeping its grammar where it can:
// timestamps move to 2099, hex digits move to the next hex digit, other
// strings grow an "x", numbers grow by one, booleans flip.
func change(n *jnode) {
	switch n.kind {
	case 's':
		s := n.str
		switch {
		case timestampRE.MatchString(s):
			n.str = "2099" + s[4:]
		case strings.ContainsAny(s, "0123456789abcdef"):
			i := strings.LastIndexAny(s, "0123456789abcdef")
			const hexd = "0123456789abcdef"
			n.str = s[:i] + string(hexd[(strings.IndexByte(hexd, s[i])+1)%16]) + s[i+1:]
		default:
			n.str = s + "x"
		}
	case 'n':
		if v, err := strconv.ParseInt(n.raw, 10, 64); err == nil {
			n.raw = strconv.FormatInt(v+1, 10)
		} else {
			n.raw = n.raw + "1"
		}
	case 'b':
		if n.raw == "true" {
			n.raw = "false"
		} else {
			n.raw = "true"
		}
	case 'z':
		n.kind, n.raw = 'n', "0"
	}
}

// reencode returns another spelling of the same value, or "".
func reencode(n *jnode) string {
	switch n.kind {
	case 's':
		if n.str == "" {
			return ""
		}
		return reencodeString(n.str)
	case 'n':
		if strings.ContainsAny(n.raw, ".eE") {
			return n.raw + "0"
		}
		return n.raw + ".0"
	}
	return ""
}

// reencodeString spells s with its first character as a \u escape.
func reencodeString(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	var b strings.Builder
	b.WriteByte('"')
	if r < 0x10000 {
		fmt.Fprintf(&b, `\u%04x`, r)
	} else {
		r1, r2 := 0xD800+((r-0x10000)>>10), 0xDC00+((r-0x10000)&0x3FF)
		fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
	}
	rest := &strings.Builder{}
	writeString(rest, s[size:])
	b.WriteString(strings.TrimPrefix(rest.String(), `"`))
	return b.String()
}

// caseVariant changes the case of the first letter of key.
func caseVariant(key string) string {
	for i, c := range key {
		switch {
		case c >= 'a' && c <= 'z':
			return key[:i] + strings.ToUpper(string(c)) + key[i+1:]
		case c >= 'A' && c <= 'Z':
			return key[:i] + strings.ToLower(string(c)) + key[i+1:]
		}
	}
	return key
}
