package report

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// How one TAP line reads: its kind, its indentation, and a test point's
// parts (number, description, directive).

func tapDescribeIndent(ws []byte) string {
	if bytes.IndexByte(ws, '\t') >= 0 {
		return fmt.Sprintf("%d whitespace characters including a tab", len(ws))
	}
	return fmt.Sprintf("%d spaces", len(ws))
}

// leadingSpaces returns how many leading blanks the line has and whether
// they are all spaces.
func tapIndent(b []byte) (int, bool) {
	clean := true
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		if b[i] == '\t' {
			clean = false
		}
		i++
	}
	return i, clean
}

type tapKind int

const (
	tapLineOther tapKind = iota
	tapLineComment
	tapLinePragma
	tapLineVersion
	tapLinePlan
	tapLinePoint
	tapLineBail
)

// classifyTAP recognises a line (indentation removed). A line that starts
// like a test point ("ok"/"not ok" followed by a non-word byte, TAP14's
// /^(not )?ok\b/) or a plan is always one; parsing decides if it is valid.
func classifyTAP(s []byte) tapKind {
	switch {
	case s[0] == '#':
		return tapLineComment
	case isPointStart(s):
		return tapLinePoint
	case s[0] >= '0' && s[0] <= '9' && bytes.Contains(s, []byte("..")) && looksLikePlan(s):
		return tapLinePlan
	case hasPrefixFold(s, "bail out!"):
		return tapLineBail
	case hasPrefixFold(s, "tap version "):
		return tapLineVersion
	case bytes.HasPrefix(s, []byte("pragma ")):
		return tapLinePragma
	}
	return tapLineOther
}

func isPointStart(s []byte) bool {
	rest, ok := bytes.CutPrefix(s, []byte("not ok"))
	if !ok {
		rest, ok = bytes.CutPrefix(s, []byte("ok"))
	}
	return ok && (len(rest) == 0 || !isWordByte(rest[0]))
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// looksLikePlan: digits, "..", digits.
func looksLikePlan(s []byte) bool {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return bytes.HasPrefix(s[i:], []byte("..")) && i+2 < len(s) && s[i+2] >= '0' && s[i+2] <= '9'
}

func hasPrefixFold(s []byte, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(string(s[:len(prefix)]), prefix)
}

// tapDiagComment returns the text of a "# …" comment that can be a failed
// test's diagnostic: not a node:test "# Subtest:" header, a node-tap
// "# time=" comment, nor a run summary ("# tests 3", "# fail 1").
func tapDiagComment(line []byte) ([]byte, bool) {
	text := bytes.TrimSpace(line[1:])
	if len(text) == 0 {
		return nil, true
	}
	if bytes.HasPrefix(text, []byte("Subtest:")) || bytes.HasPrefix(text, []byte("time=")) {
		return nil, false
	}
	if f := bytes.Fields(text); len(f) == 2 && tapDigits(f[1]) > 0 {
		switch string(f[0]) {
		case "tests", "pass", "fail", "skip", "todo", "suites", "cancelled", "ok", "duration_ms":
			return nil, false
		}
	}
	return text, true
}

// tapPoint is one parsed test line.
type tapPoint struct {
	ok        bool
	hasNum    bool
	num       int64
	desc      []byte
	directive string // "SKIP" or "TODO"
	reason    []byte
	brace     bool // ends with "{": a buffered subtest follows
}

// parseTAPPoint parses a line classifyTAP called a test point. It returns a
// reason when the line cannot be one.
func parseTAPPoint(s []byte) (tapPoint, string) {
	var pt tapPoint
	rest, notOK := bytes.CutPrefix(s, []byte("not ok"))
	if !notOK {
		rest = s[len("ok"):]
	}
	pt.ok = !notOK
	rest = bytes.TrimLeft(rest, " \t")
	if i := tapDigits(rest); i > 0 && (i == len(rest) || rest[i] == ' ' || rest[i] == '\t' || rest[i] == '-' || rest[i] == '#') {
		if i > 18 {
			return pt, "test number too large"
		}
		pt.num, _ = strconv.ParseInt(string(rest[:i]), 10, 64)
		pt.hasNum = true
		rest = bytes.TrimLeft(rest[i:], " \t")
	}
	if len(rest) > 0 && rest[0] == '-' && (len(rest) == 1 || rest[1] == ' ' || rest[1] == '\t' || rest[1] == '#') {
		rest = rest[1:]
	}
	rest = bytes.TrimRight(rest, " \t")
	if n := len(rest); n > 0 && rest[n-1] == '{' && (n == 1 || rest[n-2] == ' ' || rest[n-2] == '\t') {
		pt.brace = true
		rest = bytes.TrimRight(rest[:n-1], " \t")
	}
	desc := rest
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '\\':
			i++ // an escaped character is never a directive
		case '#':
			if i > 0 && rest[i-1] != ' ' && rest[i-1] != '\t' {
				continue
			}
			if dir, reason, ok := tapDirective(rest[i+1:]); ok {
				desc = rest[:i]
				pt.directive, pt.reason = dir, reason
				i = len(rest)
			}
		}
	}
	pt.desc = unescapeTAP(bytes.TrimSpace(desc))
	return pt, ""
}

func tapDigits(b []byte) int {
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// tapDirective reads the text after a "#". TAP14: "# SKIP\S*" (SKIPPED,
// skip:) is a skip; TODO must stand alone ("# TODO reason"), so TODOORNOT is
// not one and its "not ok" stays a failure. "# time=…" (node-tap) is a
// comment that ends the description but is no directive.
func tapDirective(s []byte) (string, []byte, bool) {
	s = bytes.TrimLeft(s, " \t")
	switch {
	case hasPrefixFold(s, "skip"):
		i := 4
		for i < len(s) && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		return "SKIP", bytes.TrimSpace(s[i:]), true
	case hasPrefixFold(s, "todo") && (len(s) == 4 || s[4] == ' ' || s[4] == '\t'):
		return "TODO", bytes.TrimSpace(s[4:]), true
	case bytes.HasPrefix(s, []byte("time=")):
		return "", nil, true
	}
	return "", nil, false
}

// unescapeTAP turns \\ into \ and \# into #.
func unescapeTAP(b []byte) []byte {
	if bytes.IndexByte(b, '\\') < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' && i+1 < len(b) && (b[i+1] == '\\' || b[i+1] == '#') {
			i++
		}
		out = append(out, b[i])
	}
	return out
}
