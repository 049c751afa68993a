package report_test

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// genReader produces input on demand, so a hostile report of any size costs
// no memory in the test itself, and counts what the parser consumed.
type genReader struct {
	next func() []byte // returns the next chunk, nil at the end
	buf  []byte
	read int64
}

func (g *genReader) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		if g.buf = g.next(); g.buf == nil {
			return 0, io.EOF
		}
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	g.read += int64(n)
	return n, nil
}

// repeat yields head, then body n times (forever when n < 0), then tail.
func genRepeat(head, body, tail string, n int) *genReader {
	i := -1
	return &genReader{next: func() []byte {
		i++
		switch {
		case i == 0:
			return []byte(head)
		case n < 0 || i <= n:
			return []byte(body)
		case i == n+1:
			return []byte(tail)
		}
		return nil
	}}
}

// allocated runs f and returns the bytes it allocated.
func bytesAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func wantCode(t *testing.T, err error, code rmerr.Code, fragment string) {
	t.Helper()
	if got := rmerr.CodeOf(err); got != code {
		t.Fatalf("want %s, got %q: %v", code, got, err)
	}
	if !strings.Contains(err.Error(), fragment) {
		t.Fatalf("error %q does not mention %q", err, fragment)
	}
}

func TestHostileGoJSONLongLine(t *testing.T) {
	// gotestsum and go-junit-report die on a line past bufio.Scanner's 64 KiB.
	out := strings.Repeat("x", 70<<10)
	input := goEvents(
		`{"Action":"run","Package":"p","Test":"TestBig"}`,
		`{"Action":"output","Package":"p","Test":"TestBig","Output":"`+out+`\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestBig"}`,
		`{"Action":"fail","Package":"p"}`,
	)
	inv, err := report.Parse(strings.NewReader(input), report.GoJSON, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Tests) != 1 || inv.Tests[0].Status != report.Failed {
		t.Fatalf("tests: %+v", inv.Tests)
	}
	if len(inv.Tests[0].Message) != report.DefaultLimits.MaxField {
		t.Errorf("message of %d bytes, want it cut to %d", len(inv.Tests[0].Message), report.DefaultLimits.MaxField)
	}
}

func TestHostileLineOverCap(t *testing.T) {
	lim := report.Limits{MaxBytes: 64 << 20, MaxDepth: 64, MaxField: 1024, MaxLine: 1 << 20, MaxTests: 1000}
	for _, tc := range []struct {
		format report.Format
		head   string
	}{
		{report.GoJSON, `{"Action":"output","Package":"p","Output":"`},
		{report.TAP, "1..1\nok 1 - "},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			in := genRepeat(tc.head, strings.Repeat("y", 64<<10), "\n", 20<<20/(64<<10)) // a 20 MB line
			var err error
			alloc := bytesAllocated(func() { _, err = report.Parse(in, tc.format, report.Options{Limits: lim}) })
			wantCode(t, err, rmerr.ReportLimit, "longer than 1048576 bytes (Limits.MaxLine)")
			if in.read > 4<<20 {
				t.Errorf("read %d bytes of a line that is over the cap after 1 MiB", in.read)
			}
			if alloc > 16<<20 {
				t.Errorf("allocated %d bytes for a line capped at 1 MiB", alloc)
			}
		})
	}
}

func TestHostileSizeCap(t *testing.T) {
	lim := report.Limits{MaxBytes: 1 << 20, MaxDepth: 64, MaxField: 1024, MaxLine: 4096, MaxTests: 1 << 30}
	// An endless stream must end at MaxBytes, never hang.
	for _, tc := range []struct {
		format     report.Format
		head, body string
	}{
		{report.TAP, "TAP version 13\n", "# still going\n"},
		{report.GoJSON, "", `{"Action":"output","Package":"p","Output":"more\n"}` + "\n"},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			_, err := report.Parse(genRepeat(tc.head, tc.body, "", -1), tc.format, report.Options{Limits: lim})
			wantCode(t, err, rmerr.ReportLimit, "larger than 1048576 bytes (Limits.MaxBytes)")
		})
	}
}

func TestHostileTestCount(t *testing.T) {
	lim := report.Limits{MaxBytes: 64 << 20, MaxDepth: 64, MaxField: 1024, MaxLine: 4096, MaxTests: 100}
	n := 0
	tap := &genReader{next: func() []byte {
		n++
		return fmt.Appendf(nil, "ok %d - test %d\n", n, n)
	}}
	_, err := report.Parse(tap, report.TAP, report.Options{Limits: lim})
	wantCode(t, err, rmerr.ReportLimit, "more than 100 test points (Limits.MaxTests)")

	m := 0
	gj := &genReader{next: func() []byte {
		m++
		return fmt.Appendf(nil, `{"Action":"pass","Package":"p","Test":"Test%d"}`+"\n", m)
	}}
	_, err = report.Parse(gj, report.GoJSON, report.Options{Limits: lim})
	wantCode(t, err, rmerr.ReportLimit, "more than 100 tests (Limits.MaxTests)")
}

// Ids are byte-exact (issue #13): an id with invalid UTF-8 is refused in
// every format, so two different byte strings can never become one id; the
// same bytes in a message are only text, replaced and noted.
func TestHostileInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format report.Format
		input  string
		reason string
	}{
		{"tap latin-1", report.TAP, "1..2\nok 1 - caf\xe9 latin-1\nok 2 - caf\xc3\xa9 utf-8\n", `TAP line 2: test id "caf\xe9 latin-1" is not valid UTF-8 (byte 0xE9 at offset 3)`},
		// Repaired with U+FFFD these two would collide; refused, neither
		// can stand for the other.
		{"tap collision", report.TAP, "1..2\nok 1 - a\xff\nok 2 - a\xfe\n", `"a\xff" is not valid UTF-8`},
		{"tap suite-path child", report.TAP, "1..1\nok 1 - p {\n    1..1\n    ok 1 - c\x80\n}\n", `"c\x80"`},
		{"go-json", report.GoJSON, "{\"Action\":\"pass\",\"Package\":\"p\",\"Test\":\"T\xe9st\"}\n", `"T\xe9st" holds invalid UTF-8`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := report.Parse(strings.NewReader(tc.input), tc.format, report.Options{Identity: report.IdentitySuitePath})
			wantCode(t, err, rmerr.ReportIdentity, tc.reason)
			if !utf8.ValidString(err.Error()) {
				t.Errorf("error text is not UTF-8: %q", err)
			}
		})
	}
	// JUnit refuses any invalid UTF-8 in the document, ids included.
	_, err := report.Parse(strings.NewReader("<testsuite><testcase name=\"a\xff\"/></testsuite>"), report.JUnit, report.Options{})
	wantCode(t, err, rmerr.ReportMalformed, "invalid UTF-8 (byte 0xFF)")

	// In a message the bytes are text: replaced, noted, the report stands.
	inv, err := report.Parse(strings.NewReader("1..1\nnot ok 1 - t\n  ---\n  message: caf\xe9\n  ...\n"), report.TAP, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if inv.Tests[0].Message != "caf\uFFFD" || !strings.Contains(strings.Join(inv.Notes, "\n"), "invalid UTF-8") {
		t.Errorf("message %q, notes %q", inv.Tests[0].Message, inv.Notes)
	}
}

func TestHostilePlainText(t *testing.T) {
	text := "This is not a test report.\nIt has lines.\n"
	_, err := report.Parse(strings.NewReader(text), report.TAP, report.Options{})
	wantCode(t, err, rmerr.ReportMalformed, "not a TAP stream")
	_, err = report.Parse(strings.NewReader(text), report.GoJSON, report.Options{})
	wantCode(t, err, rmerr.ReportMalformed, "no test2json event")
	for _, f := range []report.Format{report.TAP, report.GoJSON} {
		_, err = report.Parse(strings.NewReader(""), f, report.Options{})
		wantCode(t, err, rmerr.ReportEmpty, "0 bytes")
	}
}

func TestHostileTAPBailOut(t *testing.T) {
	// Bail out! in the middle of a long stream: what ran is kept, the rest
	// is neither parsed nor trusted, and the report carries a fault.
	in := genRepeat("TAP version 13\n1..100000\nok 1 - first\nnot ok 2 - second\nBail out! lost the database\n", "ok 3 - never parsed\n", "", 50000)
	inv, err := report.Parse(in, report.TAP, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Tests) != 2 || len(inv.Faults) != 1 || !strings.Contains(inv.Faults[0].Message, "Bail out! lost the database") {
		t.Fatalf("tests %+v faults %+v", inv.Tests, inv.Faults)
	}
	if inv.Bytes != in.read {
		t.Errorf("digest covers %d bytes of %d: the rest of the file must still be hashed", inv.Bytes, in.read)
	}
}

func TestHostileTAPDeepNesting(t *testing.T) {
	for _, id := range []report.Identity{report.IdentityDefault, report.IdentitySuitePath} {
		t.Run("identity="+string(id), func(t *testing.T) {
			// Each line opens one more level; 100 000 levels would be 20 GB
			// written out, so the generator stops when the parser stops reading.
			depth := 0
			in := &genReader{next: func() []byte {
				if depth == 100000 {
					return nil
				}
				depth++
				return append(bytes.Repeat([]byte("    "), depth), "1..1\n"...)
			}}
			_, err := report.Parse(in, report.TAP, report.Options{Identity: id})
			wantCode(t, err, rmerr.ReportLimit, "(Limits.MaxDepth)")
			if depth > 1000 {
				t.Errorf("read %d levels before stopping", depth)
			}
		})
	}
	// Buffered subtests ({ }) nest the same way.
	var b strings.Builder
	for d := 0; d < 100; d++ {
		fmt.Fprintf(&b, "%sok 1 - level %d {\n", strings.Repeat("    ", d), d)
	}
	_, err := report.Parse(strings.NewReader(b.String()), report.TAP, report.Options{Identity: report.IdentitySuitePath})
	wantCode(t, err, rmerr.ReportLimit, "(Limits.MaxDepth)")
}

func TestHostileGoJSONDeepNesting(t *testing.T) {
	name := "TestDeep" + strings.Repeat("/x", 100000)
	_, err := report.Parse(strings.NewReader(goEvents(`{"Action":"pass","Package":"p","Test":"`+name+`"}`)), report.GoJSON, report.Options{})
	wantCode(t, err, rmerr.ReportLimit, "subtests deep")

	// JSON nesting inside an unknown field: encoding/json's depth limit.
	deep := `{"Action":"pass","Package":"p","Test":"T","X":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}"
	_, err = report.Parse(strings.NewReader(goEvents(deep)), report.GoJSON, report.Options{})
	wantCode(t, err, rmerr.ReportMalformed, "exceeded max depth")
}

func TestHostileHugePlan(t *testing.T) {
	var err error
	alloc := bytesAllocated(func() {
		_, err = report.Parse(strings.NewReader("1..1000000000\nok 1 - lonely\n"), report.TAP, report.Options{})
	})
	wantCode(t, err, rmerr.ReportMalformed, "plan 1..1000000000 but the stream has 1 test point(s)")
	if alloc > 4<<20 {
		t.Errorf("a plan number must not size anything: allocated %d bytes", alloc)
	}
	// A huge test number out of sequence must not size anything either.
	alloc = bytesAllocated(func() {
		_, err = report.Parse(strings.NewReader("1..2\nok 999999999999 - a\nok 1 - b\n"), report.TAP, report.Options{})
	})
	wantCode(t, err, rmerr.ReportMalformed, "outside the plan")
	if alloc > 4<<20 {
		t.Errorf("allocated %d bytes", alloc)
	}
}

func TestHostileLongIDs(t *testing.T) {
	lim := report.Limits{MaxBytes: 1 << 20, MaxDepth: 8, MaxField: 64, MaxLine: 1 << 16, MaxTests: 100}
	a, b := strings.Repeat("a", 500)+"1", strings.Repeat("a", 500)+"2"
	inv, err := report.Parse(strings.NewReader("1..2\nok 1 - "+a+"\nok 2 - "+b+"\n"), report.TAP, report.Options{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	x, y := inv.Tests[0].ID, inv.Tests[1].ID
	if x == y || len(x) > 64+80 || !strings.Contains(string(x), "…sha256:") {
		t.Errorf("long ids must stay unique and bounded: %q %q", x, y)
	}
	// Suite-path composition cannot grow an id past the cap either.
	var s strings.Builder
	for d := 6; d >= 0; d-- {
		ind := strings.Repeat("    ", d)
		if d == 6 {
			fmt.Fprintf(&s, "%s1..1\n%sok 1 - leaf\n", ind, ind)
			continue
		}
		fmt.Fprintf(&s, "%sok 1 - %s\n%s1..1\n", ind, strings.Repeat("p", 60), ind)
	}
	inv, err = report.Parse(strings.NewReader(s.String()), report.TAP, report.Options{Identity: report.IdentitySuitePath, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range inv.Tests {
		if len(tc.ID) > 64+80 {
			t.Errorf("id of %d bytes: %q", len(tc.ID), tc.ID)
		}
	}
}
