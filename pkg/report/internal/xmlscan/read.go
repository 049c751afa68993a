package xmlscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/rmerr"
)

// validate checks that p holds XML Chars in UTF-8 (only ASCII when ascii is
// set). It returns how many leading bytes are complete and valid (a sequence
// cut by the end of p is left for the next read unless final) and the offset
// of the first bad byte, or -1.
func validate(p []byte, final, ascii bool) (ok, bad int) {
	const lo, hi = 0x2020202020202020, 0x8080808080808080
	i := 0
	for {
		// Eight bytes at a time while all are printable ASCII: a byte below
		// 0x20 borrows into its top bit, a byte from 0x80 has it set already.
		// A word with a line end or tab is checked exactly, still at once.
		for i+8 <= len(p) {
			w := binary.LittleEndian.Uint64(p[i:])
			if ((w-lo)|w)&hi != 0 && !asciiWithBreaks(w) {
				break
			}
			i += 8
		}
		end := min(i+8, len(p))
		if i == end {
			return i, -1
		}
		for i < end {
			c := p[i]
			switch {
			case c >= 0x20 && c < 0x80, c == '\n', c == '\t', c == '\r':
				i++
				continue
			case c < 0x20 || ascii:
				return i, i
			}
			r, size := utf8.DecodeRune(p[i:])
			if r == utf8.RuneError && size <= 1 {
				if !final && !utf8.FullRune(p[i:]) {
					return i, -1
				}
				return i, i
			}
			if r == 0xFFFE || r == 0xFFFF {
				return i, i
			}
			i += size
		}
	}
}

// asciiWithBreaks reports whether the eight bytes of w are ASCII and every
// one below 0x20 is '\t', '\n' or '\r'. On 7-bit lanes the sums below
// cannot carry into the next lane, so each flag is exact.
func asciiWithBreaks(w uint64) bool {
	const ones, hi = 0x0101010101010101, 0x8080808080808080
	if w&hi != 0 {
		return false
	}
	zero := func(y uint64) uint64 { return ^(y + 0x7F*ones) & hi } // lanes of y that are 0
	low := ^(w + 0x60*ones) & hi                                   // lanes below 0x20
	return low&^(zero(w^'\t'*ones)|zero(w^'\n'*ones)|zero(w^'\r'*ones)) == 0
}

func isChar(r int64) bool {
	return r == 0x9 || r == 0xA || r == 0xD || 0x20 <= r && r <= 0xD7FF ||
		0xE000 <= r && r <= 0xFFFD || 0x10000 <= r && r <= 0x10FFFF
}

// errEOF is fill's answer when the input ends before the bytes asked for.
var errEOF = errors.New("unexpected end of file")

// line is the 1-based line of buf[at].
func (s *Scanner) line(at int) int {
	return s.lines + bytes.Count(s.buf[s.lineFrom:at], []byte{'\n'}) + 1
}

const hintWellFormed = "make the test runner write well-formed UTF-8 JUnit XML (xmllint --noout FILE shows the first problem)"

func (s *Scanner) errorf(at int, format string, args ...any) *rmerr.Error {
	return rmerr.New(rmerr.ReportMalformed, "line %d: %s", s.line(at), fmt.Sprintf(format, args...)).
		WithHint(hintWellFormed)
}

// fill makes at least need validated bytes available at buf[pos:], unless
// the input ends first (errEOF) or the scanner reaches a byte it may not
// read. Problems found in read-ahead (a bad byte, the MaxBytes cap, a read
// error) wait in pending until the scanner gets there, so the error a report
// earns is the first one in document order, whatever the reader's chunking.
func (s *Scanner) fill(need int) error {
	stalls := 0
	for s.vend-s.pos < need {
		if s.pending != nil {
			return s.pending
		}
		if s.eof {
			return errEOF
		}
		var n int
		var err error
		if s.mp != nil {
			// Lines are counted only for an error, from the start: the
			// released pages read back from the page cache.
			s.mp.release(s.pos)
			n = min(bufSize, len(s.buf)-s.end)
			if s.end+n == len(s.buf) {
				err = io.EOF
			}
		} else {
			if s.pos > 0 {
				s.lines += bytes.Count(s.buf[s.lineFrom:s.pos], []byte{'\n'})
				s.end = copy(s.buf, s.buf[s.pos:s.end])
				s.vend -= s.pos
				s.pos, s.lineFrom = 0, 0
			}
			n, err = s.r.Read(s.buf[s.end:])
		}
		if n > 0 {
			stalls = 0
			s.sum.Write(s.buf[s.end : s.end+n])
			s.n += int64(n)
			s.end += n
		}
		var readErr error
		switch {
		case err == io.EOF:
			s.eof = true
		case err != nil:
			readErr = rmerr.Wrap(rmerr.ReportMalformed, err, "reading report").
				WithHint("check that the report file is readable and complete")
		case n == 0:
			if stalls++; stalls > 100 {
				readErr = rmerr.Wrap(rmerr.ReportMalformed, io.ErrNoProgress, "reading report")
			}
		}
		// Bytes past MaxBytes are never parsed.
		limit, capped := s.end, false
		if over := s.n - s.maxBytes; over > 0 {
			limit, capped = s.end-int(min(over, int64(s.end))), true
			limit = max(limit, s.vend)
		}
		ok, bad := validate(s.buf[s.vend:limit], s.eof && !capped, s.ascii)
		switch {
		case bad >= 0:
			s.vend += bad
			s.pending = s.badChar(s.vend)
		case capped:
			s.vend += ok
			s.pending = rmerr.New(rmerr.ReportLimit, "report is larger than the cap of %d bytes (Limits.MaxBytes)", s.maxBytes).
				WithHint("split the report, or raise the cap if a report this large is expected")
		default:
			s.vend += ok
			s.pending = readErr
		}
	}
	return nil
}

func (s *Scanner) badChar(at int) error {
	p := s.buf[at:s.end]
	c := p[0]
	switch {
	case c < 0x20:
		return s.errorf(at, "control character U+%04X is not allowed in XML", c)
	case s.ascii && c >= 0x80:
		return s.errorf(at, "byte 0x%02X in a report whose XML declaration says US-ASCII", c)
	}
	r, size := utf8.DecodeRune(p)
	if r == utf8.RuneError && size <= 1 {
		return s.errorf(at, "invalid UTF-8 (byte 0x%02X): runmill reads JUnit reports as UTF-8 only", c)
	}
	return s.errorf(at, "character U+%04X is not allowed in XML", r)
}

// peek returns the next byte, or errEOF.
func (s *Scanner) peek() (byte, error) {
	if s.pos >= s.vend {
		if err := s.fill(1); err != nil {
			return 0, err
		}
	}
	return s.buf[s.pos], nil
}

// has reports whether the next bytes are lit. When the input ends in a
// proper prefix of lit, it answers errEOF: the document was cut there.
func (s *Scanner) has(lit string) (bool, error) {
	if err := s.fill(len(lit)); err != nil {
		if rest := string(s.buf[s.pos:s.vend]); err == errEOF && !strings.HasPrefix(lit, rest) {
			return false, nil
		}
		return false, err
	}
	return string(s.buf[s.pos:s.pos+len(lit)]) == lit, nil
}

// eofIn turns errEOF into a malformed-report error naming what was cut.
func (s *Scanner) eofIn(err error, what string) error {
	if err != errEOF {
		return err
	}
	if what != "" {
		what = " " + what
	}
	return s.errorf(s.vend, "unexpected end of file%s (is the report truncated?)", what)
}

// space skips whitespace and reports whether there was any.
func (s *Scanner) space() (bool, error) {
	seen := false
	for {
		buf, i := s.buf[:s.vend], s.pos
		for i < len(buf) && spaceByte[buf[i]] {
			i++
		}
		seen = seen || i > s.pos
		s.pos = i
		if i < len(buf) {
			return seen, nil
		}
		if err := s.fill(1); err != nil {
			return seen, err
		}
	}
}

// atSpace is whether space has anything to do: most calls in a tag meet
// no whitespace (between a name and '=') and are answered without a call.
func (s *Scanner) atSpace() bool { return s.pos >= s.vend || spaceByte[s.buf[s.pos]] }
