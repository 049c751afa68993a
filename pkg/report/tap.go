package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/runmill/verify/pkg/report/internal/quote"
	"github.com/runmill/verify/pkg/report/internal/textcap"
	"github.com/runmill/verify/pkg/rmerr"
)

// TAP (Test Anything Protocol, versions 12 to 14) as spec § 4 reads it:
//
//   - The id is the non-empty description after ok / not ok and the optional
//     test number, with a leading "- " removed and \# \\ unescaped. The
//     description ends at the first unescaped "#" (after whitespace) that
//     starts a SKIP or TODO directive or a node-tap "# time=" comment; any
//     other "#" text stays part of the description, as tape prints test names
//     unescaped.
//   - One flat plan (1..N), at the start or the end, never in the middle,
//     never twice, equal to the number of test points: a missing test is not a
//     pass. 1..0 is a report of zero tests (RM-REPORT-005).
//   - Subtests (4-space indented streams, node:test "# Subtest:", buffered
//     "{ }" blocks) are rejected by default (RM-REPORT-002). Declared
//     report.identity: suite-path accepts them; every test point, parents
//     included, is then an id made of its ancestors' descriptions joined by
//     " > ", and every child stream needs its own matching plan.
//   - "# SKIP…" (any suffix: SKIPPED, skipping:) and "# TODO" (followed by a
//     space or the end) both count as skipped, whatever ok / not ok says.
//   - "Bail out!" stops the stream: the tests reported before it are kept,
//     the report gains a Fault (so it never describes a pass), and the plan is
//     not checked because the producer said it would not finish. Tests inside
//     subtests left open by the bail-out have no complete id and are dropped
//     with a note.
//   - A line that looks like a test point or plan but is indented by other
//     than a multiple of 4 spaces is an error, not noise: ignoring it could
//     hide a "not ok". Other non-TAP lines are ignored and noted (errors under
//     "pragma +strict").
//   - YAML diagnostics (---/...) give failed and skipped tests a message and
//     any test a file and line, when they carry message/error, file/line,
//     at: or location:.
func parseTAP(r io.Reader, opts Options) (*Inventory, error) {
	p := &tapParser{
		allowDup: opts.AllowDuplicateIDs,
		lim:      opts.Limits,
		suite:    opts.Identity == IdentitySuitePath,
		root:     opts.Root,
		lr:       newLineReader(r, opts.Limits),
		keep:     newTextKeeper(opts.Limits),
	}
	p.stack = []*tapBlock{{ordered: true}}
	p.diag.Max = opts.Limits.MaxField
	inv, err := p.run()
	if err != nil {
		return nil, err
	}
	inv.Format = TAP
	inv.Identity = opts.Identity
	return inv, nil
}

type tapParser struct {
	allowDup bool
	lim      Limits
	suite    bool
	root     string // Options.Root
	lr       *lineReader
	keep     *textKeeper

	stack  []*tapBlock // stack[0] is the top-level stream
	orphan *tapBlock   // a closed child stream waiting for its parent's test point
	yaml   *tapYAML    // an open YAML diagnostic block

	last tapRef // the last test point, for YAML and a lone "{"
	// diag collects the diagnostic lines after a failed point without YAML:
	// "# …" comments (Perl's Test::More diag) and lines indented past the
	// point (Mocha's TAP reporter). They become its message.
	diag       textcap.Field
	diagOpen   bool
	afterPoint bool // the previous line was a test point (YAML may start)
	braceOK    bool // a lone "{" would open a buffered child of last

	strict     bool
	sawTAP     bool // a version line, plan or test point was seen
	points     int  // every test point, nested ones included
	bailed     bool
	faults     []Fault
	notes      []string
	nonTAP     int
	nonTAPLine int
	badYAML    int

	nested       int // test points inside subtests
	nestLine     int // first line that made the stream nested
	nestID       string
	nestIDLine   int
	emptyDesc    int
	emptyLine    int
	outOfOrder   int // line where numbering first left sequence
	dropped      int // tests inside subtests left open by a bail-out
	planSkipNote string

	// header is the description of a top-level node:test "# Subtest:"
	// header not yet followed by a structural line; loadedAt maps the
	// index in the top-level stream's tests of each node:test entry for a
	// loaded file that defined no test to the file (nodetest.go).
	header   string
	loadedAt map[int]string
}

// tapBlock is one TAP stream: the top level or one subtest.
type tapBlock struct {
	depth      int
	buffered   bool   // opened by "{", closed by "}"
	parentDesc string // buffered: the description of the point that opened it
	openLine   int
	started    bool // a plan or test point was seen
	plan       int64
	planLine   int  // 0: no plan yet
	planAfter  bool // the plan came after test points, so no point may follow it
	points     int64
	next       int64         // the number the next unnumbered point gets
	ordered    bool          // every point so far carried the number of its position
	nums       map[int64]int // test number → line, once numbering left sequence
	tests      []Test        // finished tests of this stream and its children; ids relative to it
}

type tapRef struct {
	block  *tapBlock
	idx    int // of the point's test in block.tests
	indent int
	desc   string
}

var errTAPStop = errors.New("bail out")

func (p *tapParser) run() (*Inventory, error) {
	for {
		line, ok := p.lr.next()
		if !ok {
			break
		}
		err := p.handle(line)
		if err == errTAPStop {
			break
		}
		if err != nil {
			return nil, p.preferNesting(err)
		}
	}
	if err := p.lr.finish(); err != nil {
		return nil, p.preferNesting(err)
	}
	inv := &Inventory{}
	p.lr.fill(inv)
	if err := p.end(inv); err != nil {
		return nil, err
	}
	return inv, nil
}

func (p *tapParser) top() *tapBlock { return p.stack[len(p.stack)-1] }

func tapMalformed(line int, format string, args ...any) *rmerr.Error {
	e := rmerr.New(rmerr.ReportMalformed, "TAP line %d: %s", line, fmt.Sprintf(format, args...))
	e.Line = line
	return e
}

func (p *tapParser) handle(raw []byte) error {
	n := p.lr.line
	if p.yaml != nil {
		if p.yaml.feed(raw) {
			if p.yaml.done {
				err := p.applyYAML()
				p.yaml = nil
				p.braceOK = true
				return err
			}
			return nil
		}
		// A shallower line before "...": the block was never terminated.
		if err := p.unterminatedYAML(); err != nil {
			return err
		}
	}
	afterPoint, braceOK := p.afterPoint, p.braceOK
	p.afterPoint, p.braceOK = false, false

	indent, clean := tapIndent(raw)
	content := raw[indent:]
	trimmed := bytes.TrimRight(content, " \t")
	if len(trimmed) == 0 {
		return nil
	}

	switch kind := classifyTAP(trimmed); kind {
	case tapLineComment:
		if h, ok := bytes.CutPrefix(trimmed, []byte("# Subtest: ")); ok && indent == 0 && len(h) <= p.lim.MaxField {
			p.header = string(unescapeTAP(h))
		}
		if p.diagOpen {
			if text, ok := tapDiagComment(trimmed); ok {
				p.diag.Write(append(text, '\n'))
				return nil
			}
			return p.closeDiag()
		}
		return nil
	case tapLinePragma:
		switch string(trimmed) {
		case "pragma +strict":
			p.strict = true
		case "pragma -strict":
			p.strict = false
		}
		return nil
	case tapLineOther:
		return p.other(trimmed, indent, clean, afterPoint, braceOK, n)
	default:
		return p.structural(kind, raw, trimmed, indent, clean, n)
	}
}

// other handles a line that is no TAP element: the start of a test point's
// YAML block, a buffered subtest's braces, diagnostic text, or non-TAP
// output (refused under pragma +strict).
func (p *tapParser) other(trimmed []byte, indent int, clean, afterPoint, braceOK bool, n int) error {
	if afterPoint && clean && indent == p.last.indent+2 && string(trimmed) == "---" {
		p.yaml = newTAPYAML(indent, p.lim.MaxField, n)
		p.diagOpen = false // the YAML block is the diagnostic
		return nil
	}
	if braceOK && clean && indent == p.last.indent && string(trimmed) == "{" {
		return p.openBuffered(p.last.desc, n)
	}
	if clean && indent%4 == 0 && string(trimmed) == "}" && p.closesBuffered(indent/4) {
		return p.closeBuffered(indent/4, n)
	}
	if p.diagOpen {
		if indent > p.last.indent {
			p.diag.Write(append(bytes.TrimSpace(trimmed), '\n'))
		} else if err := p.closeDiag(); err != nil {
			return err
		}
	}
	p.nonTAP++
	if p.nonTAPLine == 0 {
		p.nonTAPLine = n
	}
	if p.strict {
		return tapMalformed(n, "non-TAP line %s under pragma +strict", quote.Text(trimmed))
	}
	return nil
}

// structural handles a version, plan, test point or bail-out line, each at
// the subtest depth its indentation names.
func (p *tapParser) structural(kind tapKind, raw, trimmed []byte, indent int, clean bool, n int) error {
	if err := p.closeDiag(); err != nil {
		return err
	}
	header := p.header
	p.header = ""
	if !clean || indent%4 != 0 {
		return tapMalformed(n, "%s is indented by %s; TAP indents subtests by 4 spaces, so this line cannot be placed",
			quote.Text(trimmed), tapDescribeIndent(raw[:indent]))
	}
	depth := indent / 4
	if depth >= p.lim.MaxDepth {
		return rmerr.New(rmerr.ReportLimit, "TAP line %d is nested %d subtests deep, more than %d (Limits.MaxDepth)", n, depth, p.lim.MaxDepth-1).
			WithHint("flatten the suite, or split it into several reports")
	}
	if kind == tapLineBail {
		return p.bail(trimmed, n)
	}
	if err := p.moveTo(depth, n); err != nil {
		return err
	}
	b := p.top()
	if p.orphan != nil && kind != tapLinePoint {
		return tapMalformed(n, "the subtest that ended here is not followed by its test point")
	}
	switch kind {
	case tapLineVersion:
		return p.version(b, trimmed, n)
	case tapLinePlan:
		return p.plan(b, trimmed, n)
	case tapLinePoint:
		return p.point(b, trimmed, indent, n, header)
	}
	return nil
}

// unterminatedYAML ends a YAML block that has no "...". Its text is
// ignored, unless it swallowed a line that reads as a test point, plan or
// bail-out: then the stream's shape is ambiguous and a "not ok" could hide
// in it, so the report is rejected.
func (p *tapParser) unterminatedYAML() error {
	y := p.yaml
	p.yaml = nil
	p.badYAML++
	if y.suspect > 0 {
		return tapMalformed(y.suspect, "the YAML block opened at line %d has no closing \"...\" and swallows a line that reads as TAP", y.openLine)
	}
	return nil
}

func (p *tapParser) version(b *tapBlock, s []byte, line int) error {
	if b.started {
		return tapMalformed(line, "%s after the stream started: a version line comes first (two streams concatenated?)", quote.Text(s))
	}
	v := strings.TrimSpace(string(s[len("tap version "):]))
	if v != "13" && v != "14" {
		return tapMalformed(line, "unsupported %s: runmill reads TAP 12 (no version line), 13 and 14", quote.Text(s))
	}
	p.sawTAP = true
	return nil
}

func (p *tapParser) plan(b *tapBlock, s []byte, line int) error {
	p.sawTAP = true
	if b.planLine > 0 {
		return tapMalformed(line, "a second plan %s (the first is at line %d); a stream has exactly one plan", quote.Text(s), b.planLine)
	}
	body, comment, _ := bytes.Cut(s, []byte("#"))
	body = bytes.TrimRight(body, " \t")
	from, to, ok := bytes.Cut(body, []byte(".."))
	start, err1 := strconv.ParseInt(string(from), 10, 64)
	end, err2 := strconv.ParseInt(string(to), 10, 64)
	if !ok || err1 != nil || err2 != nil || end < 0 {
		return tapMalformed(line, "invalid plan %s", quote.Text(s))
	}
	if start != 1 {
		return tapMalformed(line, "plan %s does not start at 1", quote.Text(s))
	}
	b.plan, b.planLine, b.started = end, line, true
	b.planAfter = b.points > 0
	if len(comment) > 0 && b.depth == 0 {
		reason := strings.TrimSpace(validUTF8(comment, new(int)))
		if end == 0 {
			p.planSkipNote = cutUTF8(reason, p.lim.MaxField)
		} else if hasPrefixFold([]byte(reason), "skip") {
			p.notes = append(p.notes, fmt.Sprintf("plan at line %d carries %s, ignored: only a 1..0 plan skips a whole stream", line, quote.Text([]byte(reason))))
		}
	}
	return nil
}

// point reads a test point; header is the node:test "# Subtest:" header
// right before it at the top level, if any.
func (p *tapParser) point(b *tapBlock, s []byte, indent, line int, header string) error {
	p.sawTAP = true
	pt, err := parseTAPPoint(s)
	if err != "" {
		return tapMalformed(line, "%s: %s", quote.Text(s), err)
	}
	if b.planLine > 0 && b.planAfter {
		return tapMalformed(line, "test point after the plan at line %d: a plan comes first or last, never in the middle", b.planLine)
	}
	p.points++
	if p.points > p.lim.MaxTests {
		return rmerr.New(rmerr.ReportLimit, "more than %d test points (Limits.MaxTests)", p.lim.MaxTests).
			WithHint("split the suite into several reports")
	}
	b.started = true
	b.points++
	// node:test numbers its entry for a loaded file by the file's place
	// among the files, not by the point's place in the stream: the number
	// of a point that is no test is not held to the sequence.
	loaded := b.depth == 0 && header != "" && string(pt.desc) == header && pt.ok && pt.directive == "" && !pt.brace && p.orphan == nil && nodeLoadedPath(header)
	if loaded {
		b.next = b.points
	} else if err := p.number(b, pt, line); err != nil {
		return err
	}
	if b.depth > 0 {
		p.nested++
		if p.nestID == "" && len(pt.desc) > 0 {
			p.nestID, p.nestIDLine = string(pt.desc), line
		}
	}
	if len(pt.desc) == 0 {
		p.emptyDesc++
		if p.emptyLine == 0 {
			p.emptyLine = line
		}
	}
	id, kerr := p.keep.id(pt.desc)
	if kerr != nil {
		if re, ok := kerr.(*rmerr.Error); ok && re.Line == 0 {
			re.Msg = fmt.Sprintf("TAP line %d: %s", line, re.Msg)
			re.Line = line
		}
		return kerr
	}
	t := Test{ID: id, Status: Passed}
	if !pt.ok {
		t.Status = Failed
	}
	if pt.directive != "" {
		t.Status = Skipped
		msg := pt.directive
		if len(pt.reason) > 0 {
			msg += ": " + string(pt.reason)
		}
		if t.Message, kerr = p.keep.text([]byte(msg), func() string { return fmt.Sprintf("skip reason of %s", quote.String(string(id))) }); kerr != nil {
			return kerr
		}
	}
	b.tests = append(b.tests, t)
	if loaded {
		if p.loadedAt == nil {
			p.loadedAt = map[int]string{}
		}
		p.loadedAt[len(b.tests)-1] = underRoot(p.root, header)
	}
	p.last = tapRef{block: b, idx: len(b.tests) - 1, indent: indent, desc: string(id)}
	if t.Status == Failed {
		p.diag.Reset()
		p.diagOpen = true
	}
	if p.orphan != nil {
		children := p.orphan.tests
		p.orphan = nil
		if err := p.adopt(b, string(id), children); err != nil {
			return err
		}
	}
	p.afterPoint, p.braceOK = true, true
	if pt.brace {
		return p.openBuffered(string(id), line)
	}
	return nil
}

// number applies TAP's numbering: an unnumbered point takes the next
// number. Numbers are not identities, but a repeated or out-of-plan number
// means the stream is not what its plan says.
func (p *tapParser) number(b *tapBlock, pt tapPoint, line int) error {
	num := b.next + 1
	if pt.hasNum {
		num = pt.num
	}
	b.next = num
	if b.ordered && num == b.points {
		return nil
	}
	if b.ordered {
		b.ordered = false
		if p.outOfOrder == 0 {
			p.outOfOrder = line
		}
		b.nums = make(map[int64]int, b.points)
		for i := int64(1); i < b.points; i++ {
			b.nums[i] = 0
		}
	}
	if first, dup := b.nums[num]; dup {
		where := ""
		if first > 0 {
			where = fmt.Sprintf(" (first at line %d)", first)
		}
		return tapMalformed(line, "test number %d is repeated%s", num, where)
	}
	b.nums[num] = line
	return nil
}

// checkPlan enforces one plan per stream that matches its test points.
func (p *tapParser) checkPlan(b *tapBlock, line int) error {
	what := "the stream"
	if b.depth > 0 {
		what = fmt.Sprintf("the subtest opened at line %d", b.openLine)
	}
	if b.planLine == 0 {
		return tapMalformed(line, "%s has no plan (1..N), so it cannot show it finished", what).
			WithHint("make the reporter print its plan; a stream without one may have died midway")
	}
	if b.plan != b.points {
		return tapMalformed(b.planLine, "plan 1..%d but %s has %d test point(s); a missing test is not a pass", b.plan, what, b.points).
			WithHint("the producer stopped early or printed extra points; fix the run, not the report")
	}
	if !b.ordered {
		// Report the earliest offending line, not whichever the map yields.
		var bad int64
		at, found := 0, false
		for num, line := range b.nums {
			if (num < 1 || num > b.plan) && (!found || line < at) {
				bad, at, found = num, line, true
			}
		}
		if found {
			return tapMalformed(at, "test number %d is outside the plan 1..%d", bad, b.plan)
		}
	}
	return nil
}

func (p *tapParser) bail(s []byte, line int) error {
	p.sawTAP = true // closeDiag already ran: a bail-out is a TAP line
	p.bailed = true
	reason := strings.TrimSpace(string(s[len("bail out!"):]))
	msg := "Bail out!"
	if reason != "" {
		msg += " " + reason
	}
	msg, err := p.keep.text([]byte(msg), func() string { return "Bail out! reason" })
	if err != nil {
		return err
	}
	p.faults = append(p.faults, Fault{Scope: "report", Message: fmt.Sprintf("line %d: %s", line, msg)})
	for _, b := range p.stack[1:] {
		p.dropped += len(b.tests)
	}
	if p.orphan != nil {
		p.dropped += len(p.orphan.tests)
	}
	p.stack, p.orphan = p.stack[:1], nil
	return errTAPStop
}

// closeDiag ends the diagnostic lines of the last failed point: they are
// its message unless YAML gave it one.
func (p *tapParser) closeDiag() error {
	if !p.diagOpen {
		return nil
	}
	p.diagOpen = false
	if p.diag.N == 0 {
		return nil
	}
	t := &p.last.block.tests[p.last.idx]
	if t.Message != "" {
		return nil
	}
	id := t.ID
	msg, err := p.keep.fromCap(&p.diag, true, func() string { return fmt.Sprintf("diagnostics of %s", quote.String(string(id))) })
	t.Message = msg
	return err
}

func (p *tapParser) end(inv *Inventory) error {
	if err := p.closeDiag(); err != nil {
		return err
	}
	if p.yaml != nil {
		if err := p.unterminatedYAML(); err != nil {
			return err
		}
	}
	if !p.sawTAP {
		if inv.Bytes == 0 {
			return rmerr.New(rmerr.ReportEmpty, "TAP report is empty (0 bytes): zero tests is not a pass").
				WithHint("check that the test command ran and its reporter wrote TAP to the report file")
		}
		return rmerr.New(rmerr.ReportMalformed, "not a TAP stream: no version line, plan or test point in %d bytes", inv.Bytes).
			WithHint("check the reporter flags: the file must hold TAP (ok / not ok lines and a 1..N plan)")
	}
	if p.nestLine > 0 && !p.suite {
		return p.nestingError()
	}
	root := p.stack[0]
	if err := p.endRoot(root); err != nil {
		return err
	}
	if p.emptyDesc > 0 {
		e := rmerr.New(rmerr.ReportIdentity, "TAP test point at line %d has no description; %d of %d test points lack one, and the description is the test id (spec § 4)",
			p.emptyLine, p.emptyDesc, p.points)
		e.Line = p.emptyLine
		return e.WithHint("give every test a name the reporter prints after ok / not ok")
	}
	files, err := p.takeLoaded(root)
	if err != nil {
		return err
	}
	id, n, distinct := duplicateIDs(root.tests)
	if n > 0 && !p.allowDup {
		return rmerr.New(rmerr.ReportIdentity, "test id %s occurs %d times (%d ids repeat); every id must be unique within a report (spec § 4)", quote.String(string(id)), n, distinct).
			WithHint("give repeated tests distinct names (table-driven tests: include the case in the name)")
	}
	inv.Tests = root.tests
	if inv.Tests == nil {
		inv.Tests = []Test{}
	}
	inv.Counts = countStatuses(inv.Tests)
	finishFiles(inv, files)
	inv.Faults = p.faults
	p.endNotes()
	inv.Notes = p.notes
	p.keep.finish(inv)
	if n > 0 {
		listDuplicates(inv)
	}
	return nil
}

// takeLoaded removes node:test's entries for loaded files from the
// top-level tests and returns the files; a stream of nothing else ran no
// test (RM-REPORT-005).
func (p *tapParser) takeLoaded(root *tapBlock) ([]string, error) {
	if len(p.loadedAt) == 0 {
		return nil, nil
	}
	files := make([]string, 0, len(p.loadedAt))
	kept := make([]Test, 0, len(root.tests)-len(p.loadedAt))
	for i, t := range root.tests {
		if f, ok := p.loadedAt[i]; ok {
			files = append(files, f)
			continue
		}
		kept = append(kept, t)
	}
	if len(kept) == 0 {
		return nil, rmerr.New(rmerr.ReportEmpty, "TAP report holds no test: its %d test point(s) are files node:test loaded that defined no test (first: %s); zero tests is not a pass",
			len(files), quote.String(slices.Min(files))).
			WithHint("check that the test command found the test files (node --test's patterns, the paths it is given) and that they call test()")
	}
	root.tests = kept
	return files, nil
}

// endRoot checks the top level once the stream is read: after a bail-out
// the plan cannot be held to, so it is noted; otherwise every subtest must
// be closed and the plan kept, and a plan of 1..0 is zero tests.
func (p *tapParser) endRoot(root *tapBlock) error {
	if p.bailed {
		if p.dropped > 0 {
			p.notes = append(p.notes, fmt.Sprintf("%d test point(s) inside subtests left open by Bail out! were dropped: their ids are incomplete", p.dropped))
		}
		if root.planLine > 0 {
			p.notes = append(p.notes, fmt.Sprintf("plan 1..%d not checked: the producer bailed out after %d top-level test point(s)", root.plan, root.points))
		}
	} else {
		if err := p.moveTo(0, p.lr.line); err != nil {
			return err
		}
		if p.orphan != nil {
			return tapMalformed(p.orphan.openLine, "the stream ends inside the subtest opened here (no closing test point)")
		}
		if root.planLine > 0 && root.plan == 0 && root.points == 0 {
			why := ""
			if p.planSkipNote != "" {
				why = " (" + p.planSkipNote + ")"
			}
			e := rmerr.New(rmerr.ReportEmpty, "TAP plan 1..0 at line %d%s: the stream ran zero tests, and zero tests is not a pass", root.planLine, why)
			e.Line = root.planLine
			return e.WithHint("make the suite run its tests; a skipped-everything run proves nothing")
		}
		if err := p.checkPlan(root, p.lr.line); err != nil {
			return err
		}
	}
	return nil
}

// endNotes notes what was tolerated: numbering out of sequence, non-TAP
// lines, unterminated YAML blocks.
func (p *tapParser) endNotes() {
	if p.outOfOrder > 0 {
		p.notes = append(p.notes, fmt.Sprintf("test points are numbered out of sequence from line %d", p.outOfOrder))
	}
	if p.nonTAP > 0 {
		p.notes = append(p.notes, fmt.Sprintf("%d non-TAP line(s) ignored, the first at line %d", p.nonTAP, p.nonTAPLine))
	}
	if p.badYAML > 0 {
		p.notes = append(p.notes, fmt.Sprintf("%d YAML diagnostic block(s) not terminated by \"...\"; their content was ignored", p.badYAML))
	}
}
