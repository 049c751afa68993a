package harness

import "strings"

// word is one shell word as a literal reading sees it: its text with quotes
// removed, and whether the shell would rewrite it (an unquoted or
// double-quoted $, a backquote, an unquoted glob or ~), which makes it no
// literal path.
type word struct {
	text    string
	dynamic bool
}

// simple is one simple command of a command line: its words, with
// redirections and their targets left out.
type simple []word

// parseShell splits a shell command line into its simple commands, in
// order, as a literal reading sees them: `&&`, `||`, `;`, `|`, `&`,
// newlines and parentheses separate them; quotes, backslashes, comments and
// `$(…)` are honoured; a redirection and its target are dropped. It never
// fails: what it cannot read literally is a dynamic word, and the caller
// decides what an unresolvable word means.
func parseShell(s string) []simple {
	var (
		out []simple
		cur simple
		w   strings.Builder
		in  bool // a word is open
		dyn bool
		// redirect: the next word is a redirection's target, not an
		// argument.
		redirect bool
	)
	endWord := func() {
		if !in {
			return
		}
		if redirect {
			redirect = false
		} else {
			cur = append(cur, word{text: w.String(), dynamic: dyn})
		}
		w.Reset()
		in, dyn = false, false
	}
	endCommand := func() {
		endWord()
		redirect = false
		if len(cur) > 0 {
			out = append(out, cur)
		}
		cur = nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
				continue
			}
			in = true
			if i+1 < len(s) {
				i++
				w.WriteByte(s[i])
			}
		case c == '\'':
			in = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				w.WriteString(s[i+1:])
				dyn = true // unterminated: not a reading we trust
				i = len(s)
				continue
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			in = true
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				switch s[j] {
				case '\\':
					if j+1 < len(s) && strings.IndexByte("$`\"\\\n", s[j+1]) >= 0 {
						j++
					}
				case '$', '`':
					dyn = true
					if s[j] == '$' && j+1 < len(s) && s[j+1] == '(' {
						k := closeParen(s, j+1)
						w.WriteString(s[j:k])
						j = k - 1
						continue
					}
				}
				w.WriteByte(s[j])
			}
			if j >= len(s) {
				dyn = true
			}
			i = j
		case c == '$':
			in, dyn = true, true
			if i+1 < len(s) && s[i+1] == '(' {
				k := closeParen(s, i+1)
				w.WriteString(s[i:k])
				i = k - 1
				continue
			}
			w.WriteByte(c)
		case c == '`':
			in, dyn = true, true
			j := strings.IndexByte(s[i+1:], '`')
			if j < 0 {
				i = len(s)
				continue
			}
			w.WriteString(s[i : i+j+2])
			i += j + 1
		case c == '#' && !in:
			for i < len(s) && s[i] != '\n' {
				i++
			}
			i-- // the newline ends the command
		case c == ' ' || c == '\t':
			endWord()
		case c == '\n' || c == ';' || c == '(' || c == ')':
			endCommand()
		case c == '&' || c == '|':
			if c == '&' && i+1 < len(s) && s[i+1] == '>' { // &> file
				endWord()
				redirect = true
				i++
				if i+1 < len(s) && s[i+1] == '>' {
					i++
				}
				continue
			}
			if in && w.Len() > 0 && c == '&' && strings.HasSuffix(w.String(), ">") {
				// 2>&1: the rest of the redirection
				w.WriteByte(c)
				continue
			}
			endCommand()
			if i+1 < len(s) && s[i+1] == c {
				i++
			}
		case c == '>' || c == '<':
			// A redirection: a word of only digits before it is its file
			// descriptor; what follows (or &N) is its target.
			if in && !dyn && isDigits(w.String()) {
				w.Reset()
				in = false
			} else {
				endWord()
			}
			for i+1 < len(s) && (s[i+1] == '>' || s[i+1] == '<') {
				i++
			}
			if i+1 < len(s) && s[i+1] == '&' {
				i++
				for i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '-') {
					i++
				}
				continue
			}
			redirect = true
		default:
			in = true
			if c == '*' || c == '?' || c == '[' || (c == '~' && w.Len() == 0) || c == '{' {
				dyn = true
			}
			w.WriteByte(c)
		}
	}
	endCommand()
	return out
}

// closeParen returns the index just past the parenthesis matching the one
// at s[open], or len(s).
func closeParen(s string, open int) int {
	depth := 0
	for k := open; k < len(s); k++ {
		switch s[k] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return k + 1
			}
		}
	}
	return len(s)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
