package outcome

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
)

// Rules of this package (record.Finding.Rule).
const (
	RuleZeroTests = "outcome.zero-tests"
	RuleFocused   = "outcome.focused"
	// RuleIdentityFreeSkip: the output of a check without a valid report
	// says tests were skipped (spec § 4 "identity-free skip").
	RuleIdentityFreeSkip = "outcome.identity-free-skip"
)

// ZeroTestMatch says which zero-test phrase a check's output contained, and
// where.
type ZeroTestMatch struct {
	// Phrase is the canonical phrase ("collected 0 items", "0 passing").
	Phrase string `json:"phrase"`
	// Runners are the test runners known to print it (informative).
	Runners string `json:"runners,omitempty"`
	// Line is the 1-based line of the combined output where the match starts.
	Line int `json:"line"`
	// Text is the matched output with terminal escape sequences removed.
	Text string `json:"text"`
}

// Finding is the match as a reason the check did not pass (spec § 4 "Zero
// tests discovered").
func (m ZeroTestMatch) Finding() record.Finding {
	return record.Finding{
		Rule:    RuleZeroTests,
		Message: fmt.Sprintf("the output reports zero tests (%q at line %d of the combined output): a run that executed nothing did not pass", m.Text, m.Line),
		Line:    m.Line,
		Hint:    "check the test command's path filters, test directory and file patterns; remove passWithNoTests-style options",
	}
}

// SkipMatch says which identity-free skip an output contained, and where:
// a summary or a line saying that N > 0 tests were skipped, pending, todo or
// ignored, printed by a check without a valid report, so that no skipped
// test has an identity to declare or to compare.
type SkipMatch struct {
	// Phrase is the canonical phrase ("N skipped", "# skipped N", "--- SKIP:").
	Phrase string `json:"phrase"`
	// Runners are the test runners known to print it (informative).
	Runners string `json:"runners,omitempty"`
	// Line is the 1-based line of the combined output where the match starts.
	Line int `json:"line"`
	// Text is the output from the match to the end of its line (at most 128
	// bytes), with terminal escape sequences removed.
	Text string `json:"text"`
}

// Finding is the match as a reason the check did not pass (spec § 4: an
// identity-free skip is never a pass, whatever fail_on_skipped_check says).
// Its code is the one for skips that were not declared (RM-VERIFY-003):
// without a report there is nothing a declaration could name.
func (m SkipMatch) Finding() record.Finding {
	return record.Finding{
		Code:    rmerr.VerifySkipped,
		Rule:    RuleIdentityFreeSkip,
		Message: fmt.Sprintf("the output reports skipped tests (%q at line %d of the combined output) and the check has no valid report, so the skipped tests have no identity to declare or compare: a run that skipped tests it cannot name did not pass", m.Text, m.Line),
		Line:    m.Line,
		Hint:    "declare a report (junit, tap or go-json) for this check so that every skipped test has an id, then list the ids you mean to skip under declared_skips with a cause; or make the skipped tests run",
	}
}

// OutputFindings is what one pass over a check's output saw. Each field is
// nil when the output held no such phrase.
//
// The output is the authority only where no valid report exists: a report
// whose tests ran decides whether tests ran and which were skipped, and a
// phrase in the log of a passing test (a test that prints "No tests found")
// is then a note, not a failure. The scanner reports what it saw either
// way; the caller applies that rule.
type OutputFindings struct {
	// ZeroTests is the first decisive zero-test phrase (spec § 4 "Zero
	// tests discovered").
	ZeroTests *ZeroTestMatch `json:"zero_tests,omitempty"`
	// Skip is the first identity-free skip.
	Skip *SkipMatch `json:"skip,omitempty"`
}

// Findings returns the matches as reasons the check did not pass, zero
// tests first.
func (o OutputFindings) Findings() []record.Finding {
	var fs []record.Finding
	if o.ZeroTests != nil {
		fs = append(fs, o.ZeroTests.Finding())
	}
	if o.Skip != nil {
		fs = append(fs, o.Skip.Finding())
	}
	return fs
}

// OutputScanner finds zero-test phrases and identity-free skips in a check's
// combined stdout and stderr, in one pass. It is an io.Writer to tee the
// output into; memory stays bounded whatever the output size (a few times
// scanChunk), and the answer does not depend on how the output was split
// into writes: a phrase spanning two writes is found.
//
// Matching is ASCII case-insensitive with token boundaries ("10 passed" is not
// "0 passed"), tolerates runs of spaces and tabs between words, and ignores
// ANSI escape sequences (runners colour their output under CI). Count phrases
// are not matched when a qualifier makes them partial counts: "0 tests
// failed" and "skipped: 0 tests" say nothing about how many tests ran.
//
// Some runners print a per-unit phrase for each package, crate or module:
// `go test ./...` prints "[no test files]" for every package without tests,
// cargo prints "running 0 tests" for a crate's empty doc-test binary, Maven
// prints "Tests run: 0" or "No tests to run." per module. Those phrases count
// only when the output holds no evidence that some unit did run tests
// (a Go "ok  <pkg>  <time>" line without "[no tests to run]", "=== RUN",
// "running N tests", "Tests run: N", "# tests N" or "ℹ tests N" with N > 0).
//
// Skips need a count above zero ("0 skipped" is every clean summary) or a
// per-test skip line (go test -v's "--- SKIP:", a TAP point's "# SKIP" or
// "# TODO"); a bare count counts only inside a test summary (see skipCount),
// so that "2 skipped" in some tool's log is no alarm. What no phrase can
// see stays unseen: `go test` without -v prints nothing for a skipped test.
//
// The scanner is safe for concurrent use, so stdout and stderr may share it;
// writes are then interleaved at write granularity.
type OutputScanner struct {
	mu      sync.Mutex
	esc     escState
	scratch []byte
	buf     []byte // retained output, starting at absolute offset base
	base    int64
	next    int64 // next absolute position to decide
	line    int   // line of position next
	closed  bool
	strong  *ZeroTestMatch
	weak    *ZeroTestMatch
	evident bool // some unit of a per-unit runner ran tests
	skip    *SkipMatch
}

const (
	// lookahead is the longest extent any matcher reads from its start;
	// lookbehind the longest it reads before it (a skip count looks back
	// along its summary line for another count). Both bound memory and
	// make the result independent of write boundaries.
	lookahead  = 2048
	lookbehind = 192
	scanChunk  = 64 << 10
)

// The scanner is teed into from the sandbox's output capture.
var _ io.Writer = (*OutputScanner)(nil)

// NewOutputScanner returns a scanner at the start of an output stream.
func NewOutputScanner() *OutputScanner {
	return &OutputScanner{line: 1}
}

var errClosed = errors.New("output scanner: write after Result")

// Write scans p. It never fails before Result is called.
func (s *OutputScanner) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errClosed
	}
	n := len(p)
	for len(p) > 0 && !s.done() {
		k := min(len(p), scanChunk)
		s.scratch = s.esc.filter(s.scratch[:0], p[:k])
		p = p[k:]
		s.buf = append(s.buf, s.scratch...)
		s.scan(false)
	}
	return n, nil
}

// done: nothing later in the stream can change the result.
func (s *OutputScanner) done() bool { return s.strong != nil && s.skip != nil }

// Result ends the stream and returns what it saw: the first decisive
// zero-test phrase (the earliest phrase that always means zero tests, or
// else the earliest per-unit phrase when no unit ran tests) and the first
// identity-free skip. Later writes fail; Result may be called again.
func (s *OutputScanner) Result() OutputFindings {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		if !s.done() {
			s.scan(true)
		}
		s.buf, s.scratch = nil, nil
	}
	var o OutputFindings
	switch {
	case s.strong != nil:
		m := *s.strong
		o.ZeroTests = &m
	case s.weak != nil && !s.evident:
		m := *s.weak
		o.ZeroTests = &m
	}
	if s.skip != nil {
		m := *s.skip
		o.Skip = &m
	}
	return o
}

// ScanOutput reads r to its end and returns what an OutputScanner fed with
// the same bytes would.
func ScanOutput(r io.Reader) (OutputFindings, error) {
	s := NewOutputScanner()
	if _, err := io.CopyBuffer(s, r, make([]byte, scanChunk)); err != nil {
		return OutputFindings{}, fmt.Errorf("reading check output: %w", err)
	}
	return s.Result(), nil
}

// scan decides every position that has its full lookahead (or all of them at
// the end of the stream), then drops what no later decision can read.
func (s *OutputScanner) scan(eof bool) {
	end := s.base + int64(len(s.buf))
	for s.next < end && (eof || end-s.next >= lookahead) && !s.done() {
		i := int(s.next - s.base)
		b := s.buf[i]
		// Every phrase is at least two bytes long, so the last byte of the
		// stream starts none.
		if i+1 < len(s.buf) && pairs[int(b)<<8|int(s.buf[i+1])] {
			s.try(startIndex[b], i)
		}
		if b == '\n' {
			s.line++
		}
		s.next++
	}
	// Compacting only every scanChunk bytes keeps tiny writes cheap; memory
	// stays below lookbehind + lookahead + 2*scanChunk.
	if drop := int(s.next-s.base) - lookbehind; drop >= scanChunk || (eof && drop > 0) {
		s.buf = append(s.buf[:0], s.buf[drop:]...)
		s.base += int64(drop)
	}
}

func (s *OutputScanner) try(cands []*phrase, i int) {
	v := view{b: s.buf, start: s.base == 0, i: i, lim: min(len(s.buf), i+lookahead)}
	for _, p := range cands {
		switch {
		case p.kind == evidence && s.evident,
			p.kind == perUnit && s.weak != nil,
			p.kind == always && s.strong != nil,
			p.kind == skip && s.skip != nil:
			continue
		}
		if !hasPrefixAt(v, i, p.prefix) {
			continue
		}
		end, ok := p.match(v)
		if !ok {
			continue
		}
		switch p.kind {
		case evidence:
			s.evident = true
		case always:
			s.strong = &ZeroTestMatch{Phrase: p.name, Runners: p.runners, Line: s.line, Text: s.text(i, end)}
		case perUnit:
			s.weak = &ZeroTestMatch{Phrase: p.name, Runners: p.runners, Line: s.line, Text: s.text(i, end)}
		case skip:
			// The rest of the line names the skipped test or the rest of
			// the summary; both help whoever reads the finding.
			eol := i
			for eol < v.lim && eol < i+maxQuoted && s.buf[eol] != '\n' {
				eol++
			}
			text := strings.TrimRight(s.text(i, max(eol, end)), " \t\r")
			s.skip = &SkipMatch{Phrase: p.name, Runners: p.runners, Line: s.line, Text: text}
		}
	}
}

// maxQuoted bounds the output a match quotes.
const maxQuoted = 128

func (s *OutputScanner) text(i, end int) string {
	return strings.ToValidUTF8(string(s.buf[i:min(end, i+maxQuoted)]), "\uFFFD")
}

// escState removes ANSI escape sequences (CSI "ESC [ … final" and two-byte
// "ESC x") as a byte-at-a-time state machine, so that it is itself
// independent of write boundaries. A colour code between "0" and "passing"
// must not hide the phrase, nor one before "0" fake a word boundary.
type escState struct {
	state uint8 // 0 text, 1 after ESC, 2 inside CSI
	n     int   // bytes of the current CSI, capped
}

func (e *escState) filter(dst, src []byte) []byte {
	for _, c := range src {
		switch e.state {
		case 0:
			if c == 0x1b {
				e.state = 1
				continue
			}
			dst = append(dst, c)
		case 1:
			switch c {
			case '[':
				e.state, e.n = 2, 0
			case '\n':
				dst = append(dst, c)
				e.state = 0
			default:
				e.state = 0
			}
		case 2:
			e.n++
			// Final byte, or a runaway sequence: back to text either way.
			if (c >= 0x40 && c <= 0x7e) || e.n > 32 {
				e.state = 0
			}
			if c == '\n' {
				dst = append(dst, c)
				e.state = 0
			}
		}
	}
	return dst
}
