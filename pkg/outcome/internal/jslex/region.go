package jslex

// template is one open `…` literal. Occurrences in its text are held until
// it closes: an unclosed template means the lexer misread a backtick.
type template struct {
	depth     int // brace depth inside the current ${ … }
	hits      []Hit
	line, col int
	text      []byte
	inexact   bool // an escape, a substitution or more than maxText bytes
}

func (l *lexer) lineComment() error {
	var s region
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
	var s region
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
	var s region
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
	var s region
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
	var s region
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

// region finds marker text inside one comment, string, template part or
// regular expression, so that it can be shown (or promoted when the region
// turns out to be misread). It looks back over a short ring of the region's
// last bytes; "back" indexes count from the newest byte (0).
type region struct {
	in   string
	ring [32]posByte
	w    int // bytes written since the last reset
	hits []Hit
}

type posByte struct {
	c         byte
	line, col int
}

func (s *region) reset() { s.w = 0 }

func (s *region) add(l *lexer, c byte, line, col int) {
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
func (s *region) at(back int) byte {
	if back < 0 || back >= min(s.w, len(s.ring)) {
		return 0
	}
	return s.ring[(s.w-1-back)%len(s.ring)].c
}

// skipBack skips up to n spaces/tabs going back from back.
func (s *region) skipBack(back, n int) int {
	for ; n > 0 && (s.at(back) == ' ' || s.at(back) == '\t'); n-- {
		back++
	}
	return back
}

// wordBack reports whether w ends at back, and the position just before it.
func (s *region) wordBack(back int, w string) (int, bool) {
	for k := len(w) - 1; k >= 0; k-- {
		if s.at(back) != w[k] {
			return 0, false
		}
		back++
	}
	return back, true
}

func (s *region) found(l *lexer, back int, marker string) {
	if len(s.hits) >= MaxHits {
		l.dropped++
		return
	}
	p := s.ring[(s.w-1-back)%len(s.ring)]
	s.hits = append(s.hits, Hit{File: l.file, Line: p.line, Column: p.col, Marker: marker, In: s.in})
}
