package strictjson

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

func TestScanString(t *testing.T) {
	for _, tc := range []struct {
		in    string
		end   int
		esc   bool
		fault Fault
		off   int
		ok    bool
	}{
		{in: `"abc"`, end: 5, ok: true},
		{in: `"é"x`, end: 4, ok: true},
		{in: `"a\"b\\c\n\u001f"`, end: 17, esc: true, ok: true},
		{in: `"abc`, fault: Unterminated, off: 4},
		{in: "\"a\tb\"", fault: RawControl, off: 2},
		{in: "\"a\xffb\"", fault: InvalidUTF8, off: 2},
		{in: `"a\`, fault: UnterminatedEscape, off: 2},
		{in: `"\u0041"`, fault: UEscape, off: 1},
		{in: `"\u001F"`, fault: UEscape, off: 1},
		{in: `"\u000a"`, fault: UEscape, off: 1}, // \n has a short form
		{in: `"\u00"`, fault: UEscape, off: 1},
		{in: `"\/"`, fault: OtherEscape, off: 1},
	} {
		end, esc, serr := ScanString([]byte(tc.in), 0)
		switch {
		case tc.ok && serr != nil:
			t.Errorf("ScanString(%q) refused: %v", tc.in, serr)
		case tc.ok && (end != tc.end || esc != tc.esc):
			t.Errorf("ScanString(%q) = %d, %v; want %d, %v", tc.in, end, esc, tc.end, tc.esc)
		case !tc.ok && serr == nil:
			t.Errorf("ScanString(%q) accepted, want fault %d", tc.in, tc.fault)
		case !tc.ok && (serr.Fault != tc.fault || serr.Off != tc.off):
			t.Errorf("ScanString(%q) = fault %d at %d, want %d at %d", tc.in, serr.Fault, serr.Off, tc.fault, tc.off)
		}
	}
}

// FuzzScanString holds the one evidence string scanner to RFC 8785 itself:
// a whole input is accepted exactly when it is a JSON string that is its
// own JCS transform, and Unescape yields what encoding/json decodes.
func FuzzScanString(f *testing.F) {
	for _, s := range []string{`"a"`, `"\u001f"`, `"\u001F"`, `"\/"`, `"\n"`, "\"\xe2\x80\xa8\"", `"\ud83d\ude00"`, "\"\x7f\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if len(b) == 0 || b[0] != '"' {
			return
		}
		end, esc, serr := ScanString(b, 0)
		accepted := serr == nil && end == len(b)
		canon := false
		if json.Valid(b) && utf8.Valid(b) {
			out, err := jcs.Transform(b)
			canon = err == nil && bytes.Equal(out, b)
		}
		if accepted != canon {
			t.Fatalf("ScanString(%q) accepted=%v (%v), RFC 8785 canonical=%v", s, accepted, serr, canon)
		}
		if !accepted {
			return
		}
		var want string
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if got := string(Unescape(b[1 : end-1])); got != want {
			t.Fatalf("Unescape(%q) = %q, encoding/json %q", s, got, want)
		}
		if esc != (bytes.IndexByte(b, '\\') >= 0) {
			t.Fatalf("ScanString(%q) esc = %v", s, esc)
		}
	})
}
