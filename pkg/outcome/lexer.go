package outcome

import (
	"bufio"
	"errors"
	"io"
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
	binary    bool
	truncated bool

	hist  [4]token // last significant tokens, hist[3] newest
	tmpls []*template

	focused, ignored []Focus
	dropped          int
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
	kind      tokKind
	text      string // identifier, punctuator, or string content (short ones only)
	line, col int
}

// template is one open `…` literal. Occurrences in its text are held until
// it closes: an unclosed template means the lexer misread a backtick.
type template struct {
	depth     int // brace depth inside the current ${ … }
	hits      []Focus
	line, col int
}

const maxIdent = 32

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
	if c == 0 && l.off <= 8000 {
		l.binary = true
		return 0, false, errStop
	}
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
	if l.binary {
		l.focused, l.ignored = nil, nil
		return nil
	}
	// Templates still open at the end of the file: the backtick was misread,
	// so what followed it was code.
	for _, t := range l.tmpls {
		l.promote(t.hits, "inside a template literal that never closes; treated as code")
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
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
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
			text := []byte{c}
			for {
				p := l.peek(1)
				if len(p) == 0 || !(isIdentByte(p[0]) || isDigit(p[0])) {
					break
				}
				d, _, err := l.next()
				if err != nil {
					return err
				}
				if len(text) <= maxIdent {
					text = append(text, d)
				}
			}
			l.emit(token{kind: tIdent, text: string(text), line: line, col: col})
		case isDigit(c) || (c == '.' && l.peekDigit()):
			for {
				p := l.peek(1)
				if len(p) == 0 || !(isIdentByte(p[0]) || isDigit(p[0]) || p[0] == '.') {
					break
				}
				if _, _, err := l.next(); err != nil {
					return err
				}
			}
			l.emit(token{kind: tNumber, line: line, col: col})
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
			l.emit(token{kind: tPunct, text: string(rune(c)), line: line, col: col})
		}
	}
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
	t := l.hist[3]
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
// completes.
func (l *lexer) emit(t token) {
	h := &l.hist
	switch {
	// X.only( / X.only. / X.only<
	case t.kind == tPunct && (t.text == "(" || t.text == "." || t.text == "?." || t.text == "<") &&
		h[3].kind == tIdent && h[3].text == "only" &&
		h[2].kind == tPunct && (h[2].text == "." || h[2].text == "?."):
		// The marker is the source's own spelling: "it.only", "it?.only",
		// or ".only" after a call or index.
		marker, line, col := h[2].text+"only", h[2].line, h[2].col
		if h[1].kind == tIdent && len(h[1].text) <= maxIdent {
			marker, line, col = h[1].text+marker, h[1].line, h[1].col
		}
		l.hit(&l.focused, Focus{Line: line, Column: col, Marker: marker, In: "code"})
	// fit( / fdescribe( / fit.each(
	case t.kind == tPunct && (t.text == "(" || t.text == ".") &&
		h[3].kind == tIdent && (h[3].text == "fit" || h[3].text == "fdescribe") &&
		!(h[2].kind == tPunct && (h[2].text == "." || h[2].text == "?.")) &&
		!(h[2].kind == tIdent && declKeywords[h[2].text]):
		l.hit(&l.focused, Focus{Line: h[3].line, Column: h[3].col, Marker: h[3].text, In: "code"})
	// { only: true } and { …, only: true }
	case t.kind == tIdent && t.text == "true" &&
		h[3].kind == tPunct && h[3].text == ":" &&
		(h[2].kind == tIdent || h[2].kind == tString) && h[2].text == "only" &&
		h[1].kind == tPunct && (h[1].text == "{" || h[1].text == ","):
		l.hit(&l.focused, Focus{Line: h[2].line, Column: h[2].col, Marker: "only: true", In: "code"})
	}
	h[0], h[1], h[2], h[3] = h[1], h[2], h[3], t
}

var declKeywords = set("function", "get", "set", "static", "async", "class", "let", "const", "var")

func (l *lexer) hit(list *[]Focus, f Focus) {
	if len(*list) >= maxHits {
		l.dropped++
		return
	}
	f.File = l.file
	*list = append(*list, f)
}

func (l *lexer) promote(hits []Focus, note string) {
	for _, f := range hits {
		f.Note = note
		l.hit(&l.focused, f)
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
			t := token{kind: tString, line: line, col: col}
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
		if len(content) < 8 {
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
			l.emit(token{kind: tTemplate, line: t.line, col: t.col})
			return nil
		case c == '\\':
			if _, _, err := l.next(); err != nil {
				return err
			}
			s.reset()
			continue
		case c == '$' && l.peekIs("{"):
			l.next()
			t.depth = 0
			l.emit(token{kind: tPunct, text: "{", line: bl, col: bc})
			return nil
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

func isContinuation(c byte) bool { return c&0xC0 == 0x80 }

func isIdentByte(c byte) bool {
	return isLetter(c) || c == '_' || c == '$' || c >= 0x80
}
