package report

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash/maphash"
	"io"
	"strings"
	"unsafe"

	"github.com/runmill/verify/pkg/report/internal/quote"
	"github.com/runmill/verify/pkg/report/internal/xmlscan"
	"github.com/runmill/verify/pkg/rmerr"
)

// parseJUnit reads a JUnit XML report (the strict subset of junit_xml.go) in
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
)

// Message slots, in precedence order.
const (
	jmError = iota
	jmFailure
	jmRerun
	jmSkipped
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
	capture  *xmlscan.Field // where this element's own text goes; nil: nowhere
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
	id     string
	path   uint32
	file   int32
	line   int32
	flags  int
	msg    [jmCount]xmlscan.Field
	seen   [jmCount]bool
	rfile  []byte // file and line of the first result element, used when
	rline  int32  // the testcase has none (Catch2 writes them there)
	rfound bool
	shown  int64 // failure-like result elements, for Claims.Shown
}

// jbRecord is one test while the report is read; records become []Test only
// at the end, so the peak memory per id is a 32-byte record, the id bytes and
// 16-32 bytes of the duplicate set, plus the final Test.
type jbRecord struct {
	id   string
	msg  int32
	file int32
	meta uint32 // line (low 28 bits), status (2 bits), flaky (top bit)
	path uint32 // FNV-1a of the suite path, for the duplicate hint
}

const (
	jbLineBits  = 28
	jbLineMask  = 1<<jbLineBits - 1
	jbFlakyFlag = 1 << 31
)

func (r *jbRecord) line() int     { return int(r.meta & jbLineMask) }
func (r *jbRecord) status() uint8 { return uint8(r.meta >> jbLineBits & 3) }
func (r *jbRecord) flaky() bool   { return r.meta&jbFlakyFlag != 0 }

const (
	jbChunk = 4096 // records per chunk
	jbBatch = 64   // records per dedup batch
)

// junitBuilder applies the JUnit rules of parseJUnit to a stream of
// elements. The scanner drives it; FuzzJUnitDifferential drives the same
// builder from encoding/xml, so the two readers are compared on XML alone.
type junitBuilder struct {
	identity Identity
	lim      Limits
	frames   []jbFrame
	sink     *xmlscan.Field // the scanner writes text here; nil: discard
	tc       jbCase
	fault    xmlscan.Field
	nCases   int

	recs  [][]jbRecord
	n     int
	arena []byte
	// slots is an open-addressing set of ids: each slot holds the id's
	// 32-bit hash above its record index+1 (0: empty). Probes compare hashes
	// and only touch a record on a match, and growing never rehashes an id:
	// with a million ids, every record touched is a cache miss.
	slots   []uint64
	unique  int     // ids in slots
	pending []int32 // records not yet in slots
	touch   uint64
	seed    maphash.Seed

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
		slots:      make([]uint64, 1024),
		pending:    make([]int32, 0, jbBatch),
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
func (b *junitBuilder) Sink() *xmlscan.Field { return b.sink }

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
	name, cls := a.Get(jaName), a.Get(jaClassname)
	if name == nil || len(name.Buf) == 0 {
		what := "a <testcase> without a name"
		if cls != nil && len(cls.Buf) > 0 {
			what = fmt.Sprintf("a <testcase> in classname %s without a name", quote.Text(cls.Text()))
		}
		return rmerr.New(rmerr.ReportIdentity, "%s has no test identity", what).
			WithHint("configure the reporter to write a name for every test; runmill compares tests by id and cannot compare a nameless one")
	}
	for _, f := range []*xmlscan.Field{name, cls} {
		if f != nil && f.Cut() {
			return rmerr.New(rmerr.ReportLimit, "a test name or classname longer than %d bytes (Limits.MaxField); an id is never cut", b.lim.MaxField).
				WithHint("shorten the test name, or raise Limits.MaxField")
		}
	}
	tc := &b.tc
	tc.flags, tc.file, tc.line, tc.rfound, tc.shown = 0, -1, 0, false, 0
	tc.rfile = tc.rfile[:0]
	for i := range tc.msg {
		tc.msg[i].Reset()
		tc.seen[i] = false
	}
	// The id is written once, into the arena.
	size := len(name.Buf)
	if cls != nil && len(cls.Buf) > 0 {
		size += len(cls.Buf) + 2
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
	}
	mark := len(b.arena)
	if suites {
		for i := range b.frames {
			if f := &b.frames[i]; f.kind == jkSuite && f.name != "" {
				b.arena = append(b.arena, f.name...)
				b.arena = append(b.arena, " > "...)
			}
		}
	}
	if cls != nil && len(cls.Buf) > 0 {
		b.arena = append(b.arena, cls.Buf...)
		b.arena = append(b.arena, "::"...)
	}
	b.arena = append(b.arena, name.Buf...)
	// The arena is append-only: bytes behind an id are never written again,
	// so the string may share them instead of costing an allocation per test.
	tc.id = unsafe.String(&b.arena[mark], size)
	if len(b.frames) > 0 {
		tc.path = b.frames[len(b.frames)-1].path
	}
	if f := a.Get(jaFile); f != nil && len(f.Buf) > 0 {
		tc.file = b.internFile(f, tc.id)
	}
	if l := a.Get(jaLine); l != nil {
		tc.line = jbLine(l.Buf)
	}
	if st := a.Get(jaStatus); st != nil {
		tc.flags |= b.statusFlags(st.Text())
	}
	return nil
}

// jbLine reads a line attribute; anything but a positive number below 2^28
// is no line.
func jbLine(v []byte) int32 {
	n := jbUint(v)
	if n <= 0 || n > jbLineMask {
		return 0
	}
	return int32(n)
}

// jbUint reads a decimal count, or -1. It does not allocate: it runs for
// every testcase.
func jbUint(v []byte) int64 {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || len(v) > 18 {
		return -1
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

func (b *junitBuilder) internFile(f *xmlscan.Field, id string) int32 {
	if f.Cut() {
		b.notes = append(b.notes, fmt.Sprintf("file of test %s cut at %d of %d bytes (Limits.MaxField); SHA-256 of the full text: %s", quote.String(id), len(f.Text()), f.N, f.Sum()))
	}
	if i, ok := b.fileIdx[string(f.Text())]; ok {
		return i
	}
	i := int32(len(b.files))
	s := string(f.Text())
	b.files = append(b.files, s)
	b.fileIdx[s] = i
	return i
}

var jbStatusWords = [...]struct {
	word  string
	flags int
}{
	{"run", 0}, {"passed", 0}, {"pass", 0}, {"success", 0}, {"ok", 0}, {"", 0},
	{"disabled", jfStatusSkip}, {"skipped", jfStatusSkip}, {"ignored", jfStatusSkip},
	{"notrun", jfStatusSkip}, {"notrunnable", jfStatusSkip}, {"inconclusive", jfStatusSkip},
	{"failed", jfStatusFail}, {"fail", jfStatusFail}, {"failure", jfStatusFail},
	{"error", jfStatusError}, {"errored", jfStatusError},
}

func (b *junitBuilder) statusFlags(v []byte) int {
	w := bytes.TrimSpace(v)
	for _, s := range jbStatusWords {
		if len(s.word) == len(w) && bytes.EqualFold([]byte(s.word), w) {
			return s.flags
		}
	}
	if b.statusSeen == nil {
		b.statusSeen = map[string]int{}
	}
	if n, ok := b.statusSeen[string(v)]; ok {
		b.statusSeen[string(v)] = n + 1
	} else if len(b.statusList) < 16 {
		b.statusSeen[string(v)] = 1
		b.statusList = append(b.statusList, string(v))
	}
	return 0
}

// startResult records a result element of the open testcase and returns
// where its text goes.
func (b *junitBuilder) startResult(kind jbKind, a *xmlscan.Attrs) *xmlscan.Field {
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
		v.MoveTo(m)
		return nil
	}
	return m
}

// End is xmlscan's call for an element closing.
func (b *junitBuilder) End() error {
	f := b.frames[len(b.frames)-1]
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
			b.claims(&f)
		}
		for i := range f.declared {
			if f.declared[i] >= 0 && f.declared[i] != f.counted[i] {
				m := &b.mismatch[i]
				if m.n == 0 {
					m.scope, m.declared, m.counted = jbScope(&f), f.declared[i], f.counted[i]
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

// claims records the root's summary counts (see Claims).
func (b *junitBuilder) claims(root *jbFrame) {
	c := &Claims{}
	fields := [jcCount]**int64{&c.Tests, &c.Failures, &c.Errors, &c.Skipped}
	fromRoot, suites := false, int32(0)
	for i := range root.claim {
		if root.claimN[i] == 0 {
			continue
		}
		v := root.claim[i]
		*fields[i] = &v
		if root.declared[i] >= 0 {
			fromRoot = true
		} else {
			suites = max(suites, root.claimN[i])
		}
	}
	if !fromRoot && suites == 0 {
		return
	}
	var parts []string
	if fromRoot {
		parts = append(parts, jbScope(root))
	}
	if suites > 0 {
		if suites == 1 {
			parts = append(parts, "1 <testsuite> element")
		} else {
			parts = append(parts, fmt.Sprintf("%d <testsuite> elements", suites))
		}
	}
	c.Scope = strings.Join(parts, " and ")
	b.claimed = c
}

func jbScope(f *jbFrame) string {
	tag := "testsuite"
	if f.kind == jkSuites {
		tag = "testsuites"
	}
	if f.name == "" {
		return "<" + tag + ">"
	}
	return fmt.Sprintf("<%s name=%s>", tag, quote.String(f.name))
}

// message turns a captured field into a message, noting a cut. whose is
// "test" or "fault", and name the test id or the suite.
func (b *junitBuilder) message(f *xmlscan.Field, whose, name string) string {
	if !f.Set {
		return ""
	}
	t := f.Text()
	if f.Cut() {
		b.notes = append(b.notes, fmt.Sprintf("message of %s %s cut at %d of %d bytes (Limits.MaxField); SHA-256 of the full text: %s", whose, quote.String(name), len(t), f.N, f.Sum()))
	}
	return string(bytes.TrimSpace(t))
}

func (b *junitBuilder) endCase() error {
	tc := &b.tc
	status, slot := uint8(0), -1
	switch fl := tc.flags; {
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
	r := jbRecord{id: tc.id, path: tc.path, msg: -1, file: tc.file, meta: uint32(status) << jbLineBits}
	if tc.flags&(jfFlaky|jfRerunFail|jfRerunError) != 0 {
		r.meta |= jbFlakyFlag
	}
	if slot >= 0 && tc.seen[slot] {
		if m := b.message(&tc.msg[slot], "test", tc.id); m != "" {
			r.msg = int32(len(b.msgs))
			b.msgs = append(b.msgs, m)
		}
	}
	line := tc.line
	if tc.rfound {
		if r.file < 0 && len(tc.rfile) > 0 {
			f := xmlscan.Field{Buf: tc.rfile, N: int64(len(tc.rfile))}
			r.file = b.internFile(&f, tc.id)
		}
		if line == 0 {
			line = tc.rline
		}
	}
	r.meta |= uint32(line)
	b.insert(r)
	return nil
}

func (b *junitBuilder) rec(i int32) *jbRecord { return &b.recs[i/jbChunk][i%jbChunk] }

// insert records a test. Whether its id is new is decided in batches
// (dedup): the answer is needed only at the end.
func (b *junitBuilder) insert(r jbRecord) {
	if len(b.recs) == 0 || len(b.recs[len(b.recs)-1]) == jbChunk {
		b.recs = append(b.recs, make([]jbRecord, 0, jbChunk))
	}
	last := &b.recs[len(b.recs)-1]
	*last = append(*last, r)
	b.pending = append(b.pending, int32(b.n))
	b.n++
	if len(b.pending) == cap(b.pending) {
		b.dedup()
	}
}

// dedup puts the pending records into the set of ids, counting each one
// already there as a duplicate. With a million ids the set is far larger
// than the CPU caches and every probe is a miss; touching the slots of a
// whole batch first lets those independent loads overlap, so a batch waits
// for memory about once rather than once per id.
func (b *junitBuilder) dedup() {
	if size := len(b.slots); 2*(b.unique+len(b.pending)) > size {
		for 2*(b.unique+len(b.pending)) > size {
			size *= 2 // a power of two: probes wrap with a mask
		}
		old := b.slots
		b.slots = make([]uint64, size)
		for _, v := range old {
			if v != 0 {
				b.place(v)
			}
		}
	}
	mask := uint32(len(b.slots) - 1)
	var hs [jbBatch]uint32
	var touch uint64
	for k, i := range b.pending {
		hs[k] = uint32(maphash.String(b.seed, b.rec(i).id))
		touch += b.slots[hs[k]&mask]
	}
	b.touch += touch // keeps the loads
	for k, i := range b.pending {
		if orig := b.lookup(b.rec(i).id, hs[k]); orig >= 0 {
			b.duplicate(orig, b.rec(i).path)
			continue
		}
		b.place(uint64(hs[k])<<32 | uint64(i+1))
		b.unique++
	}
	b.pending = b.pending[:0]
}

// lookup finds the record holding id (hash h) in the set, or -1.
func (b *junitBuilder) lookup(id string, h uint32) int32 {
	mask := uint32(len(b.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		v := b.slots[i]
		if v == 0 {
			return -1
		}
		if uint32(v>>32) == h && b.rec(int32(uint32(v)-1)).id == id {
			return int32(uint32(v) - 1)
		}
	}
}

func (b *junitBuilder) place(v uint64) {
	mask := uint32(len(b.slots) - 1)
	i := uint32(v>>32) & mask
	for b.slots[i] != 0 {
		i = (i + 1) & mask
	}
	b.slots[i] = v
}

// duplicate counts a further occurrence of record idx and tracks whether
// suite-path ids would tell the occurrences apart.
func (b *junitBuilder) duplicate(idx int32, path uint32) {
	if b.dupExtra == nil {
		b.dupExtra = map[int32]int32{}
		b.dupPairs = map[[2]uint32]struct{}{}
	}
	b.dupExtra[idx]++
	if b.identity == IdentitySuitePath || !b.pathsSplit {
		return
	}
	key := [2]uint32{uint32(idx), path}
	if _, ok := b.dupPairs[key]; ok || b.rec(idx).path == path {
		b.pathsSplit = false
		return
	}
	b.dupPairs[key] = struct{}{}
}

func (b *junitBuilder) finish() (*Inventory, error) {
	b.dedup()
	if len(b.dupExtra) > 0 && !b.allowDup {
		first := int32(-1)
		for i := range b.dupExtra {
			if first < 0 || i < first {
				first = i
			}
		}
		msg := fmt.Sprintf("duplicate test id %s: it occurs %d times", quote.String(b.rec(first).id), b.dupExtra[first]+1)
		if k := len(b.dupExtra) - 1; k > 0 {
			msg += fmt.Sprintf(", and %d other ids repeat too", k)
		}
		e := rmerr.New(rmerr.ReportIdentity, "%s; the report cannot prove which of them ran", msg)
		switch {
		case b.identity == IdentitySuitePath:
			e = e.WithHint("make test names unique within each testsuite, or configure the reporter to write each test once (retries as Surefire flakyFailure/rerunFailure, not as repeated testcases)")
		case b.pathsSplit:
			e = e.WithHint("the repeated ids sit in different testsuites: declare report.identity: suite-path for this check in .runmill/checks.yaml so ids include the enclosing testsuite names")
		default:
			e = e.WithHint("the same id repeats within one testsuite, so report.identity: suite-path would not help: make test names unique, or configure the reporter to write each test once (retries as Surefire flakyFailure/rerunFailure, not as repeated testcases)")
		}
		return nil, e
	}
	if b.n == 0 {
		msg := "the report holds no <testcase> element: zero tests is not a pass"
		if len(b.faults) > 0 {
			msg += fmt.Sprintf(" (it records %d suite-level error(s), first in %s: %q)", len(b.faults), jbShort(b.faults[0].Scope), jbShort(b.faults[0].Message))
		} else if d := b.mismatch[jcTests]; d.n > 0 && d.declared > 0 {
			msg += fmt.Sprintf(" (although %s declares tests=%d)", d.scope, d.declared)
		}
		return nil, rmerr.New(rmerr.ReportEmpty, "%s", msg).
			WithHint("check that the test command found and ran its tests (path filters, test discovery) and that the reporter wrote them")
	}
	if b.claimed != nil {
		b.claimed.Shown = b.shown + int64(len(b.faults))
	}
	inv := &Inventory{Format: JUnit, Identity: b.identity, Tests: make([]Test, b.n), Faults: b.faults, Claims: b.claimed}
	for i := range inv.Tests {
		r := b.rec(int32(i))
		t := &inv.Tests[i]
		t.ID, t.Line, t.Flaky = TestID(r.id), r.line(), r.flaky()
		switch r.status() {
		case 0:
			t.Status = Passed
			inv.Counts.Passed++
		case 1:
			t.Status = Failed
			inv.Counts.Failed++
		case 2:
			t.Status = Skipped
			inv.Counts.Skipped++
		}
		if r.msg >= 0 {
			t.Message = b.msgs[r.msg]
		}
		if r.file >= 0 {
			t.File = b.files[r.file]
		}
	}
	inv.Counts.Total = b.n
	b.recs = nil
	what := [jcCount]string{"<testcase> elements", "testcases failed by <failure>", "testcases failed by <error>", "testcases skipped"}
	for i, m := range b.mismatch {
		if m.n == 0 {
			continue
		}
		attr := [jcCount]string{"tests", "failures", "errors", "skipped"}[i]
		inv.Notes = append(inv.Notes, fmt.Sprintf("%s= disagrees with the elements in %d of %d suite elements (first: %s says %s=%d, counted %d %s); runmill counts elements, never attributes",
			attr, m.n, b.suites, m.scope, attr, m.declared, m.counted, what[i]))
	}
	for _, v := range b.statusList {
		inv.Notes = append(inv.Notes, fmt.Sprintf("status=%s on %d testcase(s) is not a status runmill knows; their result comes from their child elements", quote.String(v), b.statusSeen[v]))
	}
	inv.Notes = append(inv.Notes, b.notes...)
	if len(b.dupExtra) > 0 {
		removeDuplicates(inv)
	}
	return inv, nil
}

func jbShort(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		f := xmlscan.Field{Buf: []byte(s[:120]), H: sha256.New()}
		s = string(f.Text()) + "…"
	}
	return s
}
