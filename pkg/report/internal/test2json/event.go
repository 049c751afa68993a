// Package test2json decodes one line of go test -json output (a
// cmd/test2json event) for pkg/report's go-json parser.
//
// Its JSON string scanner is the one runmill keeps apart from
// pkg/evidence/internal/strictjson on purpose: test2json's output is not
// ours to refuse, so this one accepts exactly what encoding/json accepts
// (\/, upper-case \u, invalid UTF-8 and lone surrogates read as U+FFFD),
// while an evidence document has one spelling and refuses every other. What
// the ids need beyond that (byte-exactness) is String.Exact, asked by the
// parser. The number scanner is the shared pkg/jsonnum.
package test2json

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/jsonnum"
	"github.com/runmill/verify/pkg/report/internal/quote"
)

// Event is one test2json event (cmd/test2json's TestEvent plus the Go 1.24
// build events), reduced to the fields the inventory reads. String fields
// hold the raw JSON string body; Esc says whether it has escapes to decode.
//
// Decode replaces encoding/json's reflection for speed (a 100 MB
// stream must parse well ahead of gotestsum) but stays exactly as strict: it
// accepts a line if and only if json.Unmarshal into eventSchema accepts it,
// and yields the same field values. FuzzGoJSONEvent holds it to that.
type Event struct {
	Action, Package, Test, Output, ImportPath, FailedBuild, Time String
}

// eventSchema is the contract Decode implements, written as the
// struct encoding/json would need. Field matching follows encoding/json:
// exact name first, then case-insensitive (bytes.EqualFold); a later key
// overwrites an earlier one; null leaves a field unchanged.
type eventSchema struct {
	Time        string
	Action      string
	Package     string
	Test        string
	Output      string
	Elapsed     float64
	ImportPath  string
	FailedBuild string
}

// String is a JSON string as it sits in the line: valid (the scanner
// checked it) but not yet decoded, so most fields cost nothing.
type String struct {
	Raw []byte // the body between the quotes, as written
	Esc bool   // Raw holds escapes
}

// Decode returns the string value, appended to dst.
func (s String) Decode(dst []byte) []byte {
	if !s.Esc && utf8.Valid(s.Raw) {
		return append(dst, s.Raw...)
	}
	return appendUnquoted(dst, s.Raw)
}

type field int

const (
	fieldOther field = iota
	fieldTime
	fieldAction
	fieldPackage
	fieldTest
	fieldOutput
	fieldElapsed
	fieldImportPath
	fieldFailedBuild
)

var fieldNames = [...]string{
	fieldTime:        "Time",
	fieldAction:      "Action",
	fieldPackage:     "Package",
	fieldTest:        "Test",
	fieldOutput:      "Output",
	fieldElapsed:     "Elapsed",
	fieldImportPath:  "ImportPath",
	fieldFailedBuild: "FailedBuild",
}

// maxDepth is encoding/json's nesting limit, kept so both accept the
// same lines.
const maxDepth = 10000

type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.off+1) }

func errAt(off int, format string, args ...any) error {
	return &syntaxError{off: off, msg: fmt.Sprintf(format, args...)}
}

// Decode parses one line holding one JSON object into ev; scratch is
// reused for keys that hold escapes.
func Decode(b []byte, ev *Event, scratch *[]byte) error {
	*ev = Event{}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errAt(i, "expected '{'")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return errAt(i, "expected a string key")
			}
			end, esc, err := scanString(b, i)
			if err != nil {
				return err
			}
			field := matchField(b[i+1:end-1], esc, scratch)
			i = skipSpace(b, end)
			if i >= len(b) || b[i] != ':' {
				return errAt(i, "expected ':' after key")
			}
			i = skipSpace(b, i+1)
			if i, err = ev.value(b, i, field); err != nil {
				return err
			}
			i = skipSpace(b, i)
			if i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return errAt(i, "expected ',' or '}' in object")
		}
	}
	if i = skipSpace(b, i); i != len(b) {
		return errAt(i, "unexpected data after the event object")
	}
	return nil
}

func (ev *Event) value(b []byte, i int, field field) (int, error) {
	if i >= len(b) {
		return i, errAt(i, "unexpected end of line")
	}
	switch field {
	case fieldOther:
		return skipValue(b, i, 1)
	case fieldElapsed:
		if b[i] == '-' || (b[i] >= '0' && b[i] <= '9') {
			end, err := scanNumber(b, i)
			if err != nil {
				return end, err
			}
			if _, err := strconv.ParseFloat(string(b[i:end]), 64); err != nil {
				return end, errAt(i, "Elapsed %s is not a float64", quote.Text(b[i:end]))
			}
			return end, nil
		}
	default:
		if b[i] == '"' {
			end, esc, err := scanString(b, i)
			if err != nil {
				return end, err
			}
			s := String{Raw: b[i+1 : end-1], Esc: esc}
			switch field {
			case fieldTime:
				ev.Time = s
			case fieldAction:
				ev.Action = s
			case fieldPackage:
				ev.Package = s
			case fieldTest:
				ev.Test = s
			case fieldOutput:
				ev.Output = s
			case fieldImportPath:
				ev.ImportPath = s
			case fieldFailedBuild:
				ev.FailedBuild = s
			}
			return end, nil
		}
	}
	if bytes.HasPrefix(b[i:], []byte("null")) {
		return i + 4, nil
	}
	// Validate what is there so a syntax error is reported as such, then
	// refuse the type, as encoding/json does.
	end, err := skipValue(b, i, 1)
	if err != nil {
		return end, err
	}
	return end, errAt(i, "%s must be a %s", fieldNames[field], map[bool]string{true: "number", false: "string"}[field == fieldElapsed])
}

// matchField finds the field a key names: exact match first, then
// encoding/json's case-insensitive match.
func matchField(key []byte, esc bool, scratch *[]byte) field {
	if !esc {
		switch string(key) {
		case "Time":
			return fieldTime
		case "Action":
			return fieldAction
		case "Package":
			return fieldPackage
		case "Test":
			return fieldTest
		case "Output":
			return fieldOutput
		case "Elapsed":
			return fieldElapsed
		case "ImportPath":
			return fieldImportPath
		case "FailedBuild":
			return fieldFailedBuild
		}
	} else {
		*scratch = appendUnquoted((*scratch)[:0], key)
		key = *scratch
		for f := fieldTime; f <= fieldFailedBuild; f++ {
			if string(key) == fieldNames[f] {
				return f
			}
		}
	}
	for f := fieldTime; f <= fieldFailedBuild; f++ {
		if bytes.EqualFold(key, []byte(fieldNames[f])) {
			return f
		}
	}
	return fieldOther
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// plain marks the bytes a JSON string may hold without attention:
// everything but the quote, the backslash and control characters.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString validates the string starting at b[i] == '"' and returns
// the index after its closing quote and whether it holds escapes.
func scanString(b []byte, i int) (int, bool, error) {
	esc := false
	i++
	for {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			return i, esc, errAt(i, "unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return i, esc, errAt(i, "unterminated escape")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					return i, esc, errAt(i, "invalid \\u escape")
				}
				i += 6
			default:
				return i, esc, errAt(i, "invalid escape \\%c", b[i+1])
			}
		default:
			return i, esc, errAt(i, "control character 0x%02x in string", c)
		}
	}
}

// Exact reports whether decoding s loses nothing: its raw bytes are valid
// UTF-8 and every \u escape of a surrogate is half of a valid pair. Where it
// is false, encoding/json (and decode) would write U+FFFD, and two
// different strings could decode to one.
func (s String) Exact() bool {
	if !utf8.Valid(s.Raw) {
		return false
	}
	if !s.Esc {
		return true
	}
	b := s.Raw
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] != 'u' {
			i++
			continue
		}
		r := hex4(b[i+2 : i+6])
		i += 5
		if !utf16.IsSurrogate(r) {
			continue
		}
		if i+7 > len(b) || b[i+1] != '\\' || b[i+2] != 'u' || utf16.DecodeRune(r, hex4(b[i+3:i+7])) == utf8.RuneError {
			return false
		}
		i += 6
	}
	return true
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// scanNumber validates the number starting at b[i].
func scanNumber(b []byte, i int) (int, error) {
	end := jsonnum.End(b, i)
	if end < 0 {
		return i, errAt(i, "invalid number")
	}
	return end, nil
}

// skipValue validates any JSON value starting at b[i]; depth counts the
// containers around it, the event object being 1.
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, errAt(i, "unexpected end of line")
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := scanString(b, i)
		return end, err
	case c == '-' || c >= '0' && c <= '9':
		return scanNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '{' || c == '[':
		if depth+1 > maxDepth {
			return i, errAt(i, "exceeded max depth")
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closing {
			return i + 1, nil
		}
		for {
			var err error
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return i, errAt(i, "expected a string key")
				}
				if i, _, err = scanString(b, i); err != nil {
					return i, err
				}
				i = skipSpace(b, i)
				if i >= len(b) || b[i] != ':' {
					return i, errAt(i, "expected ':' after key")
				}
				i = skipSpace(b, i+1)
			}
			if i, err = skipValue(b, i, depth+1); err != nil {
				return i, err
			}
			i = skipSpace(b, i)
			if i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == closing {
				return i + 1, nil
			}
			return i, errAt(i, "expected ',' or '%c'", closing)
		}
	}
	return i, errAt(i, "invalid character %q looking for a value", b[i])
}

func literal(b []byte, i int, lit string) (int, error) {
	if !bytes.HasPrefix(b[i:], []byte(lit)) {
		return i, errAt(i, "invalid literal")
	}
	return i + len(lit), nil
}

// appendUnquoted decodes the body of a valid JSON string (as scanString
// accepted it) the way encoding/json does: a lone or broken surrogate and
// each byte of invalid UTF-8 become U+FFFD.
func appendUnquoted(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			switch s[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(s[i+2 : i+6])
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, hex4(s[i+2:i+6])); dec != utf8.RuneError {
							dst = utf8.AppendRune(dst, dec)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // " \ /
				dst = append(dst, s[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			dst = utf8.AppendRune(dst, r)
			i += size
		}
	}
	return dst
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
