package report

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"io"
	"strings"
	"unsafe"

	"github.com/runmill/verify/pkg/report/internal/quote"
	"github.com/runmill/verify/pkg/report/internal/textcap"
	"github.com/runmill/verify/pkg/report/internal/xmlscan"
	"github.com/runmill/verify/pkg/rmerr"
)

// parseJUnit reads a JUnit XML report (the strict subset of internal/xmlscan) in
// one streaming pass.
//
// Identity (spec § 4, "Canonical ids come from the report"): a test's id is
// "classname::name", or "name" when classname is absent or empty. A testcase
// without a name, or with an empty one, has no identity and fails the report
// closed (RM-REPORT-002), as do two testcases with the same id.
//
// With Options.Identity == IdentitySuitePath (declared in checks.yaml as
// report.identity: suite-path, never guessed) the names of the enclosing
// <testsuite> elements come first, outermost first, each followed by " > ":
//
//	<testsuite name="suiteA"><testsuite name="suiteB">
//	  <testcase classname="pkg.C" name="t"/>   →   suiteA > suiteB > pkg.C::t
//
// " > " is the separator TAP subtests use under the same declaration, so one
// checks.yaml setting reads the same way for both formats. A testsuite
// without a name (or with an empty one) adds nothing, and the <testsuites>
// root is not a suite of tests and adds nothing either. A suite name that
// itself contains " > " makes the path ambiguous; the duplicate check still
// catches any collision that results.
//
// Results. The elements are counted, never the tests=/failures=/errors=/
// skipped= attributes; where those disagree with the elements a note says so.
// Inside one testcase the result is error > failure > skipped > passed:
//
//   - <error>, <failure>: failed.
//   - Maven Surefire reruns (rerunFailingTestsCount): <flakyFailure> and
//     <flakyError> record failed attempts of a test that finally passed, so
//     alone they leave it passed; <rerunFailure> and <rerunError> record
//     attempts of a test that failed every time (Surefire writes the first
//     attempt as <failure>/<error>), so a testcase with one is failed even
//     without a <failure>: no final pass is recorded. Either sets Test.Flaky,
//     which therefore means "reruns were recorded".
//   - <skipped>: skipped.
//   - A status attribute is read where it can only make the result worse,
//     never better: producers such as tst, gtest-style C++ runners and the
//     NUnit converters write status="disabled" on a test that did not run and
//     no child element at all, and reading it as passed would turn a test
//     that never ran into evidence. disabled, skipped, ignored, notrun,
//     notrunnable and inconclusive read as skipped; failed, fail, failure,
//     error and errored as failed. run, passed, pass, success and ok change
//     nothing, and any other value is named in a note and changes nothing:
//     the child elements remain the authority.
//
// An <error> or <failure> that is a direct child of a testsuite (JUnit's
// record of a suite that failed outside any test, such as a failing
// @BeforeClass) is a Fault: the report then never describes a pass.
//
// A report with no <testcase> at all is RM-REPORT-005: zero tests is not a
// pass. The root must be <testsuites> or <testsuite>; a <testcase> or
// <testsuite> anywhere a JUnit report does not put one is refused
// (RM-REPORT-001) rather than guessed at.
//
// Message, File and Line come from the testcase or, when it has none, from
// the deciding result element; a message is the element's message attribute
// or else its text. Text longer than Limits.MaxField is cut and a note keeps
// the SHA-256 of the full text. Test names and classnames longer than
// Limits.MaxField are RM-REPORT-003: an id is never cut.
func parseJUnit(r io.Reader, opts Options) (*Inventory, error) {
	if opts.Identity != IdentityDefault && opts.Identity != IdentitySuitePath {
		return nil, rmerr.New(rmerr.ReportFormat, "unsupported report identity %q", string(opts.Identity)).
			InField("report.identity").
			WithHint("omit report.identity for the spec's ids, or declare suite-path")
	}
	lim := junitLimits(opts.Limits)
	b := newJUnitBuilder(opts.Identity, lim)
	b.allowDup = opts.AllowDuplicateIDs
	b.root = opts.Root
	s := xmlscan.New(r, b, xmlscan.Config{MaxBytes: lim.MaxBytes, MaxField: lim.MaxField, Attr: attrOf, Attrs: jaCount})
	if err := s.Run(); err != nil {
		return nil, err
	}
	inv, err := b.finish()
	if err != nil {
		return nil, err
	}
	inv.SHA256 = s.SHA256()
	inv.Bytes = s.Bytes()
	return inv, nil
}

// junitLimits fills each zero cap from DefaultLimits: a zero cap would refuse
// every report, which no caller means.
func junitLimits(l Limits) Limits {
	d := DefaultLimits
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxField <= 0 {
		l.MaxField = d.MaxField
	}
	if l.MaxTests <= 0 {
		l.MaxTests = d.MaxTests
	}
	return l
}

type jbKind uint8

const (
	jkOther  jbKind = iota
	jkSuites        // <testsuites>
	jkSuite         // <testsuite>
	jkCase          // <testcase>
	jkError
	jkFailure
	jkSkipped
	jkFlaky       // <flakyFailure>, <flakyError>
	jkRerunFail   // <rerunFailure>
	jkRerunError  // <rerunError>
	jkFault       // <error> or <failure> directly in a suite
	jkCaseIgnored // anything else inside a testcase
)

func jbKindOf(name []byte) jbKind {
	switch string(name) {
	case "testsuites":
		return jkSuites
	case "testsuite":
		return jkSuite
	case "testcase":
		return jkCase
	case "error":
		return jkError
	case "failure":
		return jkFailure
	case "skipped":
		return jkSkipped
	case "flakyFailure", "flakyError":
		return jkFlaky
	case "rerunFailure":
		return jkRerunFail
	case "rerunError":
		return jkRerunError
	}
	return jkOther
}

// Result flags of one testcase.
const (
	jfError = 1 << iota
	jfFailure
	jfSkipped
	jfFlaky
	jfRerunFail
	jfRerunError
	jfStatusFail
	jfStatusError
	jfStatusSkip
	jfTodo // a <skipped type="todo">: node:test's TODO, skipped whatever else it holds
)

// Message slots, in precedence order.
const (
	jmError = iota
	jmFailure
	jmRerun
	jmSkipped
	// jmOutput is the testcase's own first <system-out> or <system-err>:
	// not a message, but where libtest's JUnit formatter puts a failed
	// Rust test's panic (its <failure> carries neither message nor text).
	jmOutput
	jmCount
)

// Attribute counts compared with the elements.
const (
	jcTests = iota
	jcFailures
	jcErrors
	jcSkipped
	jcCount
)

var jcAttr = [jcCount]int{jaTests, jaFailures, jaErrors, jaSkipped}

type jbFrame struct {
	kind     jbKind
	capture  *textcap.Field // where this element's own text goes; nil: nowhere
	name     string         // testsuite name (cut at MaxField)
	path     uint32         // FNV-1a of the suite names down to here
	declared [jcCount]int64
	counted  [jcCount]int64
	// claim sums the outermost declarations at or below this suite, per
	// attribute; claimN counts the elements that made it (0: none declares).
	claim  [jcCount]int64
	claimN [jcCount]int32
}

// jbClaimCap bounds a summed claim: attributes are read up to 18 digits, and
// a sum of many must not wrap around into a small (or negative) claim.
const jbClaimCap = 1 << 53

// jbCase is the testcase being read.
type jbCase struct {
	id       string
	blk, off uint32 // where id is in the arena
	loaded   string // node:test's entry for a loaded file that defined no test, if it is one
	path     uint32
	file     int32
	line     int32
	flags    int
	msg      [jmCount]textcap.Field
	seen     [jmCount]bool
	rfile    []byte // file and line of the first result element, used when
	rline    int32  // the testcase has none (Catch2 writes them there)
	rfound   bool
	shown    int64 // failure-like result elements, for Claims.Shown
	// collection: its <error> is pytest's "collection failure", whose
	// text is kept to quote the error (collectionMessage).
	collection bool
}

// junitBuilder applies the JUnit rules of parseJUnit to a stream of
// elements. The scanner drives it; FuzzJUnitDifferential drives the same
// builder from encoding/xml, so the two readers are compared on XML alone.
type junitBuilder struct {
	identity Identity
	lim      Limits
	root     string // Options.Root
	frames   []jbFrame
	sink     *textcap.Field // the scanner writes text here; nil: discard
	tc       jbCase
	fault    textcap.Field
	nCases   int

	recs [][]jbRecord
	n    int
	// arena is the block the ids are being written to; blocks are all of
	// them (each slice's array; a record names its block by index).
	arena  []byte
	blocks [][]byte
	seed   maphash.Seed

	msgs    []string
	files   []string
	fileIdx map[string]int32

	dupExtra   map[int32]int32 // record index → further occurrences
	dupPairs   map[[2]uint32]struct{}
	pathsSplit bool // every repeated id sits in distinct suite paths so far

	notes      []string
	faults     []Fault
	mismatch   [jcCount]jbMismatch
	suites     int
	statusSeen map[string]int
	statusList []string
	claimed    *Claims
	shown      int64
	allowDup   bool
	loaded     []string // node:test's loaded files (Inventory.Files)
}

type jbMismatch struct {
	n                 int
	scope             string
	declared, counted int64
}

func newJUnitBuilder(id Identity, lim Limits) *junitBuilder {
	b := &junitBuilder{
		identity:   id,
		lim:        lim,
		seed:       maphash.MakeSeed(),
		fileIdx:    map[string]int32{},
		pathsSplit: true,
	}
	b.fault.Max = lim.MaxField
	for i := range b.tc.msg {
		b.tc.msg[i].Max = lim.MaxField
	}
	return b
}

func (b *junitBuilder) parent() jbKind {
	if len(b.frames) == 0 {
		return jkOther
	}
	return b.frames[len(b.frames)-1].kind
}

func notJUnit(format string, args ...any) *rmerr.Error {
	return rmerr.New(rmerr.ReportMalformed, format, args...).
		WithHint("runmill reads JUnit XML as JUnit, Surefire, pytest, jest-junit and go-junit-report write it; check the reporter flags and the report path")
}

// start opens an element; parent is the name of the enclosing one (nil at
// the root), for error messages.
var _ xmlscan.Handler = (*junitBuilder)(nil)

// Sink is where the scanner writes the open element's text; nil: discard.
func (b *junitBuilder) Sink() *textcap.Field { return b.sink }

// Start is xmlscan's call for an element opening.
func (b *junitBuilder) Start(name, parent []byte, a *xmlscan.Attrs) error {
	if len(b.frames) >= b.lim.MaxDepth {
		return rmerr.New(rmerr.ReportLimit, "elements nested deeper than %d levels (Limits.MaxDepth)", b.lim.MaxDepth).
			WithHint("a JUnit report nests a few suites deep; check the reporter")
	}
	kind := jbKindOf(name)
	pk := b.parent()
	if len(b.frames) == 0 && kind != jkSuites && kind != jkSuite {
		return notJUnit("root element <%s> is not JUnit (expected <testsuites> or <testsuite>)", name)
	}
	f := jbFrame{kind: kind}
	switch kind {
	case jkSuites:
		if len(b.frames) > 0 {
			return notJUnit("<testsuites> inside <%s>: only the root may be <testsuites>", parent)
		}
		if err := b.suiteFrame(&f, a); err != nil {
			return err
		}
	case jkSuite:
		if len(b.frames) > 0 && pk != jkSuites && pk != jkSuite {
			return notJUnit("<testsuite> inside <%s>: runmill does not guess what such a suite means", parent)
		}
		if err := b.suiteFrame(&f, a); err != nil {
			return err
		}
	case jkCase:
		if pk != jkSuites && pk != jkSuite {
			return notJUnit("<testcase> inside <%s>: a test case belongs directly in a <testsuite>; runmill does not guess what a nested one means", parent)
		}
		if err := b.startCase(a); err != nil {
			return err
		}
	case jkError, jkFailure, jkSkipped, jkFlaky, jkRerunFail, jkRerunError:
		switch pk {
		case jkCase:
			f.capture = b.startResult(kind, a)
		case jkSuite, jkSuites:
			if kind == jkError || kind == jkFailure {
				f.kind = jkFault
				b.fault.Reset()
				if m := a.Get(jaMessage); m != nil && len(bytes.TrimSpace(m.Buf)) > 0 {
					m.MoveTo(&b.fault)
				} else {
					f.capture = &b.fault
				}
				b.fault.Set = true
				break
			}
			f.kind = jkOther
		default:
			f.kind = jkOther
		}
	default:
		if pk == jkCase {
			f.kind = jkCaseIgnored
			if k := string(name); (k == "system-out" || k == "system-err") && !b.tc.seen[jmOutput] {
				b.tc.seen[jmOutput] = true
				m := &b.tc.msg[jmOutput]
				m.Reset()
				m.Set = true
				f.capture = m
			}
		}
	}
	b.frames = append(b.frames, f)
	b.sink = f.capture
	return nil
}

func (b *junitBuilder) suiteFrame(f *jbFrame, a *xmlscan.Attrs) error {
	b.suites++
	if n := a.Get(jaName); n != nil {
		if n.Cut() && f.kind == jkSuite && b.identity == IdentitySuitePath {
			return rmerr.New(rmerr.ReportLimit, "a testsuite name longer than %d bytes (Limits.MaxField); with report.identity: suite-path it is part of every id inside, and an id is never cut", b.lim.MaxField).
				WithHint("shorten the suite name, or raise Limits.MaxField")
		}
		f.name = string(n.Text())
	}
	if len(b.frames) > 0 {
		f.path = b.frames[len(b.frames)-1].path
	} else {
		f.path = 2166136261
	}
	if f.kind == jkSuite {
		for i := 0; i < len(f.name); i++ {
			f.path = (f.path ^ uint32(f.name[i])) * 16777619
		}
		f.path = (f.path ^ 0x100) * 16777619
	}
	for i, id := range jcAttr {
		f.declared[i] = -1
		if v := a.Get(id); v != nil && !v.Cut() {
			f.declared[i] = jbUint(v.Buf)
		}
	}
	return nil
}

func (b *junitBuilder) startCase(a *xmlscan.Attrs) error {
	if b.nCases++; b.nCases > b.lim.MaxTests {
		return rmerr.New(rmerr.ReportLimit, "more than %d test cases (Limits.MaxTests)", b.lim.MaxTests).
			WithHint("split the report, or raise the cap if a suite this large is expected")
	}
	name, cls, file := a.Get(jaName), a.Get(jaClassname), a.Get(jaFile)
	if name == nil || len(name.Buf) == 0 {
		what := "a <testcase> without a name"
		if cls != nil && len(cls.Buf) > 0 {
			what = fmt.Sprintf("a <testcase> in classname %s without a name", quote.Text(cls.Text()))
		}
		return rmerr.New(rmerr.ReportIdentity, "%s has no test identity", what).
			WithHint("configure the reporter to write a name for every test; runmill compares tests by id and cannot compare a nameless one")
	}
	for _, f := range []*textcap.Field{name, cls} {
		if f != nil && f.Cut() {
			return rmerr.New(rmerr.ReportLimit, "a test name or classname longer than %d bytes (Limits.MaxField); an id is never cut", b.lim.MaxField).
				WithHint("shorten the test name, or raise Limits.MaxField")
		}
	}
	tc := &b.tc
	tc.flags, tc.file, tc.line, tc.rfound, tc.shown, tc.collection = 0, -1, 0, false, 0, false
	tc.rfile = tc.rfile[:0]
	for i := range tc.msg {
		tc.msg[i].Reset()
		tc.seen[i] = false
	}
	var class []byte
	if cls != nil {
		class = cls.Buf
	}
	tc.loaded = b.loadedFile(name.Buf, class, file)
	// node:test (nodetest.go): the file it names replaces its placeholder
	// classname, so the same name in two files is two tests.
	if string(class) == nodePlaceholderClass && file != nil && len(file.Buf) > 0 {
		if file.Cut() {
			return rmerr.New(rmerr.ReportLimit, "a node:test file= longer than %d bytes (Limits.MaxField) would be part of the id; an id is never cut", b.lim.MaxField).
				WithHint("shorten the test file's path, or raise Limits.MaxField")
		}
		class = []byte(underRoot(b.root, string(file.Buf)))
	}
	// The id is written once, into the arena.
	size := len(name.Buf)
	if len(class) > 0 {
		size += len(class) + 2
	}
	suites := b.identity == IdentitySuitePath
	if suites {
		for i := range b.frames {
			if f := &b.frames[i]; f.kind == jkSuite && f.name != "" {
				size += len(f.name) + 3
			}
		}
	}
	if cap(b.arena)-len(b.arena) < size {
		b.arena = make([]byte, 0, max(256<<10, size))
		b.blocks = append(b.blocks, b.arena)
	}
	mark := len(b.arena)
	tc.blk, tc.off = uint32(len(b.blocks)-1), uint32(mark)
	if suites {
		for i := range b.frames {
			if f := &b.frames[i]; f.kind == jkSuite && f.name != "" {
				b.arena = append(b.arena, f.name...)
				b.arena = append(b.arena, " > "...)
			}
		}
	}
	if len(class) > 0 {
		b.arena = append(b.arena, class...)
		b.arena = append(b.arena, "::"...)
	}
	b.arena = append(b.arena, name.Buf...)
	// The arena is append-only: bytes behind an id are never written again,
	// so the string may share them instead of costing an allocation per test.
	tc.id = unsafe.String(&b.arena[mark], size)
	if len(b.frames) > 0 {
		tc.path = b.frames[len(b.frames)-1].path
	}
	if file != nil && len(file.Buf) > 0 {
		tc.file = b.internFile(file, tc.id)
	}
	if l := a.Get(jaLine); l != nil {
		tc.line = jbLine(l.Buf)
	}
	if st := a.Get(jaStatus); st != nil {
		tc.flags |= b.statusFlags(st.Text())
	}
	return nil
}

// startResult records a result element of the open testcase and returns
// where its text goes.
func (b *junitBuilder) startResult(kind jbKind, a *xmlscan.Attrs) *textcap.Field {
	tc := &b.tc
	slot := -1
	switch kind {
	case jkError:
		tc.flags |= jfError
		slot = jmError
	case jkFailure:
		tc.flags |= jfFailure
		slot = jmFailure
	case jkSkipped:
		tc.flags |= jfSkipped
		slot = jmSkipped
		if t := a.Get(jaType); t != nil && string(t.Buf) == "todo" {
			tc.flags |= jfTodo
		}
	case jkFlaky:
		tc.flags |= jfFlaky
	case jkRerunFail:
		tc.flags |= jfRerunFail
		slot = jmRerun
	case jkRerunError:
		tc.flags |= jfRerunError
		slot = jmRerun
	}
	if kind != jkSkipped {
		tc.shown++
	}
	if slot < 0 {
		return nil
	}
	if !tc.rfound {
		if f := a.Get(jaFile); f != nil && len(f.Buf) > 0 {
			tc.rfile = append(tc.rfile[:0], f.Text()...)
			tc.rfound = true
		}
		if l := a.Get(jaLine); l != nil {
			if tc.rline = jbLine(l.Buf); tc.rline > 0 {
				tc.rfound = true
			}
		}
	}
	if tc.seen[slot] {
		return nil // the first element of a kind speaks for it
	}
	tc.seen[slot] = true
	m := &tc.msg[slot]
	m.Reset()
	m.Set = true
	// A blank message= (some reporters write message="") says nothing; the
	// element's text is then the message.
	if v := a.Get(jaMessage); v != nil && len(bytes.TrimSpace(v.Buf)) > 0 {
		if kind == jkError && string(bytes.TrimSpace(v.Buf)) == pytestCollection {
			tc.collection = true
			return m // the text holds the error; endCase quotes it
		}
		v.MoveTo(m)
		return nil
	}
	return m
}

// pytestCollection is pytest's message for a test module that failed to
// import; the element's text holds the traceback, its "E   " lines the
// error itself.
const pytestCollection = "collection failure"

// collectionMessage is a pytest collection failure with the error it
// states ("collection failure: ModuleNotFoundError: No module named
// 'calc'"): alone, "collection failure" hid the cause (issue 27).
func collectionMessage(text []byte) string {
	var last string
	for _, l := range strings.Split(string(text), "\n") {
		if e, ok := strings.CutPrefix(l, "E "); ok && strings.TrimSpace(e) != "" {
			last = strings.TrimSpace(e)
		}
	}
	if last == "" {
		return pytestCollection
	}
	return pytestCollection + ": " + last
}

// End is xmlscan's call for an element closing.
func (b *junitBuilder) End() error {
	// A pointer, not a copy of the frame's counters: nothing is pushed
	// before End returns, so the popped frame stays as it was.
	f := &b.frames[len(b.frames)-1]
	b.frames = b.frames[:len(b.frames)-1]
	switch f.kind {
	case jkCase:
		if err := b.endCase(); err != nil {
			return err
		}
	case jkSuite, jkSuites:
		for i := range f.declared {
			if f.declared[i] >= 0 {
				f.claim[i], f.claimN[i] = f.declared[i], 1
			}
		}
		if len(b.frames) > 0 {
			p := &b.frames[len(b.frames)-1]
			for i := range f.claim {
				if f.claimN[i] > 0 {
					p.claim[i] = min(p.claim[i]+f.claim[i], jbClaimCap)
					p.claimN[i] = min(p.claimN[i]+f.claimN[i], 1<<30)
				}
			}
		} else {
			b.claims(f)
		}
		for i := range f.declared {
			if f.declared[i] >= 0 && f.declared[i] != f.counted[i] {
				m := &b.mismatch[i]
				if m.n == 0 {
					m.scope, m.declared, m.counted = jbScope(f), f.declared[i], f.counted[i]
				}
				m.n++
			}
		}
		if len(b.frames) > 0 {
			p := &b.frames[len(b.frames)-1]
			for i := range p.counted {
				p.counted[i] += f.counted[i]
			}
		}
	case jkFault:
		scope := "report"
		if len(b.frames) > 0 && b.frames[len(b.frames)-1].name != "" {
			scope = b.frames[len(b.frames)-1].name
		}
		msg := b.message(&b.fault, "the fault in", scope)
		if msg == "" {
			msg = "<error> or <failure> without a message"
		}
		b.faults = append(b.faults, Fault{Scope: scope, Message: msg})
	}
	b.sink = nil
	if len(b.frames) > 0 {
		b.sink = b.frames[len(b.frames)-1].capture
	}
	return nil
}

// message turns a captured field into a message, noting a cut. whose is
// "test" or "fault", and name the test id or the suite.
func (b *junitBuilder) message(f *textcap.Field, whose, name string) string {
	if !f.Set {
		return ""
	}
	t := f.Text()
	if f.Cut() {
		b.notes = append(b.notes, fmt.Sprintf("message of %s %s cut at %d of %d bytes (Limits.MaxField); SHA-256 of the full text: %s", whose, quote.String(name), len(t), f.N, f.Sum()))
	}
	return string(bytes.TrimSpace(t))
}

// panicMessage is the panic a failed Rust test's captured output states
// ("thread 'tests::adds' (8778) panicked at src/lib.rs:9:5:" and the
// message on the next line), as "panicked at src/lib.rs:9:5: MESSAGE";
// "" when it states none. Without it a failure shows no message and the
// explanation falls back to what cargo printed, which is about the run,
// not the test (issue 27).
func panicMessage(out []byte) string {
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		_, at, ok := strings.Cut(l, "' panicked at ")
		if !ok {
			if _, at, ok = strings.Cut(l, ") panicked at "); !ok {
				continue
			}
		}
		msg := "panicked at " + strings.TrimSpace(at)
		if i+1 < len(lines) {
			if next := strings.TrimSpace(lines[i+1]); next != "" {
				msg += " " + next
			}
		}
		return msg
	}
	return ""
}

func (b *junitBuilder) endCase() error {
	tc := &b.tc
	status, slot := uint8(0), -1
	switch fl := tc.flags; {
	case fl&jfTodo != 0:
		// node:test writes a TODO that threw with both <skipped type="todo">
		// and <failure>; a TODO is skipped (spec § 4, as TAP's # TODO), and
		// its <failure> still counts among the elements shown (Claims).
		status, slot = 2, jmSkipped
	case fl&(jfError|jfStatusError) != 0:
		status, slot = 1, jmError
	case fl&(jfFailure|jfStatusFail) != 0:
		status, slot = 1, jmFailure
	case fl&(jfRerunFail|jfRerunError) != 0:
		status, slot = 1, jmRerun
	case fl&(jfSkipped|jfStatusSkip) != 0:
		status, slot = 2, jmSkipped
	}
	// A failed case's message comes from the most severe element that has
	// one: status="errored" with only a <failure> still has its text.
	if status == 1 {
		for s := slot; s <= jmRerun; s++ {
			if tc.seen[s] {
				slot = s
				break
			}
		}
	}
	if status == 1 {
		b.shown += max(tc.shown, 1)
	} else {
		b.shown += tc.shown
	}
	p := &b.frames[len(b.frames)-1] // the suite: a testcase is never the root
	p.counted[jcTests]++
	switch {
	case status == 2:
		p.counted[jcSkipped]++
	case status == 1 && (tc.flags&(jfError|jfStatusError) != 0 || tc.flags&(jfFailure|jfStatusFail) == 0 && tc.flags&jfRerunError != 0):
		p.counted[jcErrors]++
	case status == 1:
		p.counted[jcFailures]++
	}
	r := jbRecord{blk: tc.blk, off: tc.off, n: uint32(len(tc.id)), path: tc.path, msg: -1, file: tc.file, meta: uint32(status) << jbLineBits}
	if tc.flags&(jfFlaky|jfRerunFail|jfRerunError) != 0 {
		r.meta |= jbFlakyFlag
	}
	if slot == jmError && tc.collection {
		r.msg = int32(len(b.msgs))
		b.msgs = append(b.msgs, collectionMessage(tc.msg[slot].Text()))
	} else if slot >= 0 && tc.seen[slot] {
		if m := b.message(&tc.msg[slot], "test", tc.id); m != "" {
			r.msg = int32(len(b.msgs))
			b.msgs = append(b.msgs, m)
		}
	}
	if status == 1 && r.msg < 0 && tc.seen[jmOutput] {
		if m := panicMessage(tc.msg[jmOutput].Text()); m != "" {
			r.msg = int32(len(b.msgs))
			b.msgs = append(b.msgs, m)
		}
	}
	line := tc.line
	if tc.rfound {
		if r.file < 0 && len(tc.rfile) > 0 {
			f := textcap.Field{Buf: tc.rfile, N: int64(len(tc.rfile))}
			r.file = b.internFile(&f, tc.id)
		}
		if line == 0 {
			line = tc.rline
		}
	}
	r.meta |= uint32(line)
	if tc.loaded != "" && tc.flags == 0 {
		r.meta |= jbFileFlag
		b.loaded = append(b.loaded, tc.loaded)
	}
	b.insert(r)
	return nil
}

// loadedFile returns the file a testcase names when it is node:test's
// entry for a file that defined no test (nodetest.go; its result is decided
// at its end), else "". class is the classname as written.
func (b *junitBuilder) loadedFile(name, class []byte, file *textcap.Field) string {
	if len(b.frames) != 1 || len(name) == 0 || !nodeLoadedPath(string(name)) {
		return ""
	}
	n := string(name)
	rel := underRoot(b.root, n)
	if string(class) != nodePlaceholderClass && string(class) != rel {
		return ""
	}
	if file != nil && len(file.Buf) > 0 {
		// Node 24.11 names the file relative to its working directory and
		// writes file= absolute: the file= path is the one to record.
		f := string(file.Buf)
		if file.Cut() || f != n && (n[0] == '/' || !strings.HasSuffix(f, "/"+n)) {
			return ""
		}
		return underRoot(b.root, f)
	}
	return rel
}
