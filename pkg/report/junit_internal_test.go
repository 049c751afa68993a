package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/runmill/verify/internal/corpus"
	"github.com/runmill/verify/pkg/report/internal/xmlscan"
	"github.com/runmill/verify/pkg/rmerr"
)

// jxOracle reads doc with encoding/xml instead of the hand-written scanner
// and drives the same junitBuilder, so that a difference between the two is
// a difference in reading XML, never in JUnit semantics. encoding/xml
// decides well-formedness; the rules of runmill's subset that it does not
// enforce (internal/xmlscan's package comment) are checked here independently,
// on the raw bytes of each token, and written without reference to the
// scanner's code.
func jxOracle(doc []byte, opts Options) (*Inventory, error) {
	lim := junitLimits(opts.Limits)
	bad := func(format string, args ...any) error {
		return rmerr.New(rmerr.ReportMalformed, format, args...)
	}
	if len(doc) == 0 {
		return nil, bad("empty")
	}
	if int64(len(doc)) > lim.MaxBytes {
		return nil, rmerr.New(rmerr.ReportLimit, "bytes")
	}
	body := bytes.TrimPrefix(doc, []byte("\xEF\xBB\xBF"))
	bom := len(body) < len(doc)

	var ascii bool
	charset := func(label string, r io.Reader) (io.Reader, error) {
		if strings.EqualFold(label, "us-ascii") || strings.EqualFold(label, "ascii") {
			ascii = true
			return r, nil
		}
		return nil, fmt.Errorf("charset %q", label)
	}
	d1 := xml.NewDecoder(bytes.NewReader(body)) // well-formedness
	d2 := xml.NewDecoder(bytes.NewReader(body)) // the same tokens with raw names
	d1.CharsetReader, d2.CharsetReader = charset, charset

	b := newJUnitBuilder(opts.Identity, lim)
	attrs := xmlscan.NewAttrs(jaCount, lim.MaxField)
	depth, rootSeen, prev := 0, false, int64(0)
	var names []string
	for n := 0; ; n++ {
		t1, err := d1.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, bad("encoding/xml: %v", err)
		}
		t2, err := d2.RawToken()
		if err != nil {
			return nil, fmt.Errorf("oracle out of step: %v", err)
		}
		raw := body[prev:d1.InputOffset()]
		prev = d1.InputOffset()
		// Every byte of the document is an XML Char in UTF-8 (ASCII once
		// declared so); checked token by token, so that the first problem in
		// document order is the one reported, as the scanner reports it.
		for i := 0; i < len(raw); {
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n == 1 || !jxOracleChar(int64(r)) || ascii && r >= 0x80 {
				return nil, bad("char")
			}
			i += n
		}
		switch t := t1.(type) {
		case xml.ProcInst:
			if strings.EqualFold(t.Target, "xml") {
				if n != 0 || !jxOracleDecl.Match(raw) {
					return nil, bad("declaration")
				}
				if ascii && bom {
					return nil, bad("declared US-ASCII after a UTF-8 byte-order mark")
				}
				continue
			}
			if !jxOraclePI.Match(raw) {
				return nil, bad("pi")
			}
			if len(t.Target) > xmlscan.MaxName {
				return nil, rmerr.New(rmerr.ReportLimit, "name")
			}
		case xml.Directive:
			return nil, bad("directive")
		case xml.Comment:
		case xml.CharData:
			cdata := bytes.HasPrefix(raw, []byte("<![CDATA["))
			if depth == 0 {
				if cdata || len(bytes.Trim(raw, " \t\r\n")) > 0 {
					return nil, bad("text outside the root")
				}
				continue
			}
			if !cdata {
				if err := jxOracleRefs(raw); err != nil {
					return nil, err
				}
			}
			if b.sink != nil {
				b.sink.Write(t)
			}
		case xml.StartElement:
			if depth == 0 && rootSeen {
				return nil, bad("second root")
			}
			rootSeen = true
			r2 := t2.(xml.StartElement)
			name := jxOracleName(r2.Name)
			if len(name) > xmlscan.MaxName {
				return nil, rmerr.New(rmerr.ReportLimit, "name")
			}
			if len(r2.Attr) > xmlscan.MaxAttrs {
				return nil, rmerr.New(rmerr.ReportLimit, "attrs")
			}
			seen := map[string]bool{}
			for i := range attrs.F {
				attrs.F[i].Reset()
			}
			for _, a := range r2.Attr {
				an := jxOracleName(a.Name)
				if len(an) > xmlscan.MaxName {
					return nil, rmerr.New(rmerr.ReportLimit, "name")
				}
				if seen[an] {
					return nil, bad("duplicate attribute")
				}
				seen[an] = true
			}
			if !jxOracleStart.Match(raw) {
				return nil, bad("start tag %q", raw)
			}
			if err := jxOracleRefs(raw); err != nil {
				return nil, err
			}
			for _, a := range r2.Attr {
				if id := attrOf([]byte(jxOracleName(a.Name))); id != jaNone {
					attrs.F[id].Set = true
					attrs.F[id].Write([]byte(a.Value))
				}
			}
			var parent []byte
			if len(names) > 0 {
				parent = []byte(names[len(names)-1])
			}
			if err := b.Start([]byte(name), parent, &attrs); err != nil {
				return nil, err
			}
			names = append(names, name)
			depth++
		case xml.EndElement:
			names = names[:len(names)-1]
			depth--
			if err := b.End(); err != nil {
				return nil, err
			}
		}
	}
	if !rootSeen {
		return nil, bad("no root")
	}
	inv, err := b.finish()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(doc)
	inv.SHA256, inv.Bytes = hex.EncodeToString(sum[:]), int64(len(doc))
	return inv, nil
}

func jxOracleChar(r int64) bool {
	return r == 0x9 || r == 0xA || r == 0xD || 0x20 <= r && r <= 0xD7FF ||
		0xE000 <= r && r <= 0xFFFD || 0x10000 <= r && r <= 0x10FFFF
}

func jxOracleName(n xml.Name) string {
	if n.Space != "" {
		return n.Space + ":" + n.Local
	}
	return n.Local
}

const jxOracleNameRE = `[A-Za-z_:][A-Za-z0-9._:-]*`

var (
	jxOracleDecl = regexp.MustCompile(`^<\?xml[ \t\r\n]+version[ \t\r\n]*=[ \t\r\n]*("1\.0"|'1\.0')` +
		`(?:[ \t\r\n]+encoding[ \t\r\n]*=[ \t\r\n]*(?:"(?i:utf-8|us-ascii|ascii)"|'(?i:utf-8|us-ascii|ascii)'))?` +
		`(?:[ \t\r\n]+standalone[ \t\r\n]*=[ \t\r\n]*(?:"(?:yes|no)"|'(?:yes|no)'))?[ \t\r\n]*\?>$`)
	jxOraclePI    = regexp.MustCompile(`^<\?` + jxOracleNameRE + `(?s:[ \t\r\n].*)?\?>$`)
	jxOracleStart = regexp.MustCompile(`^<` + jxOracleNameRE +
		`(?:[ \t\r\n]+` + jxOracleNameRE + `[ \t\r\n]*=[ \t\r\n]*(?:"[^"<]*"|'[^'<]*'))*[ \t\r\n]*/?>$`)
	jxOracleCharRef = regexp.MustCompile(`&#(x[0-9A-Fa-f]+|[0-9]+);`)
)

// jxOracleRefs checks that every character reference names an XML Char:
// encoding/xml reads a surrogate such as &#xD800; as U+FFFD.
func jxOracleRefs(raw []byte) error {
	for _, m := range jxOracleCharRef.FindAllSubmatch(raw, -1) {
		digits, base := string(m[1]), 10
		if digits[0] == 'x' {
			digits, base = digits[1:], 16
		}
		digits = strings.TrimLeft(digits, "0")
		v, err := strconv.ParseInt(digits, base, 32)
		if digits == "" || err != nil || !jxOracleChar(v) {
			return rmerr.New(rmerr.ReportMalformed, "char ref %s", m[0])
		}
	}
	return nil
}

func jxParseBoth(t *testing.T, doc []byte, opts Options) {
	t.Helper()
	got, gerr := parseJUnit(bytes.NewReader(doc), opts)
	want, werr := jxOracle(doc, opts)
	switch {
	case gerr != nil && werr != nil:
		if rmerr.CodeOf(gerr) != rmerr.CodeOf(werr) {
			t.Fatalf("scanner: %v\noracle:  %v\ndoc: %q", gerr, werr, doc)
		}
	case gerr != nil || werr != nil:
		t.Fatalf("scanner: %v\noracle:  %v\ndoc: %q", gerr, werr, doc)
	case !reflect.DeepEqual(got, want):
		t.Fatalf("inventories differ\nscanner: %+v\noracle:  %+v\ndoc: %q", got, want, doc)
	}
}

// jxDiffSeeds are small documents at the edges of the subset.
var jxDiffSeeds = []string{
	`<testsuite><testcase name="a"/></testsuite>`,
	"\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<testsuites><testsuite name='s'><testcase classname='c' name='n'><failure message='m'>x</failure></testcase></testsuite></testsuites>",
	`<?xml version='1.0' encoding='US-ASCII' standalone='yes'?><testsuite><testcase name="a&#x41;&#66;&lt;&amp;"/></testsuite>`,
	`<?xml version="1.0" encoding="ISO-8859-1"?><testsuite><testcase name="a"/></testsuite>`,
	`<?xml version="1.1"?><testsuite><testcase name="a"/></testsuite>`,
	`<!DOCTYPE x [<!ENTITY a "b">]><testsuite><testcase name="&a;"/></testsuite>`,
	`<testsuite><testcase name="a"/></testsuite><testsuite/>`,
	`<testsuite><testcase name="a"/></testsuite>trailing`,
	`<testsuite><testcase name="a" name="b"/></testsuite>`,
	`<testsuite><testcase name="a"b="c"/></testsuite>`,
	`<testsuite><testcase name="&#xD800;"/></testsuite>`,
	`<testsuite><testcase name="&#0;"/></testsuite>`,
	`<testsuite><testcase name="a]]>b"/>]]></testsuite>`,
	"<testsuite><testcase name=\"a\r\nb\rc\"><skipped>x\r\ny<![CDATA[\r]]]]></skipped></testcase></testsuite>",
	`<testsuite><!-- c -- d --><testcase name="a"/></testsuite>`,
	`<testsuite><?pi x?><?xml version="1.0"?><testcase name="a"/></testsuite>`,
	`<a:b:c/>`,
	`<testsuite><testcase name="x"><error/><failure message="f"/><skipped/></testcase><testcase name="y" status="disabled"/></testsuite>`,
	`<testsuites><testsuite name="A"><testsuite name="B"><testcase classname="c" name="t"/></testsuite></testsuite><testsuite name="C"><testcase classname="c" name="t"/></testsuite></testsuites>`,
	`<testsuite><testsuite><testcase name="t"><testcase name="u"/></testcase></testsuite></testsuite>`,
	`<testsuite tests="3" failures="1"><error message="setup">boom</error><testcase name="t"><flakyFailure/></testcase><testcase name="u"><rerunFailure/></testcase></testsuite>`,
	"<testsuite>\xC3\x28</testsuite>",
	"<testsuite><testcase name=\"\xEF\xBF\xBE\"/></testsuite>",
	"<?xml version=\"1.0\"?>",
	"",
	"  \n",
	`<?xml-stylesheet href="x"?><testsuite><testcase name="a"/></testsuite>`,
	`<?xml?><testsuite/>`,
	`<testsuite><![CDATA[x]]></testsuite><![CDATA[y]]>`,
	`<testsuite><testcase name="&#x10FFFF;&#1114112;"/></testsuite>`,
	`<testsuite ><testcase	name = "a" /></testsuite >`,
}

// FuzzJUnitDifferential holds the scanner to encoding/xml: for every input,
// both readers reject it (with the same RM code) or both produce the same
// Inventory. In particular the scanner never accepts a document encoding/xml
// rejects as not well-formed.
func FuzzJUnitDifferential(f *testing.F) {
	for _, s := range jxDiffSeeds {
		f.Add([]byte(s), false)
	}
	jxAddCorpus(f)
	f.Fuzz(func(t *testing.T, doc []byte, suitePath bool) {
		opts := Options{Limits: Limits{MaxDepth: 8, MaxField: 64, MaxTests: 100}}
		if suitePath {
			opts.Identity = IdentitySuitePath
		}
		jxParseBoth(t, doc, opts)
	})
}

// jxAddCorpus seeds a fuzz target with the JUnit corpus, read in place.
func jxAddCorpus(f *testing.F) {
	dir := filepath.Join(corpus.Dir(f), "junit")
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		doc, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		if len(doc) <= 64<<10 {
			f.Add(doc, false)
		}
	}
}

func TestJUnitDifferentialSeeds(t *testing.T) {
	for _, s := range jxDiffSeeds {
		for _, id := range []Identity{IdentityDefault, IdentitySuitePath} {
			jxParseBoth(t, []byte(s), Options{Identity: id, Limits: Limits{MaxDepth: 8, MaxField: 64, MaxTests: 100}})
		}
	}
}

// TestJUnitDifferentialCorpus runs every corpus file through both readers
// with the default limits, whatever its size.
func TestJUnitDifferentialCorpus(t *testing.T) {
	dir := filepath.Join(corpus.Dir(t), "junit")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		doc, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []Identity{IdentityDefault, IdentitySuitePath} {
			jxParseBoth(t, doc, Options{Identity: id})
		}
	}
}

// TestJUnitDedupCollisions forces every id's hash equal, as a collision
// would: ids are then told apart by their bytes, repeats are counted
// against the first occurrence, and whether suite-path ids would separate
// them follows the suite paths.
func TestJUnitDedupCollisions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ids   []string
		paths []uint32
		extra map[int32]int32
		split bool
	}{
		{"distinct", []string{"a", "b", "c"}, []uint32{1, 1, 1}, nil, true},
		{"repeats", []string{"a", "b", "a", "c", "b", "a"}, []uint32{1, 1, 2, 1, 2, 3}, map[int32]int32{0: 2, 1: 1}, true},
		{"same suite", []string{"a", "b", "a"}, []uint32{1, 1, 1}, map[int32]int32{0: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newJUnitBuilder(IdentityDefault, DefaultLimits)
			b.blocks = [][]byte{[]byte(strings.Join(tc.ids, ""))}
			off := 0
			for i, id := range tc.ids {
				b.insert(jbRecord{off: uint32(off), n: uint32(len(id)), path: tc.paths[i]})
				off += len(id)
			}
			for _, chunk := range b.recs {
				for i := range chunk {
					chunk[i].hash = 7
				}
			}
			b.dedup()
			if len(b.dupExtra) != len(tc.extra) {
				t.Fatalf("repeats %v, want %v", b.dupExtra, tc.extra)
			}
			for k, v := range tc.extra {
				if b.dupExtra[k] != v {
					t.Fatalf("repeats %v, want %v", b.dupExtra, tc.extra)
				}
			}
			if b.pathsSplit != tc.split {
				t.Fatalf("pathsSplit %v, want %v", b.pathsSplit, tc.split)
			}
		})
	}
}

// TestJUnitSortKeys holds the radix sort to slices.Sort: the same order,
// equal hashes in record order, at sizes on both sides of its cut-over.
func TestJUnitSortKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 255, 256, 257, 5000} {
		keys := make([]uint64, n)
		for i := range keys {
			h := rng.Uint32()
			if rng.IntN(4) == 0 {
				h &= 0xFF00FF // many equal hashes, and equal digits
			}
			keys[i] = uint64(h)<<32 | uint64(i)
		}
		want := slices.Clone(keys)
		slices.Sort(want)
		if got := sortKeys(keys, make([]uint64, n)); !slices.Equal(got, want) {
			t.Fatalf("n=%d: radix order differs from slices.Sort", n)
		}
	}
}
