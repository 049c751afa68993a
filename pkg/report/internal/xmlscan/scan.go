package xmlscan

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"io"
	"math/bits"
	"runtime/debug"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/report/internal/textcap"
	"github.com/runmill/verify/pkg/rmerr"
)

// Handler is what the scanner drives: the JUnit builder of pkg/report.
type Handler interface {
	// Start is an element opening, parent the name of the element around
	// it (nil for the root); a holds the attributes Config.Attr numbered.
	Start(name, parent []byte, a *Attrs) error
	// End closes the element last started.
	End() error
	// Sink is where the character data of the open element goes; nil
	// discards it. The scanner asks before each run of text.
	Sink() *textcap.Field
}

// Config bounds a scan and names the attributes the handler reads.
type Config struct {
	MaxBytes int64 // cap on the document (RM-REPORT-003 beyond)
	MaxField int   // bytes kept of each text field (textcap.Field.Max)
	// Attr numbers an attribute the handler reads, 0 ≤ id < Attrs (one id
	// per name), or returns -1: values of all other attributes are checked
	// and dropped unread, so what one element costs in memory is bounded
	// by Attrs fields of MaxField each.
	Attr  func(name []byte) int
	Attrs int
}

const (
	bufSize  = 256 << 10 // read buffer: big enough to amortise syscalls, small enough for L2
	MaxName  = 1024      // bytes per element or attribute name
	MaxAttrs = 256       // attributes per element
	maxDecl  = 1024      // bytes in the XML declaration
)

// single maps a byte to a one-byte slice without allocating.
var single = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
	}
	return
}()

func oneByte(c byte) []byte { return single[c : int(c)+1] }

// Byte classes. Each stop set marks the bytes that end the fast loop of one
// context; everything else is copied or skipped in bulk.
var (
	stopText  = newStops("<&]\r") // character data: markup, reference, "]]>" check, CR
	stopCDATA = newStops("]\r")
	stopAttrQ = newStops("\"<&\r") // attribute value in "…"
	stopAttrA = newStops("'<&\r")  // attribute value in '…'
	nameStart [256]bool
	nameChar  [256]uint8 // 0: ends a name; nameColon: ':'; else another name byte
)

const nameColon = 2

// stops is a set of at most four stop bytes, read eight bytes at a time:
// most text and attribute values are long runs without one, and a table
// lookup per byte cost more than the rest of the scan.
type stops struct {
	tab  [256]bool
	word [4]uint64 // each stop byte in all eight lanes (repeated to fill four)
}

func newStops(set string) *stops {
	st := &stops{}
	for i := range st.word {
		c := set[i%len(set)]
		st.tab[c] = true
		st.word[i] = 0x0101010101010101 * uint64(c)
	}
	return st
}

// skip returns the length of the run at the start of p without a stop byte.
func (st *stops) skip(p []byte) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	s0, s1, s2, s3 := st.word[0], st.word[1], st.word[2], st.word[3]
	i := 0
	for ; i+8 <= len(p); i += 8 {
		w := binary.LittleEndian.Uint64(p[i : i+8])
		// A lane of x is zero where w holds that stop byte. (x-lo)&^x&hi
		// flags every zero lane and may flag a lane above one (a borrow),
		// never below: the lowest flag is the first stop byte.
		x := w ^ s0
		m := (x - lo) &^ x
		x = w ^ s1
		m |= (x - lo) &^ x
		x = w ^ s2
		m |= (x - lo) &^ x
		x = w ^ s3
		m |= (x - lo) &^ x
		if m &= hi; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(p) && !st.tab[p[i]] {
		i++
	}
	return i
}

func init() {
	for c := 0; c < 128; c++ {
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		nameStart[c] = letter || c == '_' || c == ':'
		if nameStart[c] || '0' <= c && c <= '9' || c == '.' || c == '-' {
			nameChar[c] = 1
		}
	}
	nameChar[':'] = nameColon
}

func isSpace(c byte) bool { return spaceByte[c] }

var spaceByte = [256]bool{' ': true, '\n': true, '\t': true, '\r': true}

// Scanner reads one document and drives a Handler.
type Scanner struct {
	r     io.Reader
	buf   []byte
	pos   int // next byte to consume
	vend  int // buf[pos:vend] is validated
	end   int // buf[vend:end] is read, not yet validated
	eof   bool
	ascii bool // declared US-ASCII
	// mp, when the file is mapped (mapFile): buf is then the file itself,
	// revealed bufSize bytes at a time as if read, and never moved.
	mp *mapping

	sum      hash.Hash
	n        int64 // bytes read
	maxBytes int64

	pending error // raised when the scanner needs bytes past vend

	lines    int // newlines before buf[lineFrom]
	lineFrom int

	h        Handler
	attrOf   func(name []byte) int
	rootSeen bool
	stack    []byte  // names of the open elements, back to back
	offs     []int32 // start of each name in stack
	elem     []byte  // name of the element being read
	attrs    Attrs
	anames   []byte  // names of the element's attributes the handler does not read
	aoffs    []int32 // start of each name in anames
	nattrs   int     // attributes of the element being read
	aseen    map[string]struct{}
	scratch  []byte
}

// New returns a scanner of r that drives h; Run reads the document.
func New(r io.Reader, h Handler, c Config) *Scanner {
	s := &Scanner{
		r:        r,
		sum:      sha256.New(),
		maxBytes: c.MaxBytes,
		h:        h,
		attrOf:   c.Attr,
		attrs:    NewAttrs(c.Attrs, c.MaxField),
	}
	// The cap stops parsing at MaxBytes; a read past it sees a little more.
	if s.mp, s.buf = mapFile(r, c.MaxBytes+bufSize); s.mp == nil {
		s.buf = make([]byte, bufSize)
	}
	return s
}

// SHA256 is the digest of every byte read, in hex.
func (s *Scanner) SHA256() string { return hex.EncodeToString(s.sum.Sum(nil)) }

// Bytes is how many bytes were read.
func (s *Scanner) Bytes() int64 { return s.n }

// Run reads the whole document. Its errors are RM-REPORT-001 (outside the
// subset, with the line) or RM-REPORT-003 (a cap), or the handler's own,
// given the line.
func (s *Scanner) Run() (err error) {
	defer func() {
		if err == errEOF {
			err = s.eofIn(err, "")
		}
	}()
	if s.mp != nil {
		defer s.mp.close()
		// A file that shrinks under its mapping faults where it is read
		// (SIGBUS): that is an error of this report, not a crash.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			r := recover()
			if f, ok := r.(interface{ Addr() uintptr }); ok && s.mp.contains(f.Addr()) {
				err = rmerr.New(rmerr.ReportMalformed, "the report file shrank while it was read").
					WithHint("leave the report unchanged until runmill has read it")
			} else if r != nil {
				panic(r)
			}
		}()
	}
	if err := s.prolog(); err != nil {
		return err
	}
	for {
		if len(s.offs) > 0 {
			if err := s.text(); err != nil {
				return s.eofIn(err, "inside <"+s.top()+">")
			}
		} else {
			if _, err := s.space(); err != nil {
				if err != errEOF {
					return err
				}
				if !s.rootSeen {
					if s.n == 0 {
						return rmerr.New(rmerr.ReportMalformed, "empty file (0 bytes): not a JUnit XML report").
							WithHint("the test command did not write its report; check the reporter flags and the report path")
					}
					return s.errorf(s.pos, "no root element: not a JUnit XML report").WithHint(hintWellFormed)
				}
				return nil
			}
			if c := s.buf[s.pos]; c != '<' {
				if !s.rootSeen {
					return s.notXML()
				}
				return s.errorf(s.pos, "text after the root element")
			}
		}
		if err := s.fill(2); err != nil {
			return s.eofIn(err, "in markup")
		}
		var err error
		switch s.buf[s.pos+1] {
		case '/':
			err = s.endTag()
		case '?':
			err = s.pi()
		case '!':
			err = s.bang()
		default:
			if len(s.offs) == 0 && s.rootSeen {
				return s.errorf(s.pos, "a second root element: a JUnit report has exactly one")
			}
			err = s.startTag()
		}
		if err != nil {
			return err
		}
	}
}

func (s *Scanner) top() string {
	return string(s.stack[s.offs[len(s.offs)-1]:])
}

// until hands the run of bytes before the next stop byte to sink (when it
// has one), refilling the buffer as needed, and returns that stop byte
// without consuming it. It is the one inner loop of text, CDATA and
// attribute values.
func (s *Scanner) until(stop *stops, sink *textcap.Field) (byte, error) {
	for {
		buf := s.buf[s.pos:s.vend]
		i := stop.skip(buf)
		if sink != nil && i > 0 {
			sink.Write(buf[:i])
		}
		s.pos += i
		if i < len(buf) {
			return buf[i], nil
		}
		if err := s.fill(1); err != nil {
			return 0, err
		}
	}
}

// text reads character data up to the next '<', handing it to the builder's
// sink when it has one.
func (s *Scanner) text() error {
	sink := s.h.Sink()
	for {
		c, err := s.until(stopText, sink)
		if err != nil {
			return err
		}
		switch c {
		case '<':
			return nil
		case '&':
			if err := s.reference(sink); err != nil {
				return err
			}
		case ']':
			if ok, err := s.has("]]>"); err != nil {
				return err
			} else if ok {
				return s.errorf(s.pos, "\"]]>\" outside a CDATA section")
			}
			s.pos++
			if sink != nil {
				sink.Write(oneByte(']'))
			}
		case '\r':
			s.cr(sink)
		}
	}
}

// cr reads a carriage return at pos as a line end (XML § 2.11).
func (s *Scanner) cr(sink *textcap.Field) {
	s.pos++
	if s.pos == s.vend {
		if err := s.fill(1); err != nil {
			// The next read reports the error, or EOF follows the CR.
			if sink != nil {
				sink.Write(oneByte('\n'))
			}
			return
		}
	}
	if s.buf[s.pos] == '\n' {
		return // the LF is read as text
	}
	if sink != nil {
		sink.Write(oneByte('\n'))
	}
}

// reference reads "&…;" at pos and writes what it stands for to sink.
func (s *Scanner) reference(sink *textcap.Field) error {
	if err := s.fill(2); err != nil {
		return s.eofIn(err, "in a reference")
	}
	if s.buf[s.pos+1] == '#' {
		return s.charRef(sink)
	}
	s.fill(3) // &amp; and &apos; differ in the third byte; has reports any error
	ref, ch := "", byte(0)
	switch s.buf[s.pos+1] {
	case 'l':
		ref, ch = "&lt;", '<'
	case 'g':
		ref, ch = "&gt;", '>'
	case 'q':
		ref, ch = "&quot;", '"'
	case 'a':
		ref, ch = "&amp;", '&'
		if s.pos+2 < s.vend && s.buf[s.pos+2] == 'p' {
			ref, ch = "&apos;", '\''
		}
	}
	if ref != "" {
		if ok, err := s.has(ref); err != nil {
			return err
		} else if ok {
			s.pos += len(ref)
			if sink != nil {
				sink.Write(oneByte(ch))
			}
			return nil
		}
	}
	// Name what was found, for the error only.
	s.fill(40)
	p := s.buf[s.pos:min(s.vend, s.pos+40)]
	if i := bytes.IndexByte(p, ';'); i >= 0 {
		p = p[:i+1]
	} else if i := bytes.IndexAny(p, " \t\r\n<&\"'"); i >= 0 {
		p = p[:i]
	}
	return s.errorf(s.pos, "undefined entity %q: runmill never expands entities; only &lt; &gt; &amp; &apos; &quot; and numeric character references are accepted", p)
}

// charRef reads a numeric character reference at pos ("&#…;" or "&#x…;"),
// which must name an XML Char.
func (s *Scanner) charRef(sink *textcap.Field) error {
	s.pos += 2
	base := int64(10)
	if c, err := s.peek(); err != nil {
		return s.eofIn(err, "in a character reference")
	} else if c == 'x' {
		base = 16
		s.pos++
	}
	var v int64
	digits := 0
	for {
		c, err := s.peek()
		if err != nil {
			return s.eofIn(err, "in a character reference")
		}
		d := int64(-1)
		switch {
		case '0' <= c && c <= '9':
			d = int64(c - '0')
		case base == 16 && 'a' <= c && c <= 'f':
			d = int64(c-'a') + 10
		case base == 16 && 'A' <= c && c <= 'F':
			d = int64(c-'A') + 10
		}
		if d < 0 {
			break
		}
		// Saturate: leading zeros may be many, a value past U+10FFFF is bad either way.
		v = min(v*base+d, 0x110000)
		digits++
		s.pos++
	}
	if c, _ := s.peek(); c != ';' || digits == 0 {
		return s.errorf(s.pos, "malformed character reference")
	}
	s.pos++
	if !isChar(v) {
		return s.errorf(s.pos, "character reference to U+%04X, which is not an XML character", v)
	}
	if sink != nil {
		var u [utf8.UTFMax]byte
		sink.Write(u[:utf8.EncodeRune(u[:], rune(v))])
	}
	return nil
}
