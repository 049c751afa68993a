package jslex

import "strings"

// Which names are test-framework receivers in a file: X.only( is focus
// only where X is one (see the package comment on focus in pkg/outcome).
// A receiver is a framework's documented name (focusReceivers,
// chainReceivers) or a name the file binds to one:
//
//   - an alias: NAME = … whose right-hand side names a receiver at its own
//     level (const d = describe; const t = cond ? it : test; const test =
//     base.extend({…}); const s = suite('cart'), uvu's suites);
//   - an import or require of a test framework: import test from 'ava',
//     import { test as base } from '@playwright/test', const tap =
//     require('tap'), const { it: spec } = require('mocha');
//   - a callback's first parameter in a call of a receiver, the test
//     context: test('x', (t) => …), tap.test('x', t => …), t.test('y',
//     async function (t2) { … }) — tap's t.only(…) is focus.
//
// The result of a call of a receiver is one too (test.skipIf(c).only(…)).
// Anything else — q.only('name') on a query builder, Joi's any().only(),
// collect(user).only('a') — is an object's own only method, never focus.

// Receivers of .only that are test modifiers in some runners but common
// words elsewhere: focus in a test file or a file with test context only.
// Playwright's test.describe.parallel.only, Vitest's describe.shuffle.only,
// AVA's test.failing.only, node-tap's tap.only (t.only through the
// callback rule).
var chainReceivers = set("parallel", "shuffle", "failing", "tap")

// maxBound bounds the names a file binds: past it, further bindings are not
// kept (a file with thousands of aliases is generated, not written).
const maxBound = 256

// assignState is a NAME = … whose right-hand side is being read.
type assignState struct {
	name  string
	depth int // len(stack) at the "="
}

// receiver reports whether name is a test-framework receiver in this file.
func (l *lexer) receiver(name string) bool {
	return focusReceivers[name] || chainReceivers[name] || l.bound[name]
}

func (l *lexer) bind(name string) {
	if name == "" || l.receiver(name) || declKeywords[name] || notCallees[name] {
		return
	}
	if l.bound == nil {
		l.bound = map[string]bool{}
	}
	if len(l.bound) < maxBound {
		l.bound[name] = true
	}
}

// callOfReceiver: a frame is the argument list of a call of a receiver.
func (l *lexer) callOfReceiver(f *frame) bool {
	return f != nil && f.open == '(' && (l.receiver(f.callee) || l.receiver(f.root))
}

// bindings applies the rules above to t, the token after h[n]; it runs
// before the bracket stack moves for t.
func (l *lexer) bindings(t token) {
	h := &l.hist
	n := len(h) - 1

	// NAME = …: an alias when the right-hand side names a receiver at its
	// own level. "==", "=>", "+=" … and obj.NAME = are no such assignment.
	if h[n].is(tPunct, "=") && h[n-1].kind == tIdent && !h[n-2].punct(".", "?.") && !t.punct("=", ">") {
		l.assign = &assignState{name: h[n-1].text, depth: len(l.stack) + l.deep}
	}
	if a := l.assign; a != nil {
		d := len(l.stack) + l.deep
		switch {
		case d < a.depth || d == a.depth && t.punct(",", ";", ")", "]", "}"):
			l.assign = nil
		case d == a.depth && t.kind == tIdent && !h[n].punct(".", "?.") && l.receiver(t.text):
			l.bind(a.name)
			l.assign = nil
		}
	}

	// Destructured names of an import or a require: collected, bound once
	// the module turns out to be a test framework.
	switch {
	case t.kind == tIdent && (t.text == "import" || t.text == "const" || t.text == "let" || t.text == "var"):
		l.pending, l.collecting = l.pending[:0], false
	case t.is(tPunct, "{") && (h[n].kind == tIdent && (h[n].text == "import" || h[n].text == "const" || h[n].text == "let" || h[n].text == "var") ||
		h[n].is(tPunct, ",") && h[n-1].kind == tIdent && h[n-2].is(tIdent, "import")):
		l.pending, l.collecting = l.pending[:0], true
	case l.collecting && t.is(tPunct, "}"):
		l.collecting = false
	case l.collecting && t.kind == tIdent && t.text != "as" && t.text != "type" && len(l.pending) < 32:
		l.pending = append(l.pending, t.text)
	case t.is(tPunct, ";"):
		l.pending, l.collecting = l.pending[:0], false
	}
	switch {
	case h[n].is(tIdent, "import") && t.kind == tIdent && t.text != "type":
		l.importDefault = t.text // import test from …, import test, { … } from …
	case t.kind == tIdent && t.text == "import":
		l.importDefault = ""
	}
	if t.kind == tString && t.exact && testModule(t.text) {
		switch {
		case h[n].is(tPunct, "(") && h[n-1].is(tIdent, "require") && h[n-2].is(tPunct, "=") && h[n-3].kind == tIdent:
			l.bind(h[n-3].text) // const tap = require('tap')
		case h[n].is(tIdent, "from") && h[n-1].kind == tIdent && h[n-2].is(tIdent, "as"):
			l.bind(h[n-1].text) // import * as t from 'tap'
		}
		if h[n].is(tIdent, "from") || h[n].is(tPunct, "(") && h[n-1].is(tIdent, "require") {
			for _, name := range l.pending {
				l.bind(name)
			}
			if h[n].is(tIdent, "from") {
				l.bind(l.importDefault)
			}
		}
		l.pending, l.importDefault = l.pending[:0], ""
	}

	// The test context: the first parameter of a callback passed to a
	// receiver's call.
	if t.is(tPunct, "=") && l.peekIs(">") {
		top := l.top()
		switch {
		case h[n].kind == tIdent && (h[n-1].punct("(", ",") || h[n-1].is(tIdent, "async") && h[n-2].punct("(", ",")):
			if l.callOfReceiver(top) {
				l.bind(h[n].text) // t => …
			}
		case h[n].is(tPunct, ")") && l.callOfReceiver(top):
			// (t) => …, (t, done) => …: the parenthesis has closed.
			switch {
			case h[n-1].kind == tIdent && h[n-2].is(tPunct, "("):
				l.bind(h[n-1].text)
			case h[n-1].kind == tIdent && h[n-2].is(tPunct, ",") && h[n-3].kind == tIdent && h[n-4].is(tPunct, "("):
				l.bind(h[n-3].text)
			}
		}
	}
	if t.kind == tIdent && h[n].is(tPunct, "(") && (h[n-1].is(tIdent, "function") || h[n-1].kind == tIdent && h[n-2].is(tIdent, "function")) {
		// function (t) { … }: the parameter list is the top frame, the call
		// the one below it.
		if k := len(l.stack) - 2; l.deep == 0 && k >= 0 && l.callOfReceiver(&l.stack[k]) {
			l.bind(t.text)
		}
	}
}

// testModule reports whether an import or require names a test framework.
func testModule(s string) bool {
	return testModules[s] || strings.HasPrefix(s, "@std/testing") || strings.HasPrefix(s, "jsr:@std/testing")
}
