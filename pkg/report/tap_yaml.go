package report

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/runmill/verify/pkg/report/internal/quote"
	"github.com/runmill/verify/pkg/report/internal/textcap"
)

// tapYAML reads the few keys of a TAP YAML diagnostic block that the
// inventory uses. It is not a YAML parser: it looks at top-level keys only
// (message, error, file, line, at, location), follows one level under at:,
// and takes block scalars (|, >) as their lines joined by newlines. Anything
// else in the block is skipped. Text is bounded by Limits.MaxField.
//
// It stays hand-written rather than gopkg.in/yaml.v3 (issue #18): on the
// corpus's TAP reports the library is an order of magnitude slower, holds
// the whole block in memory, and refuses the YAMLish many producers write
// (BenchmarkTAPYAML measures both and counts the refusals).
type tapYAML struct {
	base      int // indentation of "---" and "..."
	openLine  int
	line      int // line number of the block's current line
	suspect   int // first line inside that reads as a test point, plan or bail-out
	keyIndent int // indentation of top-level keys: tape indents them past "---"
	done      bool

	key         string // current top-level key
	blockKey    bool   // its value is a block scalar being collected
	blockIndent int    // indentation of the block scalar's text, 0 until its first line
	inAt        bool   // inside an "at:" mapping

	message, errText textcap.Field
	hasMessage       bool
	hasError         bool
	file             string
	fileLine         int
}

func newTAPYAML(base, maxField, line int) *tapYAML {
	return &tapYAML{base: base, openLine: line, line: line, message: textcap.Field{Max: maxField}, errText: textcap.Field{Max: maxField}}
}

// feed consumes one line of the block. It returns false for a line that
// belongs to no YAML block (less indented than the block before "..."):
// the block was never terminated and the caller handles the line as TAP.
func (y *tapYAML) feed(raw []byte) bool {
	y.line++
	indent, _ := tapIndent(raw)
	content := bytes.TrimRight(raw[indent:], " \t")
	if len(content) == 0 {
		if y.blockKey && y.blockIndent > 0 {
			y.appendBlock(nil)
		}
		return true
	}
	if indent < y.base {
		return false
	}
	if y.suspect == 0 {
		if k := classifyTAP(content); k == tapLinePoint || k == tapLinePlan || k == tapLineBail {
			y.suspect = y.line
		}
	}
	if indent == y.base && string(content) == "..." {
		y.done = true
		return true
	}
	if y.keyIndent == 0 {
		y.keyIndent = indent
	}
	if indent > y.keyIndent {
		switch {
		case y.blockKey:
			if y.blockIndent == 0 {
				y.blockIndent = indent
			}
			cut := min(indent, y.blockIndent)
			y.appendBlock(bytes.TrimRight(raw[cut:], " \t"))
		case y.inAt:
			k, v, ok := yamlKeyValue(content)
			if ok {
				y.setLocationKey(k, v)
			}
		}
		return true
	}
	// A top-level key.
	y.blockKey, y.blockIndent, y.inAt = false, 0, false
	k, v, ok := yamlKeyValue(content)
	if !ok {
		y.key = ""
		return true
	}
	y.key = k
	switch k {
	case "message", "error":
		if isBlockIndicator(v) {
			y.blockKey = true
			y.target().Reset()
			y.setHas()
			return true
		}
		if len(v) > 0 {
			t := y.target()
			t.Reset()
			t.Write([]byte(yamlScalar(v)))
			y.setHas()
		}
	case "file", "line":
		y.setLocationKey(k, v)
	case "at", "location":
		if len(v) == 0 {
			y.inAt = k == "at"
			return true
		}
		y.setLocation(yamlScalar(v))
	}
	return true
}

func (y *tapYAML) target() *textcap.Field {
	if y.key == "error" {
		return &y.errText
	}
	return &y.message
}

func (y *tapYAML) setHas() {
	if y.key == "error" {
		y.hasError = true
	} else {
		y.hasMessage = true
	}
}

func (y *tapYAML) appendBlock(line []byte) {
	t := y.target()
	if t.N > 0 {
		t.Write([]byte{'\n'})
	}
	t.Write(line)
}

func (y *tapYAML) setLocationKey(k string, v []byte) {
	switch k {
	case "file":
		if f := yamlScalar(v); f != "" && len(f) <= 4096 {
			y.file = f
		}
	case "line":
		if n, err := strconv.Atoi(yamlScalar(v)); err == nil && n > 0 {
			y.fileLine = n
		}
	}
}

// setLocation reads "path:line[:col]", possibly inside the last
// parentheses ("Test.<anonymous> (/src/test.js:5:5)", tape and node:test).
func (y *tapYAML) setLocation(s string) {
	if i := strings.LastIndexByte(s, '('); i >= 0 && strings.HasSuffix(s, ")") {
		s = s[i+1 : len(s)-1]
	}
	parts := strings.Split(s, ":")
	for len(parts) > 1 {
		last := parts[len(parts)-1]
		if _, err := strconv.Atoi(last); err == nil || last == "(LINE)" {
			parts = parts[:len(parts)-1]
			continue
		}
		break
	}
	if len(parts) == 0 || parts[0] == "" || len(s) > 4096 {
		return
	}
	file := strings.Join(parts, ":")
	rest := strings.TrimPrefix(s, file)
	y.file = file
	if fields := strings.Split(strings.TrimPrefix(rest, ":"), ":"); len(fields) > 0 {
		if n, err := strconv.Atoi(fields[0]); err == nil && n > 0 {
			y.fileLine = n
		}
	}
}

func yamlKeyValue(b []byte) (string, []byte, bool) {
	k, v, ok := bytes.Cut(b, []byte(":"))
	if !ok || len(k) == 0 || bytes.ContainsAny(k, " \t\"'") {
		return "", nil, false
	}
	if len(v) > 0 && v[0] != ' ' && v[0] != '\t' {
		return "", nil, false
	}
	return string(k), bytes.TrimSpace(v), true
}

func isBlockIndicator(v []byte) bool {
	return len(v) > 0 && (v[0] == '|' || v[0] == '>') && len(bytes.TrimLeft(v[1:], "+-0123456789")) == 0
}

// yamlScalar unquotes a flow scalar: 'single' (a doubled quote is one) or "double"
// (backslash escapes); plain scalars are returned as they are.
func yamlScalar(v []byte) string {
	s := string(v)
	switch {
	case len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'':
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	case len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"':
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
		return s[1 : len(s)-1]
	}
	return s
}

// applyYAML gives the last test point what its diagnostics say: a message
// for a failed test, a file and line for any test. A skipped test keeps its
// directive reason.
func (p *tapParser) applyYAML() error {
	y := p.yaml
	t := &p.last.block.tests[p.last.idx]
	if y.file != "" {
		t.File = validUTF8([]byte(y.file), &p.keep.invalid)
		t.Line = y.fileLine
	}
	if t.Status != Failed {
		return nil
	}
	src := &y.message
	if !y.hasMessage {
		if !y.hasError {
			return nil
		}
		src = &y.errText
	}
	id := t.ID
	msg, err := p.keep.fromCap(src, true, func() string { return fmt.Sprintf("message of %s", quote.String(string(id))) })
	t.Message = msg
	return err
}
