package outcome

import (
	"bufio"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
)

// lexer is just enough of a JavaScript/TypeScript lexer to tell code from
// comments, strings, templates and regular-expression literals, and to see
// focus markers as token sequences (so "describe\n  .only(" and
// "it /* x */ .only(" are found, and "benefit(" is one identifier). It
// streams byte by byte with constant memory apart from the bounded lists of
// occurrences.
type lexer struct {
	r         *bufio.Reader
	file      string
	max       int64
	off       int64 // bytes consumed
	line, col int   // position of the next byte
	truncated bool

	hist  [6]token // last significant tokens, hist[5] newest
	tmpls []*template

	// Brackets open in code, innermost last; deep counts those beyond
	// maxDepth, which are not tracked (their closers pop nothing).
	stack []frame
	deep  int

	fit   *Focus    // a fit( whose first argument decides strong or weak
	value *valueCap // the value of an only: key being read

	// What the file shows about itself (see the package comment on focus).
	testContext bool // it calls a test function or imports a test framework
	definesOnly bool // it defines focus (X.only = …, only: function, fdescribe: …)

	// strong: focus whatever the file; weak: focus in a test file or a file
	// with test context; benign: listed, never focus.
	strong, weak, benign []Focus
	ignored              []Focus // inside comments, strings, templates, regexps
	dropped              int
}

type tokKind uint8

const (
	tNone tokKind = iota
	tIdent
	tNumber
	tPunct
	tString
	tTemplate
	tRegexp
)

type token struct {
	kind tokKind
	// text: the identifier, punctuator or number, or a string's or
	// template's content when exact.
	text string
	// exact: for strings and templates, text is the whole content (no
	// escape, no substitution, at most maxText bytes).
	exact     bool
	line, col int
}

// frame is one bracket open in code.
type frame struct {
	open byte // '(', '[' or '{'
	// callee: for '(', the identifier called (it in it(…), test in
	// t.test(…)); empty when the parenthesis is not a call of a name.
	callee string
	// arg: for '{', the object is directly an argument of the enclosing
	// call, whose callee is argOf.
	arg   bool
	argOf string
}

// valueCap collects the first tokens of the value of an only: key, at the
// object's own bracket depth.
type valueCap struct {
	key   Focus
	depth int // len(stack) inside the object
	arg   bool
	argOf string
	toks  []token
	over  bool // more tokens than kept
}

// template is one open `…` literal. Occurrences in its text are held until
// it closes: an unclosed template means the lexer misread a backtick.
type template struct {
	depth     int // brace depth inside the current ${ … }
	hits      []Focus
	line, col int
	text      []byte
	inexact   bool // an escape, a substitution or more than maxText bytes
}

const (
	maxIdent = 32
	maxText  = 64 // string and template content kept for exact comparison
	maxDepth = 1024
)

var errStop = errors.New("stop")

func (l *lexer) next() (byte, bool, error) {
	c, err := l.r.ReadByte()
	if err != nil {
		if err == io.EOF {
			return 0, false, nil
		}
		return 0, false, err
	}
	if l.off == l.max {
		l.truncated = true
		return 0, false, nil
	}
	l.off++
	if c == '\n' {
		l.line, l.col = l.line+1, 1
	} else if !isContinuation(c) {
		l.col++
	}
	return c, true, nil
}

func (l *lexer) peek(n int) []byte {
	b, _ := l.r.Peek(n)
	return b
}

func (l *lexer) run() error {
	err := l.code()
	if err == errStop {
		err = nil
	}
	// Templates still open at the end of the file: the backtick was misread,
	// so what followed it was code.
	for _, t := range l.tmpls {
		l.promote(t.hits, "inside a template literal that never closes; treated as code")
	}
	// The end of the input ends whatever rule is waiting for a next token
	// (export default it.only, a trailing only: value).
	l.emit(token{kind: tNone, line: l.line, col: l.col})
	if v := l.value; v != nil {
		// An object still open at the end: its only: value was all there is.
		l.value = nil
		l.settleValue(v)
	}
	return err
}

// code lexes code until the end of the input.
func (l *lexer) code() error {
	for {
		line, col := l.line, l.col
		c, more, err := l.next()
		if err != nil || !more {
			return err
		}
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == 0:
			// A NUL is no token: it makes a file neither binary nor
			// unscanned (a NUL in a comment once hid a whole test file).
		case c == '/' && l.peekIs("/"):
			if err := l.lineComment(); err != nil {
				return err
			}
		case c == '/' && l.peekIs("*"):
			if err := l.blockComment(); err != nil {
				return err
			}
		case c == '/' && l.regexpAllowed():
			if err := l.regexp(line, col); err != nil {
				return err
			}
		case c == '#' && l.off == 1 && l.peekIs("!"):
			if err := l.lineComment(); err != nil {
				return err
			}
		case c == '\'' || c == '"':
			if err := l.str(c, line, col); err != nil {
				return err
			}
		case c == '`':
			l.tmpls = append(l.tmpls, &template{line: line, col: col})
			if err := l.templateText(); err != nil {
				return err
			}
		case isIdentByte(c) && !isContinuation(c):
			// A stray UTF-8 continuation byte starts no identifier: columns
			// count characters, and it does not begin one.
			text, err := l.word(c, false)
			if err != nil {
				return err
			}
			l.emit(token{kind: tIdent, text: text, line: line, col: col})
		case isDigit(c) || (c == '.' && l.peekDigit()):
			text, err := l.word(c, true)
			if err != nil {
				return err
			}
			l.emit(token{kind: tNumber, text: text, line: line, col: col})
		case c == '.' && l.peekIs(".."):
			l.next()
			l.next()
			l.emit(token{kind: tPunct, text: "...", line: line, col: col})
		case c == '?' && l.peekIs(".") && !l.peekDigitAt(1):
			l.next()
			l.emit(token{kind: tPunct, text: "?.", line: line, col: col})
		case c == '{':
			if n := len(l.tmpls); n > 0 {
				l.tmpls[n-1].depth++
			}
			l.emit(token{kind: tPunct, text: "{", line: line, col: col})
		case c == '}':
			if n := len(l.tmpls); n > 0 {
				if l.tmpls[n-1].depth == 0 {
					// The end of a ${ … } substitution: back to the template's text.
					l.emit(token{kind: tPunct, text: "}", line: line, col: col})
					if err := l.templateText(); err != nil {
						return err
					}
					continue
				}
				l.tmpls[n-1].depth--
			}
			l.emit(token{kind: tPunct, text: "}", line: line, col: col})
		default:
			l.emit(token{kind: tPunct, text: punctText[c], line: line, col: col})
		}
	}
}

// word reads the rest of an identifier or number starting with c, keeping
// its first maxIdent+1 bytes (enough to compare with any name of interest
// and to tell a longer one apart).
func (l *lexer) word(c byte, number bool) (string, error) {
	text := []byte{c}
	for {
		p := l.peek(1)
		if len(p) == 0 || !(isIdentByte(p[0]) || isDigit(p[0]) || number && p[0] == '.') {
			break
		}
		d, _, err := l.next()
		if err != nil {
			return "", err
		}
		if len(text) <= maxIdent {
			text = append(text, d)
		}
	}
	return string(text), nil
}

func (l *lexer) peekIs(s string) bool { return string(l.peek(len(s))) == s }

func (l *lexer) peekDigit() bool { return l.peekDigitAt(0) }

func (l *lexer) peekDigitAt(i int) bool {
	p := l.peek(i + 1)
	return len(p) == i+1 && isDigit(p[i])
}

// regexpAllowed is the usual rule: a "/" starts a regular expression where
// an expression may start — at the beginning, after an operator or opening
// punctuator, or after a keyword that precedes expressions — and divides
// after a value (identifier, number, string, closing bracket).
func (l *lexer) regexpAllowed() bool {
	t := l.hist[len(l.hist)-1]
	switch t.kind {
	case tNone:
		return true
	case tIdent:
		return exprKeywords[t.text]
	case tPunct:
		return t.text != ")" && t.text != "]" && t.text != "}"
	}
	return false
}

var exprKeywords = set("return", "typeof", "instanceof", "in", "of", "new", "delete", "void",
	"throw", "case", "do", "else", "yield", "await")

// emit records a significant token and applies the focus rules that it
// completes. The order matters: pending decisions see the token before the
// bracket stack moves, the rules see the stack as it was before the token.
func (l *lexer) emit(t token) {
	l.settleFit(t)
	l.captureValue(t)
	l.rules(t)
	l.track(t)
	h := &l.hist
	copy(h[:], h[1:])
	h[len(h)-1] = t
}

func (t token) is(kind tokKind, text string) bool { return t.kind == kind && t.text == text }

func (t token) punct(texts ...string) bool {
	return t.kind == tPunct && slices.Contains(texts, t.text)
}

// onlyKey reports whether t spells the key only: only, 'only', "only".
func (t token) onlyKey() bool {
	return (t.kind == tIdent || t.kind == tString) && t.text == "only" && (t.kind == tIdent || t.exact)
}

// Receivers whose .only is a test runner's focus in every runner that has
// it (Jest, Vitest, Mocha, Jasmine, node:test, Bun, AVA, Playwright,
// Cypress, QUnit, TestCafe, Deno): it.only, test.concurrent.only,
// test.serial.only, QUnit.module.only, fixture.only …
var focusReceivers = set("it", "test", "describe", "context", "specify", "suite", "bench",
	"concurrent", "serial", "sequential", "fixture", "QUnit", "module")

// Callees whose options object takes only: node:test test/it/describe/suite
// (also t.test for subtests) and Deno.test.
var optionCallees = set("test", "it", "describe", "suite")

// Test context: names whose call (contextCalls) or any reference
// (contextNames: const d = describe) makes a file a test file in fact,
// whatever its name. fit is not one: canvas-fit's fit(canvas) is no test,
// and fit('name', …) is focus on its own.
var contextCalls = set("it", "test", "suite", "context", "specify", "xit")
var contextNames = set("describe", "fdescribe", "xdescribe",
	"beforeEach", "afterEach", "beforeAll", "afterAll", "QUnit")

var testModules = set("vitest", "node:test", "test", "bun:test", "@jest/globals", "mocha", "@playwright/test",
	"ava", "tap", "tape", "uvu", "jasmine", "qunit", "cypress", "testcafe", "zora", "@japa/runner")

var declKeywords = set("function", "get", "set", "static", "async", "class", "let", "const", "var")

// notCallees are keywords a "(" may follow without being a call.
var notCallees = set("if", "for", "while", "switch", "catch", "with", "return", "typeof", "void",
	"delete", "await", "yield", "in", "of", "instanceof", "new", "case", "do", "else", "throw", "function")

func (l *lexer) rules(t token) {
	h := &l.hist
	n := len(h) - 1 // h[n] is the token before t

	// X.only … / X['only'] …
	if recv, marker, at, ok := l.onlyMember(); ok {
		switch {
		case t.is(tPunct, "="):
			// X.only = …: the file implements only (a runner or its bundle);
			// X.only === … tests for it. Neither runs a test.
			if !l.peekIs("=") && !l.peekIs(">") {
				l.definesOnly = true
			}
		case focusReceivers[recv]:
			// Read, called or passed on: const f = it.only is an alias of a
			// focused test function just as it.only( is a call of one.
			l.hit(&l.strong, Focus{Line: at.line, Column: at.col, Marker: marker, In: "code"})
		case t.punct("(", ".", "?.", "<"):
			l.hit(&l.weak, Focus{Line: at.line, Column: at.col, Marker: marker, In: "code"})
		}
	}

	// fdescribe: …, this.fit = …: the file defines the focus functions
	// (Jasmine, jest-circus' adapter).
	if p := h[n]; p.kind == tIdent && (p.text == "fit" || p.text == "fdescribe") &&
		(t.is(tPunct, ":") && h[n-1].punct("{", ",") || t.is(tPunct, "=") && !l.peekIs("=") && h[n-1].punct(".")) {
		l.definesOnly = true
	}

	// fit( / fdescribe( / fit.each(, and test context.
	if p := h[n]; p.kind == tIdent && t.kind == tPunct && !h[n-1].punct(".", "?.") && !(h[n-1].kind == tIdent && declKeywords[h[n-1].text]) {
		switch {
		case p.text == "fdescribe" && t.punct("(", "."), p.text == "fit" && t.is(tPunct, "."):
			l.hit(&l.strong, Focus{Line: p.line, Column: p.col, Marker: p.text, In: "code"})
		case p.text == "fit" && t.is(tPunct, "("):
			l.fit = &Focus{File: l.file, Line: p.line, Column: p.col, Marker: "fit", In: "code"}
		}
		if !l.testContext && (t.text == "(" && contextCalls[p.text] || t.text != ":" && contextNames[p.text]) {
			l.testContext = true
		}
	}
	if t.kind == tString && t.exact && !l.testContext &&
		(h[n].kind == tIdent && (h[n].text == "from" || h[n].text == "import") ||
			h[n].is(tPunct, "(") && h[n-1].kind == tIdent && (h[n-1].text == "require" || h[n-1].text == "import")) &&
		(testModules[t.text] || strings.HasPrefix(t.text, "@std/testing") || strings.HasPrefix(t.text, "jsr:@std/testing")) {
		l.testContext = true
	}

	top := l.top()
	if top == nil || top.open != '{' {
		return
	}
	// only: … and ['only']: … as a key of an object literal: read the value.
	var key token
	switch {
	case h[n].is(tPunct, ":") && h[n-1].onlyKey() && h[n-2].punct("{", ","):
		key = h[n-1]
	case h[n].is(tPunct, ":") && h[n-1].is(tPunct, "]") && h[n-2].onlyKey() && h[n-3].is(tPunct, "[") && h[n-4].punct("{", ","):
		key = h[n-3]
	}
	if key.kind != tNone {
		l.value = &valueCap{key: Focus{File: l.file, Line: key.line, Column: key.col, In: "code"},
			depth: len(l.stack), arg: top.arg, argOf: top.argOf}
		l.captureValue(t)
		return
	}
	// { only } shorthand, in a test function's options: only's value, unknown
	// here, is the option.
	if t.punct(",", "}") && h[n].is(tIdent, "only") && h[n-1].punct("{", ",") && top.arg && optionCallees[top.argOf] {
		l.hit(&l.strong, Focus{Line: h[n].line, Column: h[n].col, Marker: "{ only }", In: "code"})
	}
}

// onlyMember matches the tokens before the current one against X.only,
// X?.only, X['only'], X?.['only'] (any quote, or a plain template): the
// receiver X (empty after a call or index), the marker as the source spells
// it, and where it starts.
func (l *lexer) onlyMember() (recv, marker string, at token, ok bool) {
	h := &l.hist
	n := len(h) - 1
	var k int // index of the token before the member access
	switch {
	case h[n].is(tIdent, "only") && h[n-1].punct(".", "?."):
		marker, at, k = h[n-1].text+"only", h[n-1], n-2
	case h[n].is(tPunct, "]") && (h[n-1].kind == tString || h[n-1].kind == tTemplate) && h[n-1].exact && h[n-1].text == "only" && h[n-2].is(tPunct, "["):
		marker, at, k = "['only']", h[n-2], n-3
		if h[k].is(tPunct, "?.") {
			marker, at, k = "?.['only']", h[k], k-1
		}
		if !h[k].kind.valueEnd() && !h[k].punct(")", "]") {
			return "", "", token{}, false // an array literal ['only'], not an index
		}
	default:
		return "", "", token{}, false
	}
	if h[k].kind == tIdent && len(h[k].text) <= maxIdent {
		return h[k].text, h[k].text + marker, h[k], true
	}
	return "", marker, at, true
}

func (k tokKind) valueEnd() bool {
	return k == tIdent || k == tString || k == tTemplate || k == tNumber || k == tRegexp
}

// settleFit decides a pending fit(: with a name first — fit('does x', …),
// Jasmine's and Jest's signature — it is a focused test whatever the file;
// otherwise (canvas-fit's fit(canvas), a model's fit(x, y)) only in a file
// that is a test file or has test context.
func (l *lexer) settleFit(t token) {
	if l.fit == nil {
		return
	}
	f := *l.fit
	l.fit = nil
	if t.kind == tString || t.kind == tTemplate {
		l.hit(&l.strong, f)
		return
	}
	l.hit(&l.weak, f)
}

// captureValue adds t to the value of an only: key being read, or ends it.
func (l *lexer) captureValue(t token) {
	v := l.value
	if v == nil {
		return
	}
	if len(l.stack)+l.deep != v.depth {
		if len(l.stack)+l.deep < v.depth {
			l.value = nil // the object closed irregularly
		}
		return
	}
	if t.kind == tNone || t.punct(",", "}", ")", "]", ";") {
		l.value = nil
		l.settleValue(v)
		return
	}
	if t.kind == tIdent && t.text == "function" && len(v.toks) == 0 {
		l.definesOnly = true // only: function (…) { … }: an implementation
	}
	if len(v.toks) < 4 {
		v.toks = append(v.toks, t)
	} else {
		v.over = true
	}
}

// settleValue applies the only: rule (see the package comment on focus).
func (l *lexer) settleValue(v *valueCap) {
	truth := truthiness(v.toks, v.over)
	f := v.key
	f.Marker = "only: " + spell(v.toks, v.over)
	switch {
	case truth < 0:
	case v.arg && optionCallees[v.argOf]:
		l.hit(&l.strong, f)
	case truth == 0:
	case v.arg:
		f.Note = "an option of " + v.argOf + "(…), not of a test function"
		if v.argOf == "" {
			f.Note = "an option of a call, not of a test function"
		}
		l.hit(&l.benign, f)
	default:
		l.hit(&l.weak, f)
	}
}

// truthiness of a value's first tokens: 1 a truthy literal, -1 a falsy one,
// 0 anything else (an expression, a name).
func truthiness(toks []token, over bool) int {
	neg := 0
	for len(toks) > 0 && toks[0].is(tPunct, "!") {
		neg++
		toks = toks[1:]
	}
	if over || len(toks) == 0 {
		return 0
	}
	v := 0
	t := toks[0]
	switch {
	case len(toks) == 2 && t.is(tIdent, "void"):
		v = -1
	case len(toks) == 2 && t.punct("-", "+") && toks[1].kind == tNumber:
		v = numberTruth(toks[1].text)
	case len(toks) != 1:
		return 0
	case t.kind == tIdent:
		switch t.text {
		case "true", "Infinity":
			v = 1
		case "false", "null", "undefined", "NaN":
			v = -1
		case "function", "class":
			v = 1
		}
	case t.kind == tNumber:
		v = numberTruth(t.text)
	case t.kind == tString || t.kind == tTemplate:
		v = 1
		if t.exact && t.text == "" {
			v = -1
		}
		if t.kind == tTemplate && !t.exact {
			v = 0 // a substitution may be empty
		}
	case t.kind == tRegexp, t.punct("[", "{"):
		v = 1
	}
	if neg%2 == 1 {
		v = -v
	}
	return v
}

func numberTruth(s string) int {
	s = strings.ReplaceAll(strings.TrimSuffix(s, "n"), "_", "")
	if len(s) > 2 && s[0] == '0' && strings.ContainsRune("xXoObB", rune(s[1])) {
		if strings.Trim(s[2:], "0") == "" {
			return -1
		}
		return 1
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && len(s) > maxIdent:
		return 1 // cut at maxIdent bytes: the digits kept decide nothing, a long literal is rarely 0
	case err != nil:
		return 0
	case f == 0:
		return -1
	}
	return 1
}

// spell renders a value's first tokens for the marker.
func spell(toks []token, over bool) string {
	var b strings.Builder
	for i, t := range toks {
		if p := toks[max(i-1, 0)]; i > 0 && !(p.kind == tPunct && p.line == t.line && p.col+len(p.text) == t.col) {
			b.WriteByte(' ') // none after a punctuator set tight against the next token: "!0", "&&"
		}
		switch t.kind {
		case tString:
			b.WriteString("'" + t.text + "'")
			if !t.exact {
				b.WriteString("…'")
			}
		case tTemplate:
			b.WriteString("`…`")
		case tRegexp:
			b.WriteString("/…/")
		default:
			b.WriteString(t.text)
		}
	}
	if over {
		b.WriteString(" …")
	}
	return b.String()
}

func (l *lexer) top() *frame {
	if l.deep > 0 || len(l.stack) == 0 {
		return nil
	}
	return &l.stack[len(l.stack)-1]
}

// track keeps the bracket stack: which call an object is an argument of.
func (l *lexer) track(t token) {
	if t.kind != tPunct {
		return
	}
	prev := l.hist[len(l.hist)-1]
	switch t.text {
	case "(", "[", "{":
		if len(l.stack) >= maxDepth || l.deep > 0 {
			l.deep++
			return
		}
		f := frame{open: t.text[0]}
		switch {
		case f.open == '(' && prev.kind == tIdent && !notCallees[prev.text]:
			f.callee = prev.text
		case f.open == '{':
			if top := l.top(); top != nil && top.open == '(' && prev.punct("(", ",") {
				f.arg, f.argOf = true, top.callee
			}
		}
		l.stack = append(l.stack, f)
	case ")", "]", "}":
		if l.deep > 0 {
			l.deep--
			return
		}
		open := byte('(')
		switch t.text {
		case "]":
			open = '['
		case "}":
			open = '{'
		}
		for i := len(l.stack) - 1; i >= 0; i-- {
			if l.stack[i].open == open {
				l.stack = l.stack[:i]
				return
			}
		}
	}
}

func (l *lexer) hit(list *[]Focus, f Focus) {
	if len(*list) >= maxHits {
		l.dropped++
		return
	}
	f.File = l.file
	*list = append(*list, f)
}

// promote files occurrences of a region the lexer misread as code: weak,
// so that they count in a test file (as before) and in a file with test
// context, and not in a bundle the lexer merely failed to follow.
func (l *lexer) promote(hits []Focus, note string) {
	for _, f := range hits {
		f.Note = note
		l.hit(&l.weak, f)
	}
}

// settle files a closed region's occurrences: ignored when the region closed
// as valid JavaScript would, focused when it did not.
func (l *lexer) settle(hits []Focus, closed bool, note string) {
	if closed {
		for _, f := range hits {
			l.hit(&l.ignored, f)
		}
		return
	}
	l.promote(hits, note)
}

func (l *lexer) lineComment() error {
	var s scan
	s.in = "comment"
	for {
		p := l.peek(1)
		if len(p) == 0 || p[0] == '\n' || p[0] == '\r' {
			break
		}
		bl, bc := l.line, l.col
		c, more, err := l.next()
		if err != nil || !more {
			l.settle(s.hits, true, "")
			return err
		}
		s.add(l, c, bl, bc)
	}
	l.settle(s.hits, true, "")
	return nil
}

func (l *lexer) blockComment() error {
	l.next() // '*'
	var s scan
	s.in = "comment"
	for {
		bl, bc := l.line, l.col
		c, more, err := l.next()
		if err != nil || !more {
			if err == nil || err == errStop {
				l.settle(s.hits, false, "inside a block comment that never closes; treated as code")
			}
			return err
		}
		if c == '*' && l.peekIs("/") {
			l.next()
			l.settle(s.hits, true, "")
			return nil
		}
		s.add(l, c, bl, bc)
	}
}

// str lexes a '…' or "…" literal. It cannot span lines (except by a
// backslash continuation), so one that reaches a line end was misread.
func (l *lexer) str(q byte, line, col int) error {
	var s scan
	s.in = "string"
	var content []byte
	long := false
	for {
		bl, bc := l.line, l.col
		c, more, err := l.next()
		if err != nil || !more {
			if err == nil || err == errStop {
				l.settle(s.hits, false, "inside a string that never closes; treated as code")
			}
			return err
		}
		switch {
		case c == q:
			l.settle(s.hits, true, "")
			t := token{kind: tString, line: line, col: col, exact: !long}
			if !long {
				t.text = string(content)
			}
			l.emit(t)
			return nil
		case c == '\n':
			l.settle(s.hits, false, "inside a string that does not close on its line; treated as code")
			l.emit(token{kind: tString, line: line, col: col})
			return nil
		case c == '\\':
			long = true
			d, _, err := l.next()
			if err != nil {
				return err
			}
			if d == '\r' && l.peekIs("\n") {
				l.next() // a CRLF line continuation
			}
			s.reset()
			continue
		}
		if len(content) < maxText {
			content = append(content, c)
		} else {
			long = true
		}
		s.add(l, c, bl, bc)
	}
}

// templateText lexes template text up to the closing backtick or the next
// "${"; l.tmpls' last entry is the template.
func (l *lexer) templateText() error {
	t := l.tmpls[len(l.tmpls)-1]
	var s scan
	s.in = "template"
	defer func() { t.hits = append(t.hits, s.hits...) }()
	for {
		bl, bc := l.line, l.col
		c, more, err := l.next()
		if err != nil || !more {
			return err // run promotes what open templates hold
		}
		switch {
		case c == '`':
			l.tmpls = l.tmpls[:len(l.tmpls)-1]
			l.settle(append(t.hits, s.hits...), true, "")
			s.hits, t.hits = nil, nil
			tok := token{kind: tTemplate, line: t.line, col: t.col, exact: !t.inexact}
			if !t.inexact {
				tok.text = string(t.text)
			}
			l.emit(tok)
			return nil
		case c == '\\':
			if _, _, err := l.next(); err != nil {
				return err
			}
			t.inexact = true
			s.reset()
			continue
		case c == '$' && l.peekIs("{"):
			l.next()
			t.depth = 0
			t.inexact = true
			l.emit(token{kind: tPunct, text: "{", line: bl, col: bc})
			return nil
		}
		if len(t.text) < maxText {
			t.text = append(t.text, c)
		} else {
			t.inexact = true
		}
		s.add(l, c, bl, bc)
	}
}

// regexp lexes a regular-expression literal, which cannot span lines: one
// that reaches a line end was a division misread.
func (l *lexer) regexp(line, col int) error {
	var s scan
	s.in = "regexp"
	class := false
	for {
		p := l.peek(1)
		if len(p) == 0 || p[0] == '\n' || p[0] == '\r' {
			l.settle(s.hits, false, "inside a regular expression that does not close on its line; treated as code")
			l.emit(token{kind: tRegexp, line: line, col: col})
			return nil
		}
		bl, bc := l.line, l.col
		c, more, err := l.next()
		if err != nil || !more {
			return err
		}
		switch {
		case c == '\\':
			if p := l.peek(1); len(p) == 1 && p[0] != '\n' && p[0] != '\r' {
				l.next()
			}
			s.reset()
			continue
		case c == '[':
			class = true
		case c == ']':
			class = false
		case c == '/' && !class:
			l.settle(s.hits, true, "")
			for {
				p := l.peek(1)
				if len(p) == 0 || !isIdentByte(p[0]) {
					break
				}
				l.next()
			}
			l.emit(token{kind: tRegexp, line: line, col: col})
			return nil
		}
		s.add(l, c, bl, bc)
	}
}

// scan finds marker text inside one comment, string, template part or
// regular expression, so that it can be shown (or promoted when the region
// turns out to be misread). It looks back over a short ring of the region's
// last bytes; "back" indexes count from the newest byte (0).
type scan struct {
	in   string
	ring [32]posByte
	w    int // bytes written since the last reset
	hits []Focus
}

type posByte struct {
	c         byte
	line, col int
}

func (s *scan) reset() { s.w = 0 }

func (s *scan) add(l *lexer, c byte, line, col int) {
	s.ring[s.w%len(s.ring)] = posByte{c, line, col}
	s.w++
	switch c {
	case '(':
		j := s.skipBack(1, 4)
		if k, ok := s.wordBack(j, "only"); ok && s.at(k) == '.' && s.at(k+1) != '.' {
			s.found(l, k, ".only")
		}
		for _, w := range []string{"fit", "fdescribe"} {
			if k, ok := s.wordBack(j, w); ok && s.at(k) != '.' && !isIdentByte(s.at(k)) && !isDigit(s.at(k)) {
				s.found(l, k-1, w)
			}
		}
	case 'e':
		if k, ok := s.wordBack(0, "true"); ok {
			if k = s.skipBack(k, 4); s.at(k) == ':' {
				k = s.skipBack(k+1, 4)
				if q := s.at(k); q == '\'' || q == '"' {
					k++
				}
				if m, ok := s.wordBack(k, "only"); ok && s.at(m) != '.' && !isIdentByte(s.at(m)) && !isDigit(s.at(m)) {
					s.found(l, m-1, "only: true")
				}
			}
		}
	}
}

// at returns the byte back positions before the newest, or 0 where the
// region has none.
func (s *scan) at(back int) byte {
	if back < 0 || back >= min(s.w, len(s.ring)) {
		return 0
	}
	return s.ring[(s.w-1-back)%len(s.ring)].c
}

// skipBack skips up to n spaces/tabs going back from back.
func (s *scan) skipBack(back, n int) int {
	for ; n > 0 && (s.at(back) == ' ' || s.at(back) == '\t'); n-- {
		back++
	}
	return back
}

// wordBack reports whether w ends at back, and the position just before it.
func (s *scan) wordBack(back int, w string) (int, bool) {
	for k := len(w) - 1; k >= 0; k-- {
		if s.at(back) != w[k] {
			return 0, false
		}
		back++
	}
	return back, true
}

func (s *scan) found(l *lexer, back int, marker string) {
	if len(s.hits) >= maxHits {
		l.dropped++
		return
	}
	p := s.ring[(s.w-1-back)%len(s.ring)]
	s.hits = append(s.hits, Focus{File: l.file, Line: p.line, Column: p.col, Marker: marker, In: s.in})
}

// punctText holds each byte's one-character string, so that emitting a
// punctuator allocates nothing.
var punctText = func() (t [256]string) {
	for i := range t {
		t[i] = string(rune(i))
	}
	return t
}()

func isContinuation(c byte) bool { return c&0xC0 == 0x80 }

func isIdentByte(c byte) bool {
	return isLetter(c) || c == '_' || c == '$' || c >= 0x80
}
