package outcome

// How a phrase of the zero-test vocabulary (phrases.go) matches at one
// position: the sequence engine, and the runners' own summary lines that a
// sequence cannot say.

// partialCount vetoes a count that a qualifier makes partial: "0 tests
// failed", "0 tests were skipped", "skipped: 0 tests", "running 0 tests"
// (cargo's per-binary line, judged by its own per-unit phrase). "0 failed"
// is not zero tests, and neither is "0 tests failed".
func partialCount(v view, end int) bool {
	w, j := wordAt(v, skipGap(v, end))
	if auxiliaries[w] {
		w, _ = wordAt(v, skipGap(v, j))
	}
	if qualifiers[w] {
		return true
	}
	return qualifiers[wordBefore(v)] || wordBefore(v) == "running"
}

// cargoSummary vetoes "0 passed" inside cargo's per-binary "test result: ok.
// 0 passed; …", which its per-unit "running 0 tests" already judges.
func cargoSummary(v view, _ int) bool {
	j := v.i - 1
	for j >= v.i-8 {
		c, st := v.at(j)
		if st != ok || (c != ' ' && c != '\t') {
			break
		}
		j--
	}
	for _, suffix := range []string{"result: ok.", "result: failed."} {
		if hasSuffixAt(v, j, suffix) {
			return true
		}
	}
	return false
}

// goOKLine is `go test`'s per-package success line, "ok  \t<pkg>\t<time>",
// unless the line ends in "[no tests to run]" (a -run filter that matched
// nothing in that package).
func goOKLine(v view) (int, bool) {
	if !lineStartAt(v, v.i, false) || !hasPrefixAt(v, v.i, "ok") {
		return 0, false
	}
	j, okGap := gapAt(v, v.i+2, 1)
	if !okGap {
		return 0, false
	}
	n := 0
	for ; n < 1024; n++ {
		c, st := v.at(j + n)
		if st != ok || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			break
		}
	}
	if n == 0 {
		return 0, false
	}
	j, okGap = gapAt(v, j+n, 1)
	if !okGap {
		return 0, false
	}
	if c, st := v.at(j); st != ok || !(isDigit(c) || hasPrefixAt(v, j, "(cached)")) {
		return 0, false
	}
	for k := j; ; k++ {
		c, st := v.at(k)
		switch {
		case st == unknown:
			return 0, false // the line's end is beyond the window: undecidable, so no evidence
		case st == edge || c == '\n':
			return k, true
		case c == '[' && (hasPrefixAt(v, k, "[no tests to run]") || hasPrefixAt(v, k, "[no fuzz tests to fuzz]")):
			return 0, false
		}
	}
}

// jestAllSkipped is jest's summary line when no test executed: "Tests:
// 1 skipped, 1 total" names neither passed nor failed tests.
func jestAllSkipped(v view) (int, bool) {
	if !lineStartAt(v, v.i, false) || !hasPrefixAt(v, v.i, "tests:") {
		return 0, false
	}
	return summaryLine(v, v.i+len("tests:"), []string{"skipped", "todo"}, "total")
}

// pytestAllSkipped is pytest's closing line when every test was skipped,
// "==== 3 skipped in 0.01s ====": it names no passed, failed or erroring
// test (xpassed and xfailed tests did run, and contain those words).
func pytestAllSkipped(v view) (int, bool) {
	if !lineStartAt(v, v.i, false) || !hasPrefixAt(v, v.i, "=") {
		return 0, false
	}
	return summaryLine(v, v.i+1, []string{"skipped", "deselected"}, " in ")
}

// summaryLine reads the rest of a summary line (within the window) and
// accepts it when it names one of some, contains need, and names no test
// that executed.
func summaryLine(v view, j int, some []string, need string) (int, bool) {
	var sawSome, sawNeed bool
	for k := j; ; k++ {
		c, st := v.at(k)
		switch {
		case st == unknown:
			return 0, false
		case st == edge || c == '\n':
			return k, sawSome && sawNeed
		}
		for _, w := range []string{"passed", "failed", "error"} {
			if hasPrefixAt(v, k, w) {
				return 0, false
			}
		}
		for _, w := range some {
			sawSome = sawSome || hasPrefixAt(v, k, w)
		}
		sawNeed = sawNeed || hasPrefixAt(v, k, need)
	}
}

func (p *phrase) match(v view) (int, bool) {
	if p.custom != nil {
		return p.custom(v)
	}
	if p.lineStart && !lineStartAt(v, v.i, false) {
		return 0, false
	}
	first := p.seq[0].s[0]
	if isWord(first) {
		c, st := v.at(v.i - 1)
		if st == unknown || (st == ok && isWord(c)) {
			return 0, false
		}
		// "1.0 passed" and "1,0 tests" are numbers, not a zero count.
		if isDigit(first) && st == ok && (c == '.' || c == ',') {
			if c2, st2 := v.at(v.i - 2); st2 == unknown || (st2 == ok && isDigit(c2)) {
				return 0, false
			}
		}
	}
	j := v.i
	for _, e := range p.seq {
		var good bool
		switch e.kind {
		case lit:
			good = hasPrefixAt(v, j, e.s)
			j += len(e.s)
		case gap:
			j, good = gapAt(v, j, 1)
		case optGap:
			j, good = gapAt(v, j, 0)
		case nonzero:
			j, good = nonzeroAt(v, j)
		}
		if !good {
			return 0, false
		}
	}
	if last := p.seq[len(p.seq)-1]; !p.open && last.kind == lit && isWord(last.s[len(last.s)-1]) {
		c, st := v.at(j)
		if st == unknown || (st == ok && isWord(c)) {
			return 0, false
		}
		if isDigit(last.s[len(last.s)-1]) && st == ok && (c == '.' || c == ',') {
			if c2, st2 := v.at(j + 1); st2 != edge && (st2 != ok || isDigit(c2)) {
				return 0, false
			}
		}
	}
	if p.lineEnd && !restOfLineBlank(v, j) {
		return 0, false
	}
	if p.reject != nil && p.reject(v, j) {
		return 0, false
	}
	return j, true
}

// restOfLineBlank reports whether only spaces, tabs and a CR lie between j
// and the end of its line (or of the stream).
func restOfLineBlank(v view, j int) bool {
	for k := j; k < j+maxGap; k++ {
		c, st := v.at(k)
		switch {
		case st == edge || (st == ok && c == '\n'):
			return true
		case st == ok && (c == ' ' || c == '\t' || c == '\r'):
			continue
		}
		return false
	}
	return false
}

// numberStartsAt reports whether a number may start at j: not inside a word
// or after a decimal point ("1.5 skipped", "1,2 skipped").
func numberStartsAt(v view, j int) bool {
	c, st := v.at(j - 1)
	if st == unknown || (st == ok && isWord(c)) {
		return false
	}
	if st == ok && (c == '.' || c == ',') {
		if c2, st2 := v.at(j - 2); st2 == unknown || (st2 == ok && isDigit(c2)) {
			return false
		}
	}
	return true
}

// countAt reads "<digits> <word>" at j and returns the word and its end.
func countAt(v view, j int) (string, int, bool) {
	n := 0
	for ; n < 13; n++ {
		if c, st := v.at(j + n); st != ok || !isDigit(c) {
			break
		}
	}
	if n == 0 || n == 13 {
		return "", 0, false
	}
	k, okGap := gapAt(v, j+n, 1)
	if !okGap {
		return "", 0, false
	}
	w, end := wordAt(v, k)
	if c, st := v.at(end); w == "" || st == unknown || (st == ok && isWord(c)) {
		return "", 0, false
	}
	return w, end, true
}

// skipCount is a summary count of tests that did not execute, "1 skipped",
// "2 pending", "1 ignored", "1 todo", "1 xfailed", counted only in a test
// summary: alone on its line (mocha's "  1 pending", playwright's "  1
// skipped", bun's " 1 skip"), followed by a duration (pytest's "1 skipped in
// 0.01s"), or beside another test count on the same line (jest's "Tests: 1
// skipped, 3 passed, 4 total", cargo's "1 passed; 0 failed; 1 ignored").
func skipCount(v view) (int, bool) {
	if !numberStartsAt(v, v.i) {
		return 0, false
	}
	if c, _ := v.at(v.i); c < '1' || c > '9' {
		return 0, false
	}
	w, end, good := countAt(v, v.i)
	if !good || !skipWords[w] {
		return 0, false
	}
	switch {
	case lineStartAt(v, v.i, true) && restOfLineBlank(v, end):
		return end, true
	case durationAfter(v, end):
		return end, true
	case otherCountOnLine(v, end):
		return end, true
	}
	return 0, false
}

// durationAfter: ", in 0.12s" or " in 0.12s" follows.
func durationAfter(v view, j int) bool {
	if c, st := v.at(j); st == ok && c == ',' {
		j++
	}
	j, okGap := gapAt(v, j, 1)
	if !okGap || !hasPrefixAt(v, j, "in") {
		return false
	}
	j, okGap = gapAt(v, j+2, 1)
	c, st := v.at(j)
	return okGap && st == ok && isDigit(c)
}

// otherCountOnLine looks along the line around the count at [v.i, end) for
// another count of tests, within the view.
func otherCountOnLine(v view, end int) bool {
	start := v.i
	for {
		c, st := v.at(start - 1)
		if st != ok || c == '\n' {
			break
		}
		start--
	}
	for k := start; ; k++ {
		if k == v.i {
			k = end
		}
		c, st := v.at(k)
		if st != ok || c == '\n' {
			return false
		}
		if isDigit(c) && numberStartsAt(v, k) {
			if w, _, good := countAt(v, k); good && countWords[w] {
				return true
			}
		}
	}
}

// skippedColon is the "…, Skipped: 1" of a comma-separated count list:
// maven surefire's "Tests run: 4, Failures: 0, Errors: 0, Skipped: 1",
// dotnet's "Passed: 3, Skipped: 1, Total: 4", phpunit's "Tests: 4,
// Assertions: 4, Skipped: 1.".
func skippedColon(v view) (int, bool) {
	j := v.i - 1
	for n := 0; n < maxGap; n++ {
		if c, st := v.at(j); st != ok || (c != ' ' && c != '\t') {
			break
		}
		j--
	}
	if c, st := v.at(j); st != ok || c != ',' {
		return 0, false
	}
	k, _ := gapAt(v, v.i+len("skipped:"), 0)
	end, good := nonzeroAt(v, k)
	if !good {
		return 0, false
	}
	if c, st := v.at(end); st == unknown || (st == ok && isWord(c)) {
		return 0, false
	}
	return end, true
}

// afterDash vetoes "--- SKIP:" inside a longer run of dashes.
func afterDash(v view, _ int) bool {
	c, st := v.at(v.i - 1)
	return st == unknown || (st == ok && c == '-')
}

// tapSkipLine is a TAP test point with a SKIP or TODO directive, "ok 2 -
// needs a database # SKIP no db" or "not ok 3 - later # TODO", read as
// pkg/report's TAP parser reads it: the directive follows an unescaped "#"
// after a space, "SKIP" with any suffix, "TODO" standing alone; node-tap's
// "# time=" ends the description without a directive. Indented points are
// node:test's nested subtests, skipped as much as top-level ones.
func tapSkipLine(v view) (int, bool) {
	if !lineStartAt(v, v.i, true) {
		return 0, false
	}
	j := v.i
	if hasPrefixAt(v, j, "not") {
		k, okGap := gapAt(v, j+3, 1)
		if !okGap || !hasPrefixAt(v, k, "ok") {
			return 0, false
		}
		j = k
	} else if !hasPrefixAt(v, j, "ok") {
		return 0, false
	}
	j += 2
	if c, st := v.at(j); st == unknown || (st == ok && c != ' ' && c != '\t') {
		return 0, false
	}
	for k := j; ; k++ {
		c, st := v.at(k)
		switch {
		case st == unknown || st == edge || c == '\n':
			return 0, false
		case c == '\\':
			k++ // an escaped character is never a directive
		case c == '#':
			if p, _ := v.at(k - 1); p != ' ' && p != '\t' {
				continue
			}
			d, _ := gapAt(v, k+1, 0)
			next, stn := v.at(d + 4)
			switch {
			case hasPrefixAt(v, d, "skip"),
				hasPrefixAt(v, d, "todo") && (stn == edge || (stn == ok && (next == ' ' || next == '\t' || next == '\r' || next == '\n'))):
				return lineEndAt(v, d)
			case hasPrefixAt(v, d, "time="):
				return 0, false
			}
		}
	}
}

// lineEndAt returns the end of the line holding j, if it lies in the view.
func lineEndAt(v view, j int) (int, bool) {
	for k := j; ; k++ {
		c, st := v.at(k)
		switch {
		case st == unknown:
			return 0, false
		case st == edge || c == '\n':
			return k, true
		}
	}
}
