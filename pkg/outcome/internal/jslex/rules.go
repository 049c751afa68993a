package jslex

import (
	"strconv"
	"strings"
)

// valueCap collects the first tokens of the value of an only: key, at the
// object's own bracket depth.
type valueCap struct {
	key   Hit
	depth int // len(stack) inside the object
	arg   bool
	argOf string
	// inArg: the object is nested, through property values and array
	// elements, in an argument of a call of inArgOf.
	inArg   bool
	inArgOf string
	nested  bool // the object is a property value or array element
	toks    []token
	over    bool // more tokens than kept
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
	if recv, marker, at, before, ok := l.onlyMember(); ok {
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
			l.hit(&l.strong, Hit{Line: at.line, Column: at.col, Marker: marker, In: "code"})
		case recv != "" && l.receiver(recv), recv == "" && before.is(tPunct, ")") && l.receiver(l.closedRoot):
			// A modifier, an alias, a test context or a receiver's call
			// result (bind.go): focus where tests are.
			l.hit(&l.weak, Hit{Line: at.line, Column: at.col, Marker: marker, In: "code"})
		case t.punct("(", ".", "?.", "<"):
			note := recv + " is no test function (it, test, describe …) nor a name this file binds to one: an object's own only method"
			if recv == "" {
				note = "the receiver is no test function's result: an object's own only method"
			}
			l.hit(&l.benign, Hit{Line: at.line, Column: at.col, Marker: marker, In: "code", Note: note})
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
			l.hit(&l.strong, Hit{Line: p.line, Column: p.col, Marker: p.text, In: "code"})
		case p.text == "fit" && t.is(tPunct, "("):
			l.fit = &Hit{File: l.file, Line: p.line, Column: p.col, Marker: "fit", In: "code"}
		}
		if !l.testContext && (t.text == "(" && contextCalls[p.text] || t.text != ":" && contextNames[p.text]) {
			l.testContext = true
		}
	}
	if t.kind == tString && t.exact && !l.testContext &&
		(h[n].kind == tIdent && (h[n].text == "from" || h[n].text == "import") ||
			h[n].is(tPunct, "(") && h[n-1].kind == tIdent && (h[n-1].text == "require" || h[n-1].text == "import")) &&
		testModule(t.text) {
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
		l.value = &valueCap{key: Hit{File: l.file, Line: key.line, Column: key.col, In: "code"},
			depth: len(l.stack), arg: top.arg, argOf: top.argOf}
		if !top.arg {
			l.value.inArgOf, l.value.inArg = l.literalArgOf()
			l.value.nested = top.nested
		}
		l.captureValue(t)
		return
	}
	// { only } shorthand, in a test function's options: only's value, unknown
	// here, is the option.
	if t.punct(",", "}") && h[n].is(tIdent, "only") && h[n-1].punct("{", ",") && top.arg && optionCallees[top.argOf] {
		l.hit(&l.strong, Hit{Line: h[n].line, Column: h[n].col, Marker: "{ only }", In: "code"})
	}
}

// onlyMember matches the tokens before the current one against X.only,
// X?.only, X['only'], X?.['only'] (any quote, or a plain template): the
// receiver X (empty after a call or index), the marker as the source spells
// it, where it starts, and the token before the member access.
func (l *lexer) onlyMember() (recv, marker string, at, before token, ok bool) {
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
			return "", "", token{}, token{}, false // an array literal ['only'], not an index
		}
	default:
		return "", "", token{}, token{}, false
	}
	if h[k].kind == tIdent && len(h[k].text) <= maxIdent {
		return h[k].text, h[k].text + marker, h[k], h[k], true
	}
	return "", marker, at, h[k], true
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
	case v.inArg && !optionCallees[v.inArgOf]:
		// Test data: expect(schema.describe()).toEqual({ flags: { only:
		// true } }) passes no option to any test function.
		f.Note = "inside an argument of " + v.inArgOf + "(…), not a test function's options"
		if v.inArgOf == "" {
			f.Note = "inside an argument of a call, not a test function's options"
		}
		l.hit(&l.benign, f)
	case v.nested && !v.inArg:
		// const expected = { flags: { only: true } }: a test function's
		// options object has only at its top level.
		f.Note = "nested in a literal, not at the top level of an options object"
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

func (l *lexer) hit(list *[]Hit, f Hit) {
	if len(*list) >= MaxHits {
		l.dropped++
		return
	}
	f.File = l.file
	*list = append(*list, f)
}

// promote files occurrences of a region the lexer misread as code: weak,
// so that they count in a test file (as before) and in a file with test
// context, and not in a bundle the lexer merely failed to follow.
func (l *lexer) promote(hits []Hit, note string) {
	for _, f := range hits {
		f.Note = note
		l.hit(&l.weak, f)
	}
}

// settle files a closed region's occurrences: ignored when the region closed
// as valid JavaScript would, focused when it did not.
func (l *lexer) settle(hits []Hit, closed bool, note string) {
	if closed {
		for _, f := range hits {
			l.hit(&l.ignored, f)
		}
		return
	}
	l.promote(hits, note)
}
