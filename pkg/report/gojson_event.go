package report

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/jsonnum"
)

// goEvent is one test2json event (cmd/test2json's TestEvent plus the Go 1.24
// build events), reduced to the fields the inventory reads. String fields
// hold the raw JSON string body; esc says whether it has escapes to decode.
//
// decodeGoEvent replaces encoding/json's reflection for speed (a 100 MB
// stream must parse well ahead of gotestsum) but stays exactly as strict: it
// accepts a line if and only if json.Unmarshal into goEventSchema accepts it,
// and yields the same field values. FuzzGoJSONEvent holds it to that.
type goEvent struct {
	Action, Package, Test, Output, ImportPath, FailedBuild, Time jsonString
}

// goEventSchema is the contract decodeGoEvent implements, written as the
// struct encoding/json would need. Field matching follows encoding/json:
// exact name first, then case-insensitive (bytes.EqualFold); a later key
// overwrites an earlier one; null leaves a field unchanged.
type goEventSchema struct {
	Time        string
	Action      string
	Package     string
	Test        string
	Output      string
	Elapsed     float64
	ImportPath  string
	FailedBuild string
}

type jsonString struct {
	raw []byte
	esc bool
}

// decode returns the string value, appended to dst.
func (s jsonString) decode(dst []byte) []byte {
	if !s.esc && utf8.Valid(s.raw) {
		return append(dst, s.raw...)
	}
	return appendUnquoted(dst, s.raw)
}

type goField int

const (
	goFieldOther goField = iota
	goFieldTime
	goFieldAction
	goFieldPackage
	goFieldTest
	goFieldOutput
	goFieldElapsed
	goFieldImportPath
	goFieldFailedBuild
)

var goFieldNames = [...]string{
	goFieldTime:        "Time",
	goFieldAction:      "Action",
	goFieldPackage:     "Package",
	goFieldTest:        "Test",
	goFieldOutput:      "Output",
	goFieldElapsed:     "Elapsed",
	goFieldImportPath:  "ImportPath",
	goFieldFailedBuild: "FailedBuild",
}

// maxJSONDepth is encoding/json's nesting limit, kept so both accept the
// same lines.
const maxJSONDepth = 10000

type jsonError struct {
	off int
	msg string
}

func (e *jsonError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.off+1) }

func jsonErr(off int, format string, args ...any) error {
	return &jsonError{off: off, msg: fmt.Sprintf(format, args...)}
}

// decodeGoEvent parses one line holding one JSON object into ev.
func decodeGoEvent(b []byte, ev *goEvent, scratch *[]byte) error {
	*ev = goEvent{}
	i := skipJSONSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return jsonErr(i, "expected '{'")
	}
	i = skipJSONSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return jsonErr(i, "expected a string key")
			}
			end, esc, err := scanJSONString(b, i)
			if err != nil {
				return err
			}
			field := matchGoField(b[i+1:end-1], esc, scratch)
			i = skipJSONSpace(b, end)
			if i >= len(b) || b[i] != ':' {
				return jsonErr(i, "expected ':' after key")
			}
			i = skipJSONSpace(b, i+1)
			if i, err = ev.value(b, i, field); err != nil {
				return err
			}
			i = skipJSONSpace(b, i)
			if i < len(b) && b[i] == ',' {
				i = skipJSONSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return jsonErr(i, "expected ',' or '}' in object")
		}
	}
	if i = skipJSONSpace(b, i); i != len(b) {
		return jsonErr(i, "unexpected data after the event object")
	}
	return nil
}

func (ev *goEvent) value(b []byte, i int, field goField) (int, error) {
	if i >= len(b) {
		return i, jsonErr(i, "unexpected end of line")
	}
	switch field {
	case goFieldOther:
		return skipJSONValue(b, i, 1)
	case goFieldElapsed:
		if b[i] == '-' || (b[i] >= '0' && b[i] <= '9') {
			end, err := scanJSONNumber(b, i)
			if err != nil {
				return end, err
			}
			if _, err := strconv.ParseFloat(string(b[i:end]), 64); err != nil {
				return end, jsonErr(i, "Elapsed %s is not a float64", quoteText(b[i:end]))
			}
			return end, nil
		}
	default:
		if b[i] == '"' {
			end, esc, err := scanJSONString(b, i)
			if err != nil {
				return end, err
			}
			s := jsonString{raw: b[i+1 : end-1], esc: esc}
			switch field {
			case goFieldTime:
				ev.Time = s
			case goFieldAction:
				ev.Action = s
			case goFieldPackage:
				ev.Package = s
			case goFieldTest:
				ev.Test = s
			case goFieldOutput:
				ev.Output = s
			case goFieldImportPath:
				ev.ImportPath = s
			case goFieldFailedBuild:
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
	end, err := skipJSONValue(b, i, 1)
	if err != nil {
		return end, err
	}
	return end, jsonErr(i, "%s must be a %s", goFieldNames[field], map[bool]string{true: "number", false: "string"}[field == goFieldElapsed])
}

// matchGoField finds the field a key names: exact match first, then
// encoding/json's case-insensitive match.
func matchGoField(key []byte, esc bool, scratch *[]byte) goField {
	if !esc {
		switch string(key) {
		case "Time":
			return goFieldTime
		case "Action":
			return goFieldAction
		case "Package":
			return goFieldPackage
		case "Test":
			return goFieldTest
		case "Output":
			return goFieldOutput
		case "Elapsed":
			return goFieldElapsed
		case "ImportPath":
			return goFieldImportPath
		case "FailedBuild":
			return goFieldFailedBuild
		}
	} else {
		*scratch = appendUnquoted((*scratch)[:0], key)
		key = *scratch
		for f := goFieldTime; f <= goFieldFailedBuild; f++ {
			if string(key) == goFieldNames[f] {
				return f
			}
		}
	}
	for f := goFieldTime; f <= goFieldFailedBuild; f++ {
		if bytes.EqualFold(key, []byte(goFieldNames[f])) {
			return f
		}
	}
	return goFieldOther
}

func skipJSONSpace(b []byte, i int) int {
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

// jsonPlain marks the bytes a JSON string may hold without attention:
// everything but the quote, the backslash and control characters.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanJSONString validates the string starting at b[i] == '"' and returns
// the index after its closing quote and whether it holds escapes.
func scanJSONString(b []byte, i int) (int, bool, error) {
	esc := false
	i++
	for {
		for i < len(b) && jsonPlain[b[i]] {
			i++
		}
		if i >= len(b) {
			return i, esc, jsonErr(i, "unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return i, esc, jsonErr(i, "unterminated escape")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isJSONHex4(b[i+2:i+6]) {
					return i, esc, jsonErr(i, "invalid \\u escape")
				}
				i += 6
			default:
				return i, esc, jsonErr(i, "invalid escape \\%c", b[i+1])
			}
		default:
			return i, esc, jsonErr(i, "control character 0x%02x in string", c)
		}
	}
}

// exact reports whether decoding s loses nothing: its raw bytes are valid
// UTF-8 and every \u escape of a surrogate is half of a valid pair. Where it
// is false, encoding/json (and decode) would write U+FFFD, and two
// different strings could decode to one.
func (s jsonString) exact() bool {
	if !utf8.Valid(s.raw) {
		return false
	}
	if !s.esc {
		return true
	}
	b := s.raw
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] != 'u' {
			i++
			continue
		}
		r := jsonHex4(b[i+2 : i+6])
		i += 5
		if !utf16.IsSurrogate(r) {
			continue
		}
		if i+7 > len(b) || b[i+1] != '\\' || b[i+2] != 'u' || utf16.DecodeRune(r, jsonHex4(b[i+3:i+7])) == utf8.RuneError {
			return false
		}
		i += 6
	}
	return true
}

func isJSONHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// scanJSONNumber validates the number starting at b[i].
func scanJSONNumber(b []byte, i int) (int, error) {
	end := jsonnum.End(b, i)
	if end < 0 {
		return i, jsonErr(i, "invalid number")
	}
	return end, nil
}

// skipJSONValue validates any JSON value starting at b[i]; depth counts the
// containers around it, the event object being 1.
func skipJSONValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, jsonErr(i, "unexpected end of line")
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := scanJSONString(b, i)
		return end, err
	case c == '-' || c >= '0' && c <= '9':
		return scanJSONNumber(b, i)
	case c == 't':
		return jsonLiteral(b, i, "true")
	case c == 'f':
		return jsonLiteral(b, i, "false")
	case c == 'n':
		return jsonLiteral(b, i, "null")
	case c == '{' || c == '[':
		if depth+1 > maxJSONDepth {
			return i, jsonErr(i, "exceeded max depth")
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		i = skipJSONSpace(b, i+1)
		if i < len(b) && b[i] == closing {
			return i + 1, nil
		}
		for {
			var err error
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return i, jsonErr(i, "expected a string key")
				}
				if i, _, err = scanJSONString(b, i); err != nil {
					return i, err
				}
				i = skipJSONSpace(b, i)
				if i >= len(b) || b[i] != ':' {
					return i, jsonErr(i, "expected ':' after key")
				}
				i = skipJSONSpace(b, i+1)
			}
			if i, err = skipJSONValue(b, i, depth+1); err != nil {
				return i, err
			}
			i = skipJSONSpace(b, i)
			if i < len(b) && b[i] == ',' {
				i = skipJSONSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == closing {
				return i + 1, nil
			}
			return i, jsonErr(i, "expected ',' or '%c'", closing)
		}
	}
	return i, jsonErr(i, "invalid character %q looking for a value", b[i])
}

func jsonLiteral(b []byte, i int, lit string) (int, error) {
	if !bytes.HasPrefix(b[i:], []byte(lit)) {
		return i, jsonErr(i, "invalid literal")
	}
	return i + len(lit), nil
}

// appendUnquoted decodes the body of a valid JSON string (as scanJSONString
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
				r := jsonHex4(s[i+2 : i+6])
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, jsonHex4(s[i+2:i+6])); dec != utf8.RuneError {
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

func jsonHex4(b []byte) rune {
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
