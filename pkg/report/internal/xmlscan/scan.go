package xmlscan

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"unicode/utf8"

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
	Sink() *Field
}

// Config bounds a scan and names the attributes the handler reads.
type Config struct {
	MaxBytes int64 // cap on the document (RM-REPORT-003 beyond)
	MaxField int   // bytes kept of each text field (Field.Max)
	// Attr numbers an attribute the handler reads, 0 ≤ id < Attrs, or
	// returns -1: values of all other attributes are checked and dropped
	// unread, so what one element costs in memory is bounded by Attrs
	// fields of MaxField each.
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

// Byte classes. Each table marks the bytes that end the fast loop of one
// context; everything else is copied or skipped in bulk.
var (
	stopText  [256]bool // character data: markup, reference, "]]>" check, CR
	stopCDATA [256]bool
	stopAttrQ [256]bool // attribute value in "…"
	stopAttrA [256]bool // attribute value in '…'
	nameStart [256]bool
	nameChar  [256]bool
)

func init() {
	for _, c := range "<&]\r" {
		stopText[c] = true
	}
	stopCDATA[']'], stopCDATA['\r'] = true, true
	for _, c := range "<&\r" {
		stopAttrQ[c], stopAttrA[c] = true, true
	}
	stopAttrQ['"'], stopAttrA['\''] = true, true
	for c := 0; c < 128; c++ {
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		nameStart[c] = letter || c == '_' || c == ':'
		nameChar[c] = nameStart[c] || '0' <= c && c <= '9' || c == '.' || c == '-'
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

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
		for i+8 <= len(p) {
			w := binary.LittleEndian.Uint64(p[i:])
			if ((w-lo)|w)&hi != 0 {
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

func isChar(r int64) bool {
	return r == 0x9 || r == 0xA || r == 0xD || 0x20 <= r && r <= 0xD7FF ||
		0xE000 <= r && r <= 0xFFFD || 0x10000 <= r && r <= 0x10FFFF
}

// errEOF is fill's answer when the input ends before the bytes asked for.
var errEOF = errors.New("unexpected end of file")

// Scanner reads one document and drives a Handler.
type Scanner struct {
	r     io.Reader
	buf   []byte
	pos   int // next byte to consume
	vend  int // buf[pos:vend] is validated
	end   int // buf[vend:end] is read, not yet validated
	eof   bool
	ascii bool // declared US-ASCII

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
	anames   []byte  // attribute names of the element being read
	aoffs    []int32 // start of each name in anames
	aseen    map[string]struct{}
	scratch  []byte
}

func New(r io.Reader, h Handler, c Config) *Scanner {
	return &Scanner{
		r:        r,
		buf:      make([]byte, bufSize),
		sum:      sha256.New(),
		maxBytes: c.MaxBytes,
		h:        h,
		attrOf:   c.Attr,
		attrs:    NewAttrs(c.Attrs, c.MaxField),
	}
}

// SHA256 is the digest of every byte read, in hex.
func (s *Scanner) SHA256() string { return hex.EncodeToString(s.sum.Sum(nil)) }

// Bytes is how many bytes were read.
func (s *Scanner) Bytes() int64 { return s.n }

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
		if s.pos > 0 {
			s.lines += bytes.Count(s.buf[s.lineFrom:s.pos], []byte{'\n'})
			s.end = copy(s.buf, s.buf[s.pos:s.end])
			s.vend -= s.pos
			s.pos, s.lineFrom = 0, 0
		}
		n, err := s.r.Read(s.buf[s.end:])
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
		for s.pos < s.vend {
			if !isSpace(s.buf[s.pos]) {
				return seen, nil
			}
			s.pos++
			seen = true
		}
		if err := s.fill(1); err != nil {
			return seen, err
		}
	}
}

// Run reads the whole document.
func (s *Scanner) Run() (err error) {
	defer func() {
		if err == errEOF {
			err = s.eofIn(err, "")
		}
	}()
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

func (s *Scanner) notXML() error {
	s.fill(24) // the same snippet whatever the reader's chunking; errors come later
	p := s.buf[s.pos:min(s.vend, s.pos+24)]
	if i := bytes.IndexAny(p, "\r\n"); i >= 0 {
		p = p[:i]
	}
	return s.errorf(s.pos, "not an XML document (it begins with %q)", p).
		WithHint("the file is not a JUnit XML report: check the reporter flags and the report path")
}

func (s *Scanner) top() string {
	return string(s.stack[s.offs[len(s.offs)-1]:])
}

// prolog reads the byte-order mark and the XML declaration.
func (s *Scanner) prolog() error {
	switch err := s.fill(1); {
	case err == errEOF:
		return nil // run names the empty file
	case err != nil:
		// Neither byte starts a UTF-8 sequence; both start a UTF-16 BOM.
		if c := s.buf[0]; s.end > 0 && (c == 0xFE || c == 0xFF) {
			return s.errorf(0, "the report begins with byte 0x%02X, as UTF-16 does: runmill reads JUnit reports as UTF-8 only", c).
				WithHint("configure the reporter to write UTF-8")
		}
		return err
	}
	bom := false
	if ok, err := s.has("\xEF\xBB\xBF"); err != nil {
		return err
	} else if ok {
		s.pos += 3
		bom = true
	}
	if ok, err := s.has("<?xml"); err != nil || !ok {
		return err
	}
	if err := s.fill(6); err != nil {
		return s.eofIn(err, "in the XML declaration")
	}
	if !isSpace(s.buf[s.pos+5]) {
		return nil // a processing instruction such as <?xml-stylesheet?>
	}
	decl := s.scratch[:0]
	for {
		if err := s.fill(1); err != nil {
			return s.eofIn(err, "in the XML declaration")
		}
		c := s.buf[s.pos]
		s.pos++
		decl = append(decl, c)
		if c == '>' && len(decl) >= 2 && decl[len(decl)-2] == '?' {
			break
		}
		if len(decl) > maxDecl {
			return s.errorf(s.pos, "XML declaration longer than %d bytes", maxDecl)
		}
	}
	s.scratch = decl
	enc, err := parseDecl(decl)
	if err != nil {
		return s.errorf(s.pos, "%v", err)
	}
	switch {
	case enc == "" || equalFold(enc, "UTF-8"):
	case equalFold(enc, "US-ASCII") || equalFold(enc, "ASCII"):
		if bom {
			return s.errorf(s.pos, "a UTF-8 byte-order mark and an XML declaration that says %s", enc)
		}
		s.ascii = true
		if _, bad := validate(s.buf[s.pos:s.vend], true, true); bad >= 0 {
			s.vend = s.pos + bad
			s.pending = s.badChar(s.vend)
		}
	default:
		return s.errorf(s.pos, "the XML declaration says encoding=%q: runmill reads JUnit reports as UTF-8 only", enc).
			WithHint("configure the reporter to write UTF-8 (and declare encoding=\"UTF-8\" or nothing)")
	}
	return nil
}

func equalFold(a, b string) bool { return bytes.EqualFold([]byte(a), []byte(b)) }

// parseDecl checks an XML declaration ("<?xml … ?>") against XML § 2.8 with
// version 1.0 only, and returns the declared encoding ("" when absent).
func parseDecl(d []byte) (string, error) {
	p := d[len("<?xml") : len(d)-len("?>")]
	var names, values []string
	for {
		i := 0
		for i < len(p) && isSpace(p[i]) {
			i++
		}
		if i == len(p) {
			break
		}
		if i == 0 {
			return "", fmt.Errorf("malformed XML declaration %q", d)
		}
		p = p[i:]
		j := 0
		for j < len(p) && 'a' <= p[j] && p[j] <= 'z' {
			j++
		}
		name := string(p[:j])
		p = p[j:]
		k := 0
		for k < len(p) && isSpace(p[k]) {
			k++
		}
		if k == len(p) || p[k] != '=' {
			return "", fmt.Errorf("malformed XML declaration %q", d)
		}
		k++
		for k < len(p) && isSpace(p[k]) {
			k++
		}
		if k == len(p) || p[k] != '"' && p[k] != '\'' {
			return "", fmt.Errorf("malformed XML declaration %q", d)
		}
		q := p[k]
		p = p[k+1:]
		e := bytes.IndexByte(p, q)
		if e < 0 {
			return "", fmt.Errorf("malformed XML declaration %q", d)
		}
		names, values = append(names, name), append(values, string(p[:e]))
		p = p[e+1:]
	}
	n := 0
	if n >= len(names) || names[n] != "version" {
		return "", fmt.Errorf("the XML declaration %q has no version", d)
	}
	if values[n] != "1.0" {
		return "", fmt.Errorf("XML version %q is not supported (only 1.0)", values[n])
	}
	n++
	enc := ""
	if n < len(names) && names[n] == "encoding" {
		enc = values[n]
		if !encName(enc) {
			return "", fmt.Errorf("malformed encoding name %q in the XML declaration", enc)
		}
		n++
	}
	if n < len(names) && names[n] == "standalone" {
		if values[n] != "yes" && values[n] != "no" {
			return "", fmt.Errorf("standalone=%q in the XML declaration (only yes or no)", values[n])
		}
		n++
	}
	if n < len(names) {
		return "", fmt.Errorf("unexpected %q in the XML declaration", names[n])
	}
	return enc, nil
}

func encName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '.' || c == '_' || c == '-')) {
			return false
		}
	}
	return true
}

// name reads an XML name into dst. Names are ASCII in the subset; element and
// attribute names (qualified) have at most one colon, as encoding/xml
// requires of them.
func (s *Scanner) name(dst []byte, what string, qualified bool) ([]byte, error) {
	dst = dst[:0]
	c, err := s.peek()
	if err != nil {
		return dst, s.eofIn(err, "in a name")
	}
	if !nameStart[c] {
		if c >= 0x80 {
			return dst, s.errorf(s.pos, "non-ASCII %s name: runmill's XML subset accepts ASCII names only", what)
		}
		return dst, s.errorf(s.pos, "expected %s name, found %q", what, c)
	}
	colons := 0
	for {
		buf := s.buf[s.pos:s.vend]
		i := 0
		for i < len(buf) && nameChar[buf[i]] {
			if buf[i] == ':' {
				colons++
			}
			i++
		}
		dst = append(dst, buf[:i]...)
		s.pos += i
		if len(dst) > MaxName {
			return dst, rmerr.New(rmerr.ReportLimit, "line %d: %s name longer than %d bytes (cap: XML name length)", s.line(s.pos), what, MaxName).
				WithHint("the report is not a plausible JUnit file; check the reporter")
		}
		if i < len(buf) {
			if buf[i] >= 0x80 {
				return dst, s.errorf(s.pos, "non-ASCII %s name: runmill's XML subset accepts ASCII names only", what)
			}
			break
		}
		if err := s.fill(1); err != nil {
			return dst, s.eofIn(err, "in a name")
		}
	}
	if qualified && colons > 1 {
		return dst, s.errorf(s.pos, "%s name %q has more than one colon", what, dst)
	}
	return dst, nil
}

// until hands the run of bytes before the next stop byte to sink (when it
// has one), refilling the buffer as needed, and returns that stop byte
// without consuming it. It is the one inner loop of text, CDATA and
// attribute values.
func (s *Scanner) until(stop *[256]bool, sink *Field) (byte, error) {
	for {
		buf := s.buf[s.pos:s.vend]
		i := 0
		for i < len(buf) && !stop[buf[i]] {
			i++
		}
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
		c, err := s.until(&stopText, sink)
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
func (s *Scanner) cr(sink *Field) {
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
func (s *Scanner) reference(sink *Field) error {
	if err := s.fill(2); err != nil {
		return s.eofIn(err, "in a reference")
	}
	if s.buf[s.pos+1] == '#' {
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

// bang reads "<!--", "<![CDATA[" or refuses a markup declaration.
func (s *Scanner) bang() error {
	if ok, err := s.has("<!--"); err != nil {
		return s.eofIn(err, "in markup")
	} else if ok {
		s.pos += 4
		return s.comment()
	}
	if ok, err := s.has("<![CDATA["); err != nil {
		return s.eofIn(err, "in markup")
	} else if ok {
		if len(s.offs) == 0 {
			return s.errorf(s.pos, "CDATA section outside the root element")
		}
		s.pos += 9
		return s.cdata()
	}
	s.fill(10)
	p := s.buf[s.pos:min(s.vend, s.pos+10)]
	if i := bytes.IndexAny(p, " \t\r\n[>"); i > 0 {
		p = p[:i]
	}
	return s.errorf(s.pos, "markup declaration %q refused: runmill accepts no DTD, DOCTYPE or ENTITY declarations and never expands or fetches entities", p).
		WithHint("configure the reporter not to write a DOCTYPE; a JUnit report needs none")
}

func (s *Scanner) comment() error {
	for {
		buf := s.buf[s.pos:s.vend]
		i := bytes.Index(buf, []byte("--"))
		if i < 0 {
			// Keep a trailing '-': it may start "--" with the next read.
			s.pos += len(buf)
			if len(buf) > 0 && buf[len(buf)-1] == '-' {
				s.pos--
			}
			if err := s.fill(2); err != nil {
				return s.eofIn(err, "in a comment")
			}
			continue
		}
		s.pos += i
		if ok, err := s.has("-->"); err != nil {
			return s.eofIn(err, "in a comment")
		} else if !ok {
			return s.errorf(s.pos, "\"--\" inside a comment")
		}
		s.pos += 3
		return nil
	}
}

func (s *Scanner) cdata() error {
	sink := s.h.Sink()
	for {
		c, err := s.until(&stopCDATA, sink)
		if err != nil {
			return s.eofIn(err, "in a CDATA section")
		}
		if c == '\r' {
			s.cr(sink)
			continue
		}
		if ok, err := s.has("]]>"); err != nil {
			return s.eofIn(err, "in a CDATA section")
		} else if ok {
			s.pos += 3
			return nil
		}
		s.pos++
		if sink != nil {
			sink.Write(oneByte(']'))
		}
	}
}

// pi reads a processing instruction. Its content means nothing to a JUnit
// report; a second XML declaration is refused.
func (s *Scanner) pi() error {
	s.pos += 2
	target, err := s.name(s.elem, "processing instruction", false)
	s.elem = target
	if err != nil {
		return err
	}
	if equalFold(string(target), "xml") {
		return s.errorf(s.pos, "misplaced or malformed XML declaration <?%s: one may come only first in the file, as <?xml version=\"1.0\" …?>", target)
	}
	if ok, err := s.has("?>"); err != nil {
		return s.eofIn(err, "in a processing instruction")
	} else if !ok {
		if c, _ := s.peek(); !isSpace(c) {
			return s.errorf(s.pos, "expected whitespace after the processing instruction target")
		}
	}
	for {
		i := bytes.IndexByte(s.buf[s.pos:s.vend], '?')
		if i < 0 {
			s.pos = s.vend
			if err := s.fill(1); err != nil {
				return s.eofIn(err, "in a processing instruction")
			}
			continue
		}
		s.pos += i
		if ok, err := s.has("?>"); err != nil {
			return s.eofIn(err, "in a processing instruction")
		} else if ok {
			s.pos += 2
			return nil
		}
		s.pos++
	}
}

func (s *Scanner) startTag() error {
	s.pos++
	var err error
	if s.elem, err = s.name(s.elem, "element", true); err != nil {
		return err
	}
	for i := range s.attrs.F {
		s.attrs.F[i].Reset()
	}
	s.anames, s.aoffs = s.anames[:0], s.aoffs[:0]
	empty := false
	for {
		ws, err := s.space()
		if err != nil {
			return s.eofIn(err, "in the start tag <"+string(s.elem)+">")
		}
		c := s.buf[s.pos]
		if c == '>' {
			s.pos++
			break
		}
		if c == '/' {
			if ok, err := s.has("/>"); err != nil {
				return s.eofIn(err, "in the start tag <"+string(s.elem)+">")
			} else if !ok {
				return s.errorf(s.pos, "expected \"/>\" in the start tag <%s>", s.elem)
			}
			s.pos += 2
			empty = true
			break
		}
		if !ws {
			return s.errorf(s.pos, "expected whitespace, \">\" or \"/>\" in the start tag <%s>", s.elem)
		}
		if err := s.attribute(); err != nil {
			return err
		}
	}
	if len(s.offs) == 0 {
		s.rootSeen = true
	}
	var parent []byte
	if len(s.offs) > 0 {
		parent = s.stack[s.offs[len(s.offs)-1]:]
	}
	if err := s.h.Start(s.elem, parent, &s.attrs); err != nil {
		return s.located(s.pos, err)
	}
	if empty {
		return s.located(s.pos, s.h.End())
	}
	s.offs = append(s.offs, int32(len(s.stack)))
	s.stack = append(s.stack, s.elem...)
	return nil
}

// located puts the line into a builder error.
func (s *Scanner) located(at int, err error) error {
	if err == nil {
		return nil
	}
	var e *rmerr.Error
	if errors.As(err, &e) {
		e.Msg = fmt.Sprintf("line %d: %s", s.line(at), e.Msg)
	}
	return err
}

func (s *Scanner) attribute() error {
	if len(s.aoffs) == MaxAttrs {
		return rmerr.New(rmerr.ReportLimit, "line %d: element <%s> has more than %d attributes (cap: attributes per element)", s.line(s.pos), s.elem, MaxAttrs).
			WithHint("the report is not a plausible JUnit file; check the reporter")
	}
	at := len(s.anames)
	name, err := s.name(s.anames[at:], "attribute", true)
	if err != nil {
		return err
	}
	s.anames = append(s.anames, name...)
	name = s.anames[at:]
	if s.dupAttr(name) {
		return s.errorf(s.pos, "attribute %q appears twice in <%s>", name, s.elem)
	}
	s.aoffs = append(s.aoffs, int32(at))
	if _, err := s.space(); err != nil {
		return s.eofIn(err, "in an attribute")
	}
	if s.buf[s.pos] != '=' {
		return s.errorf(s.pos, "expected \"=\" after attribute %q in <%s>", name, s.elem)
	}
	s.pos++
	if _, err := s.space(); err != nil {
		return s.eofIn(err, "in an attribute")
	}
	q := s.buf[s.pos]
	if q != '"' && q != '\'' {
		return s.errorf(s.pos, "attribute %q in <%s> has no quoted value", name, s.elem)
	}
	s.pos++
	var sink *Field
	if id := s.attrOf(name); id >= 0 {
		sink = &s.attrs.F[id]
		sink.Set = true
	}
	stop := &stopAttrQ
	if q == '\'' {
		stop = &stopAttrA
	}
	for {
		c, err := s.until(stop, sink)
		if err != nil {
			return s.eofIn(err, "in an attribute value")
		}
		switch c {
		case q:
			s.pos++
			return nil
		case '<':
			return s.errorf(s.pos, "\"<\" inside the value of attribute %q (write &lt;)", name)
		case '&':
			if err := s.reference(sink); err != nil {
				return err
			}
		case '\r':
			s.cr(sink)
		}
	}
}

// dupAttr reports whether name (the newest attribute name, already at the
// end of anames) was seen before in this element.
func (s *Scanner) dupAttr(name []byte) bool {
	prev := func(k int) []byte {
		end := len(s.anames) - len(name)
		if k+1 < len(s.aoffs) {
			end = int(s.aoffs[k+1])
		}
		return s.anames[s.aoffs[k]:end]
	}
	if len(s.aoffs) < 16 {
		for k := range s.aoffs {
			if bytes.Equal(prev(k), name) {
				return true
			}
		}
		return false
	}
	// Many attributes: a set keeps a hostile element from costing quadratic
	// time.
	if len(s.aoffs) == 16 {
		if s.aseen == nil {
			s.aseen = make(map[string]struct{})
		}
		clear(s.aseen)
		for k := range s.aoffs {
			s.aseen[string(prev(k))] = struct{}{}
		}
	}
	if _, ok := s.aseen[string(name)]; ok {
		return true
	}
	s.aseen[string(name)] = struct{}{}
	return false
}

func (s *Scanner) endTag() error {
	s.pos += 2
	var err error
	if s.elem, err = s.name(s.elem, "element", true); err != nil {
		return err
	}
	if _, err := s.space(); err != nil {
		return s.eofIn(err, "in the end tag </"+string(s.elem)+">")
	}
	if s.buf[s.pos] != '>' {
		return s.errorf(s.pos, "expected \">\" to close the end tag </%s>", s.elem)
	}
	s.pos++
	if len(s.offs) == 0 {
		return s.errorf(s.pos, "end tag </%s> without a start tag", s.elem)
	}
	top := s.offs[len(s.offs)-1]
	if open := s.stack[top:]; !bytes.Equal(open, s.elem) {
		return s.errorf(s.pos, "element <%s> closed by </%s>", open, s.elem)
	}
	s.stack, s.offs = s.stack[:top], s.offs[:len(s.offs)-1]
	return s.located(s.pos, s.h.End())
}
