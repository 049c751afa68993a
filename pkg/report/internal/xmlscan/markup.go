package xmlscan

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/runmill/verify/pkg/report/internal/textcap"
	"github.com/runmill/verify/pkg/rmerr"
)

// appendName reads an XML name and appends it to dst. Names are ASCII in
// the subset; element and attribute names (qualified) have at most one
// colon, as encoding/xml requires of them.
func (s *Scanner) appendName(dst []byte, what string, qualified bool) ([]byte, error) {
	from := len(dst)
	if s.pos >= s.vend {
		if err := s.fill(1); err != nil {
			return dst, s.eofIn(err, "in a name")
		}
	}
	c := s.buf[s.pos]
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
		for i < len(buf) {
			if k := nameChar[buf[i]]; k != 1 {
				if k != nameColon {
					break
				}
				colons++
			}
			i++
		}
		dst = append(dst, buf[:i]...)
		s.pos += i
		if len(dst)-from > MaxName {
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
		return dst, s.errorf(s.pos, "%s name %q has more than one colon", what, dst[from:])
	}
	return dst, nil
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
		c, err := s.until(stopCDATA, sink)
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
	var err error
	s.elem, err = s.appendName(s.elem[:0], "processing instruction", false)
	if err != nil {
		return err
	}
	target := s.elem
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
	if s.elem, err = s.appendName(s.elem[:0], "element", true); err != nil {
		return err
	}
	s.attrs.reset()
	s.anames, s.aoffs, s.nattrs = s.anames[:0], s.aoffs[:0], 0
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
	if s.nattrs == MaxAttrs {
		return rmerr.New(rmerr.ReportLimit, "line %d: element <%s> has more than %d attributes (cap: attributes per element)", s.line(s.pos), s.elem, MaxAttrs).
			WithHint("the report is not a plausible JUnit file; check the reporter")
	}
	at := len(s.anames)
	var err error
	if s.anames, err = s.appendName(s.anames, "attribute", true); err != nil {
		return err
	}
	s.nattrs++
	name := s.anames[at:]
	// An attribute the handler reads has its field, which says whether it
	// was seen; only the names of the others are kept, to compare.
	id := s.attrOf(name)
	if id >= 0 && s.attrs.F[id].Set || id < 0 && s.dupAttr(name) {
		return s.errorf(s.pos, "attribute %q appears twice in <%s>", name, s.elem)
	}
	if id >= 0 {
		s.anames = s.anames[:at] // name stays readable until the next attribute
	} else {
		s.aoffs = append(s.aoffs, int32(at))
	}
	if s.atSpace() {
		if _, err := s.space(); err != nil {
			return s.eofIn(err, "in an attribute")
		}
	}
	if s.buf[s.pos] != '=' {
		return s.errorf(s.pos, "expected \"=\" after attribute %q in <%s>", name, s.elem)
	}
	s.pos++
	if s.atSpace() {
		if _, err := s.space(); err != nil {
			return s.eofIn(err, "in an attribute")
		}
	}
	q := s.buf[s.pos]
	if q != '"' && q != '\'' {
		return s.errorf(s.pos, "attribute %q in <%s> has no quoted value", name, s.elem)
	}
	s.pos++
	var sink *textcap.Field
	if id >= 0 {
		sink = s.attrs.set(id)
	}
	stop := stopAttrQ
	if q == '\'' {
		stop = stopAttrA
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

// dupAttr reports whether name (the newest attribute name the handler does
// not read, already at the end of anames) was seen before in this element.
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
	if s.elem, err = s.appendName(s.elem[:0], "element", true); err != nil {
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
