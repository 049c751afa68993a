package jslex

import (
	"bufio"
	"io"
)

// MaxHits bounds the occurrences kept per file and list; the rest are
// counted in Result.Dropped.
const MaxHits = 1000

// Hit is one focus marker occurrence; pkg/outcome's Focus has the same
// fields and converts from it.
type Hit struct {
	File   string
	Line   int // 1-based
	Column int // 1-based, in characters (bytes that start a UTF-8 sequence)
	Marker string
	In     string // code, comment, string, template or regexp
	Note   string
}

// Result is what one file shows.
type Result struct {
	// Strong: focus whatever the file; Weak: focus in a test file or a
	// file with test context; Benign: listed, never focus; Ignored: inside
	// comments, strings, templates or regexps.
	Strong, Weak, Benign, Ignored []Hit
	Dropped                       int  // occurrences beyond MaxHits
	Truncated                     bool // the file is longer than max
	TestContext                   bool // it calls a test function or imports a test framework
	DefinesOnly                   bool // it defines focus (X.only = …, only: function, fdescribe: …)
}

// Scan lexes the first max bytes of r, the content of file (its repository
// path, written into every hit), reading at most max+1 bytes.
func Scan(r io.Reader, file string, max int64) (*Result, error) {
	l := &lexer{
		r:    bufio.NewReader(io.LimitReader(r, max+1)),
		file: file, line: 1, col: 1, max: max,
	}
	if err := l.run(); err != nil {
		return nil, err
	}
	return &Result{
		Strong: l.strong, Weak: l.weak, Benign: l.benign, Ignored: l.ignored,
		Dropped: l.dropped, Truncated: l.truncated, TestContext: l.testContext, DefinesOnly: l.definesOnly,
	}, nil
}

// set is a literal set of words. (pkg/outcome's output phrases have their
// own: an internal package cannot share a five-line helper without a third
// package for it.)
func set(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
