// Package jslex is just enough of a JavaScript/TypeScript lexer to find
// focus markers (it.only, fdescribe, only: true, …) for pkg/outcome's
// FindFocus, and to tell code from comments, strings, templates and
// regular-expression literals. The rules that decide what a marker means
// live with the lexer because they read its token history and bracket
// stack as it goes; pkg/outcome decides what a file's hits mean for the
// check (test file or not, vendored, a runner's own source).
package jslex

import (
	"bufio"
	"errors"
	"io"
	"slices"
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

	fit   *Hit      // a fit( whose first argument decides strong or weak
	value *valueCap // the value of an only: key being read

	// Test-framework receivers this file binds (bind.go).
	bound         map[string]bool
	assign        *assignState
	pending       []string // names destructured by an import or require
	collecting    bool     // inside its { … }
	importDefault string   // import NAME … from
	closedRoot    string   // the chain root of the call the last ")" closed

	// What the file shows about itself (see the package comment on focus).
	testContext bool // it calls a test function or imports a test framework
	definesOnly bool // it defines focus (X.only = …, only: function, fdescribe: …)

	// strong: focus whatever the file; weak: focus in a test file or a file
	// with test context; benign: listed, never focus.
	strong, weak, benign []Hit
	ignored              []Hit // inside comments, strings, templates, regexps
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
	// root: the first name of the member chain called (test in
	// test.skipIf(…), t in t.test(…)).
	callee, root string
	// arg: for '{' and '[', the literal is directly an argument of the
	// enclosing call, whose callee is argOf; nested: it is a property value
	// of the object it sits in; element: an element of the array.
	arg, nested, element bool
	argOf                string
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
	l.bindings(t)
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

// literalArgOf returns the callee of the call one of whose arguments holds
// the literal on top of the stack, through property values and array
// elements (expect(x).toEqual({ flags: { only: true } }): toEqual), and
// whether there is one.
func (l *lexer) literalArgOf() (string, bool) {
	if l.deep > 0 {
		return "", false
	}
	for i := len(l.stack) - 1; i >= 0; i-- {
		f := &l.stack[i]
		switch {
		case f.arg:
			return f.argOf, true
		case !f.nested && !f.element:
			return "", false
		}
	}
	return "", false
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
			f.callee, f.root = prev.text, prev.text
			h := &l.hist
			for i := len(h) - 1; i >= 2 && h[i-1].punct(".", "?.") && h[i-2].kind == tIdent; i -= 2 {
				f.root = h[i-2].text
			}
		case f.open == '{' || f.open == '[':
			top := l.top()
			switch {
			case top != nil && top.open == '(' && prev.punct("(", ","):
				f.arg, f.argOf = true, top.callee
			case top != nil && prev.is(tPunct, ":") && top.open == '{':
				f.nested = true
			case top != nil && prev.punct("[", ",") && top.open == '[':
				f.element = true
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
				if open == '(' {
					l.closedRoot = l.stack[i].root
				}
				l.stack = l.stack[:i]
				return
			}
		}
	}
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
