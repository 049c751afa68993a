package outcome

// The window of retained output a phrase is matched in, and its byte and
// word primitives (ASCII case-insensitive).

// view is the retained output around one position i. Reads are confined to
// [i-lookbehind, i+lookahead) so that a decision never depends on how much
// happened to be buffered; outside that window a byte is unknown, and before
// the first or after the last byte of the stream it is an edge.
type view struct {
	b     []byte
	start bool // b[0] is the first byte of the stream
	i     int
	lim   int // min(len(b), i+lookahead)
}

const (
	ok = iota
	edge
	unknown
)

func (v view) at(j int) (byte, int) {
	switch {
	case j < v.i-lookbehind:
		return 0, unknown
	case j < 0:
		if v.start {
			return 0, edge
		}
		return 0, unknown
	case j < v.lim:
		return v.b[j], ok
	case v.lim < v.i+lookahead:
		return 0, edge // only at the end of the stream
	}
	return 0, unknown
}

func hasPrefixAt(v view, j int, s string) bool {
	if j >= 0 && j >= v.i-lookbehind && j+len(s) <= v.lim {
		// Fast path: wholly inside the window.
		for k, c := range v.b[j : j+len(s)] {
			if lower(c) != s[k] {
				return false
			}
		}
		return true
	}
	for k := 0; k < len(s); k++ {
		c, st := v.at(j + k)
		if st != ok || lower(c) != s[k] {
			return false
		}
	}
	return true
}

// hasSuffixAt reports whether s ends at j (inclusive).
func hasSuffixAt(v view, j int, s string) bool {
	return hasPrefixAt(v, j-len(s)+1, s)
}

func gapAt(v view, j, least int) (int, bool) {
	n := 0
	for n < maxGap {
		c, st := v.at(j + n)
		if st != ok || (c != ' ' && c != '\t') {
			break
		}
		n++
	}
	if c, st := v.at(j + n); n == maxGap && st == ok && (c == ' ' || c == '\t') {
		return 0, false
	}
	return j + n, n >= least
}

// skipGap skips spaces and tabs.
func skipGap(v view, j int) int {
	j, _ = gapAt(v, j, 0)
	return j
}

func nonzeroAt(v view, j int) (int, bool) {
	c, st := v.at(j)
	if st != ok || c < '1' || c > '9' {
		return 0, false
	}
	n := 1
	for ; n < 12; n++ {
		if c, st := v.at(j + n); st != ok || !isDigit(c) {
			break
		}
	}
	return j + n, true
}

// wordAt returns the lower-case ASCII letters starting at j (at most 16).
func wordAt(v view, j int) (string, int) {
	var w []byte
	for len(w) < 16 {
		c, st := v.at(j)
		if st != ok || !isLetter(c) {
			break
		}
		w = append(w, lower(c))
		j++
	}
	return string(w), j
}

// wordBefore returns the word before position i, skipping spaces, tabs, ':'
// and '=' ("Skipped: 0 tests", "failed=0 tests").
func wordBefore(v view) string {
	j := v.i - 1
	for n := 0; n < 8; n++ {
		c, st := v.at(j)
		if st != ok || (c != ' ' && c != '\t' && c != ':' && c != '=') {
			break
		}
		j--
	}
	var w []byte
	for len(w) < 16 {
		c, st := v.at(j)
		if st != ok || !isLetter(c) {
			break
		}
		w = append(w, lower(c))
		j--
	}
	for a, b := 0, len(w)-1; a < b; a, b = a+1, b-1 {
		w[a], w[b] = w[b], w[a]
	}
	return string(w)
}

// lineStartAt reports whether j starts a line, optionally after spaces/tabs.
func lineStartAt(v view, j int, indent bool) bool {
	for k := j - 1; ; k-- {
		c, st := v.at(k)
		switch {
		case st == edge || (st == ok && c == '\n'):
			return true
		case st == ok && indent && (c == ' ' || c == '\t'):
			continue
		}
		return false
	}
}

func set(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWord(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' }

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}
