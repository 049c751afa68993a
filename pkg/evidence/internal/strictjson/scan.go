package strictjson

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/jsonnum"
)

// Fault is why a string is not in RFC 8785's one spelling.
type Fault uint8

const (
	Unterminated Fault = iota
	RawControl
	InvalidUTF8
	UnterminatedEscape
	// UEscape: a \u escape that is malformed or names a character RFC 8785
	// writes literally or by a short escape.
	UEscape
	// OtherEscape: an escape RFC 8785 never writes (\/ or an invalid one);
	// Char holds the byte after the backslash.
	OtherEscape
)

// StringError says where (Off, a byte offset in the scanned document) and
// why a string was refused.
type StringError struct {
	Off   int
	Fault Fault
	Char  byte
}

// Error is the decoder's wording; the canonical checker words the two
// escape faults in RFC 8785's terms.
func (e *StringError) Error() string {
	switch e.Fault {
	case Unterminated:
		return "unterminated string"
	case RawControl:
		return fmt.Sprintf("raw control character 0x%02x in a string", e.Char)
	case InvalidUTF8:
		return "invalid UTF-8 in a string"
	case UnterminatedEscape:
		return "unterminated escape"
	case UEscape:
		return "\\u escape is not in canonical form (write the character itself)"
	default:
		return fmt.Sprintf("escape \\%c is not in canonical form", e.Char)
	}
}

// ScanString validates the string starting at b[i] == '"' under RFC 8785's
// rules — valid UTF-8, no raw control character, only the escapes RFC 8785
// writes ('"', '\\' and control characters: \b \t \n \f \r by name, the rest
// as lower-case \u00xx) — and returns the index after its closing quote and
// whether its body holds escapes. It is the one string scanner of evidence
// documents: the strict decoder and the canonical checker accept the same
// strings, so a value has one spelling for both.
//
// It differs from pkg/report's go test -json scanner on purpose: that one
// must accept exactly what encoding/json accepts (\/, upper-case \u, invalid
// UTF-8 as U+FFFD), because test2json's output is not ours to refuse.
func ScanString(b []byte, i int) (int, bool, *StringError) {
	esc := false
	i++
	for {
		for i < len(b) && plainASCII[b[i]] {
			i++
		}
		if i >= len(b) {
			return i, esc, &StringError{Off: i, Fault: Unterminated}
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc, nil
		case c < 0x20:
			return i, esc, &StringError{Off: i, Fault: RawControl, Char: c}
		case c >= 0x80:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 {
				return i, esc, &StringError{Off: i, Fault: InvalidUTF8}
			}
			i += n
		default: // backslash
			esc = true
			if i+1 >= len(b) {
				return i, esc, &StringError{Off: i, Fault: UnterminatedEscape}
			}
			switch e := b[i+1]; e {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(b, i+2)
				if !ok || !canonicalUEscape(r, b[i+2:i+6]) {
					return i, esc, &StringError{Off: i, Fault: UEscape}
				}
				i += 6
			default:
				return i, esc, &StringError{Off: i, Fault: OtherEscape, Char: e}
			}
		}
	}
}

// Unescape decodes the body of a string ScanString accepted.
func Unescape(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			out = append(out, raw[i])
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, _ := hex4(raw, i+1)
			out = append(out, byte(r))
			i += 4
		default: // " \
			out = append(out, raw[i])
		}
	}
	return out
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

// NumberEnd returns the end of the RFC 8259 number starting at i, or -1
// when there is none or something other than a delimiter follows it.
func NumberEnd(b []byte, i int) int {
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

// Clip bounds how much of a document an error message quotes.
func Clip(b []byte) string {
	const max = 48
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "…"
	}
	return strconv.Quote(string(b))
}
