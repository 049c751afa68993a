package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"

	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/evidence/internal/strictjson"
)

// Canonical JSON (DESIGN.md § Evidence wire format): the statement is
// serialised as RFC 8785 (JCS) canonical JSON, and its canonical digest is the
// SHA-256 of exactly those bytes. Signing produces the bytes with
// github.com/gowebpki/jcs; verification proves that the payload equals its own
// JCS transform with checkCanonical, a single allocation-free pass that
// accepts exactly the fixed points of the transform (a differential fuzz test
// holds the two together). Re-serialising a 60 MB payload to compare it would
// cost more than the whole rest of verification.

// Marshal returns the canonical (RFC 8785) JSON encoding of v.
func Marshal(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding JSON: %w", err)
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("canonicalising JSON: %w", err)
	}
	return out, nil
}

// Digest returns the canonical digest of payload bytes: "sha256:<hex>".
func Digest(payload []byte) string { return digest.Of(payload) }

// canonicalError says where and why bytes are not RFC 8785 canonical JSON.
type canonicalError struct {
	Offset int
	Msg    string
}

func (e *canonicalError) Error() string {
	return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg)
}

// checkCanonical reports whether b is exactly its own RFC 8785 transform: no
// insignificant whitespace, object members sorted by their UTF-16 code units
// with no duplicates, strings escaped the ECMAScript way (only '"', '\\' and
// control characters; \b \t \n \f \r by name, the rest as lower-case \u00xx),
// numbers in their ECMAScript shortest form, valid UTF-8 throughout.
func checkCanonical(b []byte) error {
	c := canonChecker{b: b}
	if err := c.value(); err != nil {
		return err
	}
	if c.pos != len(b) {
		return c.errf("trailing bytes after the document")
	}
	return nil
}

type canonChecker struct {
	b     []byte
	pos   int
	depth int
}

func (c *canonChecker) errf(format string, args ...any) error {
	return &canonicalError{Offset: c.pos, Msg: fmt.Sprintf(format, args...)}
}

func (c *canonChecker) value() error {
	if c.pos >= len(c.b) {
		return c.errf("unexpected end of document")
	}
	switch ch := c.b[c.pos]; {
	case ch == '{':
		return c.object()
	case ch == '[':
		return c.array()
	case ch == '"':
		_, _, err := c.str()
		return err
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	case ch == '-' || ch >= '0' && ch <= '9':
		return c.number()
	default:
		return c.errf("unexpected %q (insignificant whitespace is not canonical)", ch)
	}
}

func (c *canonChecker) literal(lit string) error {
	if !bytes.HasPrefix(c.b[c.pos:], []byte(lit)) {
		return c.errf("malformed literal")
	}
	c.pos += len(lit)
	return nil
}

func (c *canonChecker) enter() error {
	c.depth++
	if c.depth > maxDepth {
		return c.errf("nested deeper than %d levels", maxDepth)
	}
	return nil
}

func (c *canonChecker) object() error {
	c.pos++ // '{'
	if err := c.enter(); err != nil {
		return err
	}
	var prev []byte
	var prevEsc bool
	for i := 0; ; i++ {
		if c.pos >= len(c.b) {
			return c.errf("unterminated object")
		}
		if c.b[c.pos] == '}' {
			c.pos++
			break
		}
		if i > 0 {
			if c.b[c.pos] != ',' {
				return c.errf("want ',' or '}'")
			}
			c.pos++
		}
		if c.pos >= len(c.b) || c.b[c.pos] != '"' {
			return c.errf("want an object key")
		}
		keyPos := c.pos
		key, esc, err := c.str()
		if err != nil {
			return err
		}
		if i > 0 && compareKeys(prev, prevEsc, key, esc) >= 0 {
			c.pos = keyPos
			return c.errf("object keys are not in RFC 8785 order or repeat (%s after %s)", strictjson.Clip(key), strictjson.Clip(prev))
		}
		prev, prevEsc = key, esc
		if c.pos >= len(c.b) || c.b[c.pos] != ':' {
			return c.errf("want ':'")
		}
		c.pos++
		if err := c.value(); err != nil {
			return err
		}
	}
	c.depth--
	return nil
}

func (c *canonChecker) array() error {
	c.pos++ // '['
	if err := c.enter(); err != nil {
		return err
	}
	for i := 0; ; i++ {
		if c.pos >= len(c.b) {
			return c.errf("unterminated array")
		}
		if c.b[c.pos] == ']' {
			c.pos++
			break
		}
		if i > 0 {
			if c.b[c.pos] != ',' {
				return c.errf("want ',' or ']'")
			}
			c.pos++
		}
		if err := c.value(); err != nil {
			return err
		}
	}
	c.depth--
	return nil
}

// str checks one canonical string and returns its raw (still escaped) bytes
// and whether it contains escapes. strictjson.ScanString is the decoder's
// scanner too, so both accept the same strings; only the wording of the two
// escape faults is RFC 8785's here.
func (c *canonChecker) str() ([]byte, bool, error) {
	start := c.pos + 1
	end, esc, serr := strictjson.ScanString(c.b, c.pos)
	if serr != nil {
		c.pos = serr.Off
		switch serr.Fault {
		case strictjson.UEscape:
			// RFC 8785 § 3.2.2.2: only control characters without a
			// short form are written as \u00xx, in lower case.
			return nil, false, c.errf("\\u escape is not canonical (RFC 8785 writes it literally or by a short escape)")
		case strictjson.OtherEscape:
			return nil, false, c.errf("escape \\%c is not canonical", serr.Char)
		}
		return nil, false, c.errf("%s", serr)
	}
	c.pos = end
	return c.b[start : end-1], esc, nil
}

// compareKeys orders two raw (canonical) keys by their UTF-16 code units, as
// RFC 8785 § 3.2.3 sorts object members.
func compareKeys(a []byte, aEsc bool, b []byte, bEsc bool) int {
	if aEsc {
		a = strictjson.Unescape(a)
	}
	if bEsc {
		b = strictjson.Unescape(b)
	}
	// Byte order of UTF-8 equals code point order; it differs from UTF-16
	// order only where a supplementary character (4-byte UTF-8, a surrogate
	// pair in UTF-16) meets one in U+E000..U+FFFF. Find the first differing
	// rune and compare its code units.
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) || i == len(b) {
		return len(a) - len(b)
	}
	if a[i] < 0x80 && b[i] < 0x80 {
		return int(a[i]) - int(b[i])
	}
	// Back up to the start of the rune containing the difference.
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRune(a[i:])
	rb, _ := utf8.DecodeRune(b[i:])
	ua := utf16.Encode([]rune{ra})
	ub := utf16.Encode([]rune{rb})
	for k := 0; k < len(ua) && k < len(ub); k++ {
		if ua[k] != ub[k] {
			return int(ua[k]) - int(ub[k])
		}
	}
	return len(ua) - len(ub)
}

// number checks that the number at c.pos is written the way ECMAScript's
// Number.prototype.toString writes its IEEE 754 double value.
func (c *canonChecker) number() error {
	end := strictjson.NumberEnd(c.b, c.pos)
	if end < 0 {
		return c.errf("malformed number")
	}
	tok := c.b[c.pos:end]
	// Fast path: integers of up to 15 digits are exact doubles and are
	// written as plain decimals without leading zeros; "-0" becomes "0".
	if len(tok) <= 16 && !bytes.ContainsAny(tok, ".eE") {
		digits := tok
		if digits[0] == '-' {
			digits = digits[1:]
		}
		if len(digits) <= 15 {
			if string(tok) == "-0" {
				return c.errf("-0 is written 0 in canonical JSON")
			}
			c.pos = end
			return nil
		}
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return c.errf("number %s is not a finite double", strictjson.Clip(tok))
	}
	want, err := jcs.NumberToJSON(f)
	if err != nil || want != string(tok) {
		return c.errf("number %s is not canonical (RFC 8785 writes %s)", strictjson.Clip(tok), want)
	}
	c.pos = end
	return nil
}
