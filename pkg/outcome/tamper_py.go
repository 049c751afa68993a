package outcome

import (
	"path"
	"strconv"
	"strings"

	"github.com/runmill/verify/pkg/record"
)

// A Python token as the tamper rules need it: names, operators, strings
// (their text, never matched as code) and numbers, each with the line it
// starts on and the indentation of its logical line.
type pyTok struct {
	kind   byte // 'n' name, 'o' operator, 's' string, '0' number
	text   string
	line   int
	off    int  // byte offset of the token in the source
	indent int  // indentation of the logical line (-1 inside an f-string's braces)
	first  bool // the first token of a logical line
}

// pyLex splits src into tokens. Comments are dropped; a string is one
// token whatever it holds; an f-string's {…} fields are lexed as code
// (their tokens follow the string's). It never fails: what Python would
// refuse (an unterminated string) ends at the end of its line or of the
// file, and a file Python refuses never runs.
func pyLex(src []byte) []pyTok {
	l := &pyLexer{src: src, line: 1, atLine: true}
	l.run(0, len(src), false)
	return l.toks
}

type pyLexer struct {
	src    []byte
	toks   []pyTok
	line   int
	depth  int  // bracket depth: newlines inside brackets do not end a line
	atLine bool // the next token starts a logical line
	indent int
}

func isPyIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func (l *pyLexer) emit(kind byte, start, end int, line int, inField bool) {
	t := pyTok{kind: kind, text: string(l.src[start:end]), line: line, off: start, indent: l.indent}
	if inField {
		t.indent = -1
	} else if l.atLine {
		t.first = true
		l.atLine = false
	}
	l.toks = append(l.toks, t)
}

// run lexes src[i:end]; inField: inside an f-string's braces (no logical
// lines there).
func (l *pyLexer) run(i, end int, inField bool) {
	src := l.src
	lineStart := !inField
	for i < end {
		c := src[i]
		if lineStart && l.depth == 0 && !inField {
			// Measure the indentation of a new physical line.
			ind, j := 0, i
			for j < end && (src[j] == ' ' || src[j] == '\t' || src[j] == '\f') {
				if src[j] == '\t' {
					ind = ind/8*8 + 8
				} else if src[j] == ' ' {
					ind++
				}
				j++
			}
			if l.atLine {
				l.indent = ind
			}
			lineStart = false
			i = j
			continue
		}
		switch {
		case c == '\n':
			l.line++
			i++
			if l.depth == 0 && !inField {
				l.atLine = true
				lineStart = true
			}
		case c == '\\' && i+1 < end && (src[i+1] == '\n' || src[i+1] == '\r'):
			i++ // a continuation: the newline does not end the line
			if src[i] == '\r' && i+1 < end && src[i+1] == '\n' {
				i++
			}
			l.line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\\':
			i++
		case c == '#':
			for i < end && src[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			i = l.str(i, i, end, "", inField)
		case isPyIdent(c) && !(c >= '0' && c <= '9'):
			j := i
			for j < end && isPyIdent(src[j]) {
				j++
			}
			if j < end && (src[j] == '"' || src[j] == '\'') && j-i <= 3 && isStrPrefix(strings.ToLower(string(src[i:j]))) {
				i = l.str(i, j, end, strings.ToLower(string(src[i:j])), inField)
				continue
			}
			l.emit('n', i, j, l.line, inField)
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < end && src[i+1] >= '0' && src[i+1] <= '9':
			j := i + 1
			for j < end && (isPyIdent(src[j]) || src[j] == '.' || (src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E')) {
				j++
			}
			l.emit('0', i, j, l.line, inField)
			i = j
		default:
			n := 1
			for _, op := range pyOps {
				if strings.HasPrefix(string(src[i:min(end, i+3)]), op) {
					n = len(op)
					break
				}
			}
			switch c {
			case '(', '[', '{':
				l.depth++
			case ')', ']', '}':
				if l.depth > 0 {
					l.depth--
				}
			}
			l.emit('o', i, i+n, l.line, inField)
			i += n
		}
	}
}

// pyOps are the multi-byte operators, longest first; anything else is one
// byte.
var pyOps = []string{"**=", "//=", ">>=", "<<=", "...", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", ":=", "->", "**", "//", "<<", ">>"}

func isStrPrefix(p string) bool {
	switch p {
	case "r", "u", "b", "f", "t", "br", "rb", "fr", "rf", "tr", "rt":
		return true
	}
	return false
}

// str lexes a string literal whose prefix starts at start and whose quote
// is at q; it returns the offset after it.
func (l *pyLexer) str(start, q, end int, prefix string, inField bool) int {
	src := l.src
	quote := src[q]
	triple := q+2 < end && src[q+1] == quote && src[q+2] == quote
	open := 1
	if triple {
		open = 3
	}
	format := strings.ContainsAny(prefix, "ft")
	line := l.line
	i := q + open
	bodyStart := i
	bodyEnd := end
	var fields [][2]int
	for i < end {
		c := src[i]
		if c == '\\' && i+1 < end {
			if src[i+1] == '\n' {
				l.line++
			}
			i += 2
			continue
		}
		if c == '\n' {
			if !triple {
				bodyEnd = i
				break // unterminated: Python refuses the file
			}
			l.line++
		}
		if c == quote && (!triple || i+2 < end && src[i+1] == quote && src[i+2] == quote) {
			bodyEnd = i
			i += open
			break
		}
		if format && c == '{' {
			if i+1 < end && src[i+1] == '{' {
				i += 2
				continue
			}
			j := l.field(i+1, end, quote, triple)
			fields = append(fields, [2]int{i + 1, j})
			if j < end && src[j] == '}' {
				j++ // the closing brace
			}
			i = j
			continue
		}
		i++
	}
	if i >= end {
		bodyEnd = min(bodyEnd, end)
	}
	t := pyTok{kind: 's', text: string(src[bodyStart:max(bodyStart, bodyEnd)]), line: line, off: start, indent: l.indent}
	if inField {
		t.indent = -1
	} else if l.atLine {
		t.first, l.atLine = true, false
	}
	l.toks = append(l.toks, t)
	// An f-string's fields are code; their lines are counted by the
	// string's own walk, so lex them at a line counter of their own.
	saved, savedDepth := l.line, l.depth
	for _, f := range fields {
		l.line = line + strings.Count(string(src[q:f[0]]), "\n")
		l.depth = 0
		l.run(f[0], f[1], true)
	}
	l.line, l.depth = saved, savedDepth
	return i
}

// field finds the end of an f-string field starting at i: the brace that
// closes it, skipping nested brackets and strings; at the string's closing
// quote or a newline of a one-line string the field ends too.
func (l *pyLexer) field(i, end int, quote byte, triple bool) int {
	src := l.src
	depth := 0
	for i < end {
		c := src[i]
		switch {
		case c == '\\':
			i++
		case c == '\n' && !triple:
			return i
		case c == quote && (!triple || i+2 < end && src[i+1] == quote && src[i+2] == quote):
			return i
		case c == '\'' || c == '"':
			// A nested string (Python 3.12 allows the same quote too).
			j := i + 1
			for j < end && src[j] != c && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			i = j
		case c == '{' || c == '(' || c == '[':
			depth++
		case c == '}' || c == ')' || c == ']':
			if depth == 0 && c == '}' {
				return i
			}
			if depth > 0 {
				depth--
			}
		}
		i++
	}
	return end
}

// pyDef is a function definition whose body the scan is in.
type pyDef struct {
	name   string
	indent int
	// hook: this def or one it is nested in is a pytest hook;
	// modifyItems: … is pytest_collection_modifyitems.
	hook, modifyItems bool
}

// maxTamperHits bounds the facts kept per file, and maxTamperChecks the
// constructs per file whose honest forms are looked for (each look reads
// the file again); past it every construct counts, toward the alarm.
const (
	maxTamperHits   = 100
	maxTamperChecks = 256
)

// scanPython applies the Python rules to src.
func scanPython(src []byte, file string, reportPaths []string) []record.Tamper {
	toks := pyLex(src)
	var hits []record.Tamper
	hit := func(rule string, t pyTok, endTok int, reportPath string) {
		hits = append(hits, record.Tamper{File: file, Line: t.line, Rule: rule, Code: tamperCode(src[t.off:lineEnd(src, toks, endTok)]), ReportPath: reportPath})
	}
	conftest := path.Base(file) == "conftest.py"
	checks := 0
	may := func(ok func() bool) bool { // an honest form, within the budget
		checks++
		return checks <= maxTamperChecks && ok()
	}
	var defs []pyDef
	code := func(i int) string { // a code token's text, "" for a string or out of range
		if i < 0 || i >= len(toks) || toks[i].kind == 's' {
			return ""
		}
		return toks[i].text
	}
	match := matchBrackets(toks)
	head := 0 // the first token of the logical line
	for i, t := range toks {
		if t.first {
			head = i
			for len(defs) > 0 && defs[len(defs)-1].indent >= t.indent {
				defs = defs[:len(defs)-1]
			}
		}
		if len(hits) >= maxTamperHits {
			break // enough to fail the run; the rest adds nothing
		}
		if t.kind == 'n' && t.text == "def" && code(i+1) != "" {
			if code(i+1) == "pytest_pyfunc_call" {
				// The hook that calls a test function: one returning True
				// passes a test that never ran.
				hit(TamperOutcome, t, i+1, "")
			}
			d := pyDef{name: code(i + 1), indent: toks[head].indent}
			if len(defs) > 0 {
				d.hook, d.modifyItems = defs[len(defs)-1].hook, defs[len(defs)-1].modifyItems
			}
			d.hook = d.hook || strings.HasPrefix(d.name, "pytest_")
			d.modifyItems = d.modifyItems || d.name == "pytest_collection_modifyitems"
			defs = append(defs, d)
			continue
		}
		hook, modifyItems := false, false
		if len(defs) > 0 {
			hook, modifyItems = defs[len(defs)-1].hook, defs[len(defs)-1].modifyItems
		}
		inHookOrTest := hook || conftest
		switch t.kind {
		case 's':
			if p := namesReportPath(t.text, reportPaths); p != "" {
				hit(TamperReportPath, t, i, p)
			}
			continue
		case 'n':
		default:
			continue
		}
		prev, next := code(i-1), code(i+1)
		switch {
		// rep.outcome = …, rep.wasxfail = …, rep.longrepr = None
		case inHookOrTest && prev == "." && next == "=" && (t.text == "outcome" || t.text == "wasxfail" || t.text == "longrepr"):
			val := toks[i+2:]
			one := len(val) > 0 && (len(val) == 1 || val[1].first || val[1].text == ";")
			lit := ""
			if len(val) > 0 {
				lit = val[0].text
				if val[0].kind != 's' {
					lit = "\x00" + lit
				}
			}
			switch t.text {
			case "outcome":
				if one && lit == "failed" {
					continue // a harness may add failures
				}
			case "longrepr":
				if !(one && (lit == "\x00None" || lit == "")) {
					continue
				}
			}
			hit(TamperOutcome, toks[max(0, i-2)], i, "")
		case inHookOrTest && t.text == "setattr" && prev != "." && prev != "def" && next == "(":
			// setattr(rep, "outcome", …): the attribute as a string.
			for j := i + 2; j < len(toks) && j < i+64; j++ {
				if toks[j].kind == 'o' && toks[j].text == ")" {
					break
				}
				if toks[j].kind == 's' && (toks[j].text == "outcome" || toks[j].text == "wasxfail" || toks[j].text == "longrepr") {
					hit(TamperOutcome, t, i, "")
					break
				}
			}
		case hook && prev == "." && t.text == "force_result" && next == "(":
			hit(TamperOutcome, t, i, "")
		case modifyItems && t.text == "items" && prev != ".":
			switch {
			case prev == "del" && !may(func() bool { return announced(toks, i) }):
				hit(TamperDeselect, toks[i-1], i, "")
			case prev == "del":
			case next == "[":
				// items[…] = value, unless value is a new order.
				j := match[i+1]
				if code(j+1) == "=" && !may(func() bool { return reorders(toks, j+2) || announced(toks, i) }) {
					hit(TamperDeselect, t, j+1, "")
				}
			case next == "." && (code(i+2) == "remove" || code(i+2) == "pop" || code(i+2) == "clear" || code(i+2) == "__delitem__") && code(i+3) == "(" && !may(func() bool { return announced(toks, i) }):
				hit(TamperDeselect, t, i+2, "")
			}
		case t.text == "atexit" && next == "." && code(i+2) == "register":
			if !may(func() bool { return cleanupHandler(toks, i) }) {
				hit(TamperAtexit, t, i, "")
			}
		case t.text == "atexit" && prev == "from" && next == "import":
			hit(TamperAtexit, t, i, "")
		case t.text == "_exit" && prev == "." && (code(i-2) == "os" || code(i-2) == "posix" || code(i-2) == "nt"):
			if !may(func() bool { return honestExit(toks, i) }) {
				hit(TamperOSExit, toks[i-2], i, "")
			}
		case t.text == "_exit" && importsFrom(toks, head, "os", "posix", "nt"):
			hit(TamperOSExit, t, i, "")
		}
	}
	return hits
}

// lineIndent is the indentation of the logical line holding token i.
func lineIndent(toks []pyTok, i int) int {
	for ; i >= 0; i-- {
		if toks[i].first {
			return toks[i].indent
		}
	}
	return 0
}

// matchBrackets maps each opening bracket to the index of the one closing
// it (the last token when none does), in one pass.
func matchBrackets(toks []pyTok) []int {
	match := make([]int, len(toks))
	var open []int
	for j, t := range toks {
		match[j] = len(toks) - 1
		if t.kind != 'o' {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			open = append(open, j)
		case ")", "]", "}":
			if n := len(open); n > 0 {
				match[open[n-1]] = j
				open = open[:n-1]
			}
		}
	}
	return match
}

// importsFrom reports whether the logical line starting at token j is a
// "from M import …", M one of mods.
func importsFrom(toks []pyTok, j int, mods ...string) bool {
	if toks[j].kind != 'n' || toks[j].text != "from" || j+2 >= len(toks) || toks[j+2].text != "import" {
		return false
	}
	for _, m := range mods {
		if toks[j+1].text == m {
			return true
		}
	}
	return false
}

// lineEnd is the end of the source line holding token i's end.
func lineEnd(src []byte, toks []pyTok, i int) int {
	if i >= len(toks) {
		return len(src)
	}
	e := toks[i].off + len(toks[i].text)
	if e > len(src) {
		e = len(src)
	}
	for e < len(src) && src[e] != '\n' {
		e++
	}
	return e
}

// logicalStart is the index of the first token of token i's logical line.
func logicalStart(toks []pyTok, i int) int {
	for i > 0 && !toks[i].first {
		i--
	}
	return i
}

// defEnd is the index after the last token of the block whose header's
// first token is i (the next logical line indented no deeper).
func defEnd(toks []pyTok, i int) int {
	ind := toks[i].indent
	for j := i + 1; j < len(toks); j++ {
		if toks[j].first && toks[j].indent <= ind {
			return j
		}
	}
	return len(toks)
}

// enclosingDef is the index of the def token of the innermost function
// holding token i named like name (any name when name is ""), or -1.
func enclosingDef(toks []pyTok, i int, name string) int {
	ind := lineIndent(toks, i)
	for j := logicalStart(toks, i) - 1; j >= 0; j-- {
		if !toks[j].first || toks[j].indent >= ind {
			continue
		}
		ind = toks[j].indent
		d := j
		if toks[d].text == "async" && d+1 < len(toks) {
			d++
		}
		if toks[d].kind == 'n' && toks[d].text == "def" && d+1 < len(toks) && (name == "" || toks[d+1].text == name) {
			return d
		}
	}
	return -1
}

// reorders: the value at i is a new order of the items, or items
// recombined from parts (sorted(…), reversed(…), a + b): it drops nothing
// the scan can see, and a base test it drops is missing at preservation.
func reorders(toks []pyTok, i int) bool {
	if i >= len(toks) {
		return false
	}
	switch toks[i].text {
	case "sorted", "reversed":
		return true
	case "list":
		return i+2 < len(toks) && (toks[i+2].text == "reversed" || toks[i+2].text == "sorted")
	}
	// a + b + …: a concatenation of parts (partitions put in a new order).
	end := len(toks)
	for j := i; j < len(toks); j++ {
		if j > i && toks[j].first {
			end = j
			break
		}
	}
	plus := false
	for j := i; j < end; j++ {
		switch {
		case toks[j].kind == 'o' && toks[j].text == "+":
			plus = true
		case toks[j].kind == 'n' && (j-i)%2 == 0:
		default:
			return false
		}
	}
	return plus
}

// announced: the pytest_collection_modifyitems hook holding token i calls
// pytest_deselected, so pytest counts what it removes ("N deselected").
func announced(toks []pyTok, i int) bool {
	d := enclosingDef(toks, i, "pytest_collection_modifyitems")
	if d < 0 {
		return false
	}
	for j, end := d, defEnd(toks, logicalStart(toks, d)); j < end; j++ {
		if toks[j].kind == 'n' && toks[j].text == "pytest_deselected" && j+1 < len(toks) && toks[j+1].text == "(" {
			return true
		}
	}
	return false
}

// writeNames are what a handler that only cleans up does not call: a
// write, a rename over a file, an exit, a process.
var writeNames = map[string]bool{
	"open": true, "write": true, "write_text": true, "write_bytes": true, "writelines": true, "dump": true,
	"replace": true, "rename": true, "renames": true, "copy": true, "copy2": true, "copyfile": true, "copytree": true,
	"move": true, "symlink": true, "link": true, "_exit": true, "exit": true, "system": true, "Popen": true,
	"run": true, "call": true, "check_call": true, "check_output": true, "exec": true, "eval": true,
	"__import__": true, "import_module": true, "getattr": true, "setattr": true, "ElementTree": true, "parse": true,
}

// cleanupHandler: the atexit.register at token i (a call or a decorator)
// registers a function of this file whose body writes nothing, exits
// nothing and runs nothing (removing temporary files is cleanup: a
// removed report only fails the run).
func cleanupHandler(toks []pyTok, i int) bool {
	name := ""
	switch {
	case i+5 < len(toks) && toks[i+3].text == "(" && toks[i+4].kind == 'n' && toks[i+5].text == ")":
		name = toks[i+4].text
	case i > 0 && toks[i-1].text == "@":
		// @atexit.register above def NAME.
		for j := i + 3; j < len(toks) && j < i+8; j++ {
			if toks[j].kind == 'n' && toks[j].text == "def" && j+1 < len(toks) {
				name = toks[j+1].text
				break
			}
		}
	}
	if name == "" {
		return false
	}
	found := false
	for j := 0; j+1 < len(toks); j++ {
		if toks[j].kind != 'n' || toks[j].text != "def" || toks[j+1].text != name {
			continue
		}
		found = true
		for k, end := j+2, defEnd(toks, logicalStart(toks, j)); k < end; k++ {
			if toks[k].kind == 'n' && writeNames[toks[k].text] {
				return false
			}
		}
	}
	return found
}

// honestExit: the os._exit whose _exit token is at i ends a forked child
// (inside if pid == 0: / if not pid:, pid from os.fork() or pty.fork()),
// exits with a non-zero integer constant (it adds a failure), or hands on
// the status pytest gave pytest_sessionfinish (a name every assignment of
// which is exitstatus, int(exitstatus) or a constant).
func honestExit(toks []pyTok, i int) bool {
	if i+3 < len(toks) && toks[i+1].text == "(" && toks[i+3].text == ")" {
		a := toks[i+2]
		if a.kind == '0' {
			v, err := strconv.ParseInt(a.text, 0, 64)
			return err == nil && v != 0
		}
		if a.kind == 'n' && exitStatusName(toks, a.text) {
			return true
		}
	}
	return forkChild(toks, i)
}

// exitStatusName: every assignment of name in the file is pytest's exit
// status or a constant, and one is the status.
func exitStatusName(toks []pyTok, name string) bool {
	status := false
	for j := 0; j+2 < len(toks); j++ {
		if toks[j].kind != 'n' || toks[j].text != name || !toks[j].first || toks[j+1].text != "=" {
			continue
		}
		v := toks[j+2:]
		switch {
		case len(v) > 0 && v[0].text == "exitstatus" && (len(v) == 1 || v[1].first):
			status = true
		case len(v) > 3 && v[0].text == "int" && v[1].text == "(" && v[2].text == "exitstatus" && v[3].text == ")":
			status = true
		case len(v) > 0 && v[0].kind == '0' && (len(v) == 1 || v[1].first):
		default:
			return false
		}
	}
	return status
}

// forkChild: token i is inside an if block whose condition says this is
// the child of a fork.
func forkChild(toks []pyTok, i int) bool {
	ind := lineIndent(toks, i)
	for j := logicalStart(toks, i) - 1; j >= 0; j-- {
		if !toks[j].first || toks[j].indent >= ind {
			continue
		}
		ind = toks[j].indent
		if toks[j].text != "if" || j+3 >= len(toks) {
			continue
		}
		c := toks[j+1:]
		name := ""
		switch {
		case c[0].kind == 'n' && c[1].text == "==" && c[2].text == "0" && c[3].text == ":":
			name = c[0].text
		case c[0].text == "0" && c[1].text == "==" && c[2].kind == 'n' && c[3].text == ":":
			name = c[2].text
		case c[0].text == "not" && c[1].kind == 'n' && c[2].text == ":":
			name = c[1].text
		}
		if name != "" && forkedInto(toks, name) {
			return true
		}
	}
	return false
}

// forkedInto: the file assigns name from os.fork(), pty.fork() or
// os.forkpty() (name = …, name, fd = …).
func forkedInto(toks []pyTok, name string) bool {
	for j := 0; j+5 < len(toks); j++ {
		if toks[j].kind != 'n' || toks[j].text != name || !toks[j].first {
			continue
		}
		k := j + 1
		for k < len(toks) && k < j+6 && toks[k].text != "=" {
			k++
		}
		if k+4 < len(toks) && toks[k].text == "=" && toks[k+2].text == "." && (toks[k+3].text == "fork" || toks[k+3].text == "forkpty") && toks[k+4].text == "(" {
			return true
		}
	}
	return false
}
