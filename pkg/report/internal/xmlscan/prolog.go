package xmlscan

import (
	"bytes"
	"fmt"
)

func (s *Scanner) notXML() error {
	s.fill(24) // the same snippet whatever the reader's chunking; errors come later
	p := s.buf[s.pos:min(s.vend, s.pos+24)]
	if i := bytes.IndexAny(p, "\r\n"); i >= 0 {
		p = p[:i]
	}
	return s.errorf(s.pos, "not an XML document (it begins with %q)", p).
		WithHint("the file is not a JUnit XML report: check the reporter flags and the report path")
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
