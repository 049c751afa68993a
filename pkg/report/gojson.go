package report

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/report/internal/quote"
	"github.com/runmill/verify/pkg/report/internal/test2json"
	"github.com/runmill/verify/pkg/report/internal/textcap"
	"github.com/runmill/verify/pkg/rmerr"
)

// go test -json (test2json events, one JSON object per line) as spec § 4
// reads it:
//
//   - The id is Package::Test from the test's terminal event (pass, fail or
//     skip). Package summaries (no Test) are not identities. Events without a
//     Package (raw `go tool test2json` output, like Go's own golden files) give
//     the bare Test name as id and a note: "::Test" would name no package.
//   - A test seen (run, output, pause…) but never terminal is failed: the
//     package panicked, timed out or the stream was cut.
//   - A package that fails with no failing test (panic outside a test,
//     TestMain, timeout, a Go >= 1.24 build-fail / [setup failed]) is a Fault;
//     so is a package that never reports pass or fail (the stream ended
//     early) and a build failure the stream reports only as a plain
//     "FAIL pkg [build failed]" line.
//   - Plain lines (go build errors, "go: downloading…") are tolerated and
//     noted, but a line that starts with "{" must be a valid event, and a
//     stream with no event at all is malformed (RM-REPORT-001).
//   - A second terminal event for an id (go test -count=2, gotestsum
//     --rerun-fails writing reruns into the same file) is a duplicate id and
//     rejects the report (RM-REPORT-002): spec § 4 wants unique ids, and a
//     rerun that passed would otherwise hide the failure.
//   - Failed and skipped tests keep their own output (framing lines such as
//     "=== RUN" and "--- FAIL" removed) as message, and the first
//     "file.go:N:" location in it as file and line.
//   - Invalid UTF-8 in Output becomes U+FFFD per invalid byte, as
//     encoding/json does; in Package or Test (the id) it is refused, as is
//     an escaped lone surrogate: ids are byte-exact.
func parseGoJSON(r io.Reader, opts Options) (*Inventory, error) {
	p := &goParser{
		allowDup: opts.AllowDuplicateIDs,
		lim:      opts.Limits,
		lr:       newLineReader(r, opts.Limits),
		keep:     newTextKeeper(opts.Limits),
		pkgs:     map[string]*goPkg{},
		builds:   map[string]*goBuild{},
	}
	for {
		line, ok := p.lr.next()
		if !ok {
			break
		}
		if err := p.line(line); err != nil {
			return nil, err
		}
	}
	if err := p.lr.finish(); err != nil {
		return nil, err
	}
	inv := &Inventory{Format: GoJSON, Identity: opts.Identity}
	p.lr.fill(inv)
	if err := p.end(inv); err != nil {
		return nil, err
	}
	return inv, nil
}

type goParser struct {
	allowDup bool
	lim      Limits
	lr       *lineReader
	keep     *textKeeper

	ev        test2json.Event
	scratch   []byte // decoded Package and Output values
	actionBuf []byte // decoded Action, when it holds escapes
	keyBuf    []byte // decoded keys
	nameBuf   []byte // decoded Test value
	idBuf     []byte // id being composed

	pkgs       map[string]*goPkg
	order      []*goPkg // packages in order of first event
	lastPkg    *goPkg   // the previous event's package: consecutive events share one
	builds     map[string]*goBuild
	builtOrder []*goBuild

	// Finished tests are kept compact until the end: a 100 MB stream holds
	// about 100 000 of them, and memory must grow with them, not the file.
	recs   goRecs
	extras []goExtra // messages of failed and skipped tests
	free   []*goTest // finished tests' buffers, reused
	seq    int       // order of first sight, for tests that never finish
	events int
	faults []Fault
	noPkg  bool // some event had no Package field

	nonJSON     int
	nonJSONLine int
	nonJSONText string
	unknown     map[string]int
}

// goRec is one finished test: 24 bytes, where a Test takes 80.
type goRec struct {
	id     TestID
	status goStatus
	extra  int32 // index+1 into extras, 0 for none
}

// goRecs stores records in fixed chunks: a growing slice would leave
// four times its final size behind as garbage, and the inventory's peak
// memory is what the parser must keep small.
type goRecs struct {
	chunks [][]goRec
	n      int
}

const goRecChunk = 8192

func (r *goRecs) add(rec goRec) {
	if r.n%goRecChunk == 0 {
		r.chunks = append(r.chunks, make([]goRec, 0, goRecChunk))
	}
	last := &r.chunks[len(r.chunks)-1]
	*last = append(*last, rec)
	r.n++
}

func (r *goRecs) at(i int) *goRec { return &r.chunks[i/goRecChunk][i%goRecChunk] }

type goStatus uint8

const (
	goPassed goStatus = iota
	goFailed
	goSkipped
)

var goStatuses = [...]Status{goPassed: Passed, goFailed: Failed, goSkipped: Skipped}

type goExtra struct {
	message, file string
	line          int
}

type goPkg struct {
	name        string
	prefix      string             // "name::", or "" without a package
	running     map[string]*goTest // tests seen but not finished
	failed      bool               // a test of this package failed
	terminal    string             // the package's last pass / fail / skip
	failedBuild string
	output      textcap.Field // package-level output, for a Fault
}

// goTest is a test that has started (or printed) and not finished.
type goTest struct {
	seq    int
	ran    bool          // a run/pause/cont event, not only output: output after a test's end creates one without
	out    textcap.Field // output other than framing lines
	hasOut bool
}

type goUnfinished struct {
	pkg  *goPkg
	name string
	t    *goTest
}

type goBuild struct {
	importPath string
	output     textcap.Field
	failed     bool
	claimed    bool // a package fail event named it in FailedBuild
}

func (p *goParser) line(raw []byte) error {
	b := raw
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	if i == len(b) {
		return nil
	}
	if b[i] != '{' {
		return p.plain(b[i:])
	}
	if err := test2json.Decode(b, &p.ev, &p.keyBuf); err != nil {
		e := rmerr.Wrap(rmerr.ReportMalformed, err, "go-json line %d is not a valid test2json event", p.lr.line)
		e.Line = p.lr.line
		return e.WithHint("the line starts with '{' but is not one complete JSON event: the stream was cut or corrupted, or is not go test -json output")
	}
	p.events++
	if !p.ev.Package.Exact() || !p.ev.Test.Exact() {
		return p.inexact()
	}
	return p.event(&p.ev)
}

// inexact refuses an event whose Package or Test would not decode byte for
// byte (issue #13, "ids are byte-exact"): go test itself never writes one
// (the testing package rewrites such names to U+FFFD, and test2json emits
// valid JSON), so only a corrupted or forged stream is refused.
func (p *goParser) inexact() error {
	field, s := "Test", p.ev.Test
	if !p.ev.Package.Exact() {
		field, s = "Package", p.ev.Package
	}
	what := "invalid UTF-8"
	if utf8.Valid(s.Raw) {
		what = "a \\u escape of a lone surrogate"
	}
	e := rmerr.New(rmerr.ReportIdentity, "go-json line %d: the %s field %s holds %s; ids are compared byte for byte, and replacing it with U+FFFD could make two different tests one id",
		p.lr.line, field, quote.Text(s.Raw), what)
	e.Line = p.lr.line
	return e.WithHint("the stream was corrupted or was not written by go test -json; regenerate it")
}

// plain handles a line that is not JSON: go test -json passes the go
// command's own messages (build errors, downloads) through as text. A FAIL
// line among them is a package that failed outside any JSON event.
func (p *goParser) plain(b []byte) error {
	p.nonJSON++
	if p.nonJSONLine == 0 {
		p.nonJSONLine = p.lr.line
		p.nonJSONText = quote.Text(b)
	}
	if rest, ok := bytes.CutPrefix(b, []byte("FAIL")); ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t') {
		scope := "report"
		if f := bytes.Fields(rest); len(f) > 0 {
			scope = validUTF8(f[0], &p.keep.invalid)
		}
		msg, err := p.keep.text(bytes.TrimSpace(b), func() string { return "plain FAIL line" })
		if err != nil {
			return err
		}
		p.faults = append(p.faults, Fault{Scope: scope, Message: fmt.Sprintf("line %d (not JSON): %s", p.lr.line, msg)})
	}
	return nil
}

func (p *goParser) event(ev *test2json.Event) error {
	action := ev.Action.Raw
	if ev.Action.Esc {
		p.actionBuf = ev.Action.Decode(p.actionBuf[:0])
		action = p.actionBuf
	}
	switch string(action) {
	case "build-output", "build-fail":
		return p.build(ev, string(action) == "build-fail")
	case "":
		e := rmerr.New(rmerr.ReportMalformed, "go-json line %d has no Action: not a test2json event", p.lr.line)
		e.Line = p.lr.line
		return e.WithHint("the file must be the output of go test -json")
	}
	pkg, err := p.pkg(ev)
	if err != nil {
		return err
	}
	if len(ev.Test.Raw) == 0 && !ev.Test.Esc {
		return p.pkgEvent(pkg, action, ev)
	}
	name := ev.Test.Raw
	if ev.Test.Esc || !isASCIIBytes(name) {
		p.nameBuf = p.decode(ev.Test, p.nameBuf[:0])
		name = p.nameBuf
	}
	switch string(action) {
	case "pass", "fail", "skip":
		return p.finish(pkg, name, string(action))
	case "run", "pause", "cont", "output", "bench", "attr", "start":
		t := pkg.running[string(name)]
		if t == nil {
			t = p.newGoTest()
			pkg.running[string(name)] = t
		}
		if string(action) == "output" {
			p.testOutput(t, ev)
		} else {
			t.ran = true
		}
		return nil
	}
	p.unknownAction(action)
	return nil
}

func isASCIIBytes(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// decode decodes an id-bearing string, counting invalid UTF-8 for the note.
func (p *goParser) decode(s test2json.String, dst []byte) []byte {
	if !utf8.Valid(s.Raw) {
		p.keep.invalid++
	}
	return s.Decode(dst)
}

func (p *goParser) unknownAction(action []byte) {
	if p.unknown == nil {
		p.unknown = map[string]int{}
	}
	if len(p.unknown) < 16 {
		p.unknown[string(cutUTF8(validUTF8(action, new(int)), 64))]++
	}
}

// pkg returns the package an event belongs to.
func (p *goParser) pkg(ev *test2json.Event) (*goPkg, error) {
	raw := ev.Package.Raw
	if ev.Package.Esc || !isASCIIBytes(raw) {
		p.scratch = p.decode(ev.Package, p.scratch[:0])
		raw = p.scratch
	}
	if p.lastPkg != nil && p.lastPkg.name == string(raw) {
		return p.lastPkg, nil
	}
	pkg := p.pkgs[string(raw)]
	if pkg == nil {
		name := string(raw)
		if err := p.keep.spend(len(name)); err != nil {
			return nil, err
		}
		pkg = &goPkg{
			name:    name,
			running: map[string]*goTest{},
			output:  textcap.Field{Max: p.lim.MaxField},
		}
		if name != "" {
			pkg.prefix = name + "::"
		} else {
			p.noPkg = true
		}
		p.pkgs[string(raw)] = pkg
		p.order = append(p.order, pkg)
	}
	p.lastPkg = pkg
	return pkg, nil
}

func (p *goParser) pkgEvent(pkg *goPkg, action []byte, ev *test2json.Event) error {
	switch string(action) {
	case "output":
		p.scratch = ev.Output.Decode(p.scratch[:0])
		pkg.output.Write(p.scratch)
	case "pass", "skip":
		pkg.terminal = string(action)
		pkg.output = textcap.Field{Max: p.lim.MaxField} // only a failed package's output is kept
	case "fail":
		pkg.terminal = "fail"
		if len(ev.FailedBuild.Raw) > 0 {
			pkg.failedBuild = string(ev.FailedBuild.Decode(nil))
		}
	case "start", "run", "pause", "cont", "bench", "attr":
	default:
		p.unknownAction(action)
	}
	return nil
}

func (p *goParser) build(ev *test2json.Event, failed bool) error {
	ip := string(ev.ImportPath.Decode(nil))
	bd := p.builds[ip]
	if bd == nil {
		bd = &goBuild{importPath: ip, output: textcap.Field{Max: p.lim.MaxField}}
		p.builds[ip] = bd
		p.builtOrder = append(p.builtOrder, bd)
	}
	if failed {
		bd.failed = true
		return nil
	}
	p.scratch = ev.Output.Decode(p.scratch[:0])
	bd.output.Write(p.scratch)
	return nil
}

func (p *goParser) newGoTest() *goTest {
	var t *goTest
	if n := len(p.free); n > 0 {
		t, p.free = p.free[n-1], p.free[:n-1]
		t.out.Reset()
		t.ran, t.hasOut = false, false
	} else {
		t = &goTest{out: textcap.Field{Max: p.lim.MaxField}}
	}
	t.seq = p.seq
	p.seq++
	return t
}

// testOutput keeps what a test printed, minus the lines the testing
// package writes to frame it, for the message of a failed or skipped test.
func (p *goParser) testOutput(t *goTest, ev *test2json.Event) {
	if isFramingLine(ev.Output.Raw) {
		return
	}
	p.scratch = p.decode(ev.Output, p.scratch[:0])
	t.out.Write(p.scratch)
	t.hasOut = true
}

// isFramingLine recognises "=== RUN", "=== PAUSE", "=== CONT", "=== NAME",
// "=== ATTR" and "--- PASS/FAIL/SKIP:" (indented for subtests) in a raw
// Output value.
func isFramingLine(raw []byte) bool {
	for len(raw) > 0 && raw[0] == ' ' {
		raw = raw[1:]
	}
	if len(raw) < 8 {
		return false
	}
	switch string(raw[:4]) {
	case "=== ":
		rest := raw[4:]
		return bytes.HasPrefix(rest, []byte("RUN")) || bytes.HasPrefix(rest, []byte("PAUSE")) ||
			bytes.HasPrefix(rest, []byte("CONT")) || bytes.HasPrefix(rest, []byte("NAME")) || bytes.HasPrefix(rest, []byte("ATTR"))
	case "--- ":
		rest := raw[4:]
		return bytes.HasPrefix(rest, []byte("PASS:")) || bytes.HasPrefix(rest, []byte("FAIL:")) || bytes.HasPrefix(rest, []byte("SKIP:"))
	}
	return false
}

func (p *goParser) finish(pkg *goPkg, name []byte, action string) error {
	if depth := bytes.Count(name, []byte("/")); depth >= p.lim.MaxDepth {
		return rmerr.New(rmerr.ReportLimit, "go-json line %d: test %s is nested %d subtests deep, more than %d (Limits.MaxDepth)",
			p.lr.line, quote.Text(name), depth, p.lim.MaxDepth-1).WithHint("flatten the subtests, or split the suite")
	}
	status := goPassed
	switch action {
	case "fail":
		status = goFailed
		pkg.failed = true
	case "skip":
		status = goSkipped
	}
	t := pkg.running[string(name)]
	if t != nil {
		delete(pkg.running, string(name))
	}
	err := p.record(pkg, name, status, t, "")
	if t != nil {
		p.free = append(p.free, t)
	}
	return err
}

// record adds a finished test. Failed and skipped tests keep their output
// as message, after prefix.
func (p *goParser) record(pkg *goPkg, name []byte, status goStatus, t *goTest, prefix string) error {
	if p.recs.n >= p.lim.MaxTests {
		return rmerr.New(rmerr.ReportLimit, "more than %d tests (Limits.MaxTests)", p.lim.MaxTests).
			WithHint("split the test run into several reports")
	}
	p.idBuf = append(append(p.idBuf[:0], pkg.prefix...), name...)
	id, err := p.keep.id(p.idBuf)
	if err != nil {
		return err
	}
	rec := goRec{id: id, status: status}
	if status != goPassed && (prefix != "" || t != nil && t.hasOut) {
		var x goExtra
		if t != nil && t.hasOut {
			if x.message, err = p.keep.fromCap(&t.out, true, func() string { return fmt.Sprintf("output of %s", quote.String(string(id))) }); err != nil {
				return err
			}
			x.file, x.line = goLocation(x.message)
		}
		if prefix != "" {
			x.message = cutUTF8(strings.TrimSuffix(prefix+"\n"+x.message, "\n"), p.lim.MaxField)
		}
		p.extras = append(p.extras, x)
		rec.extra = int32(len(p.extras))
	}
	p.recs.add(rec)
	return nil
}

// goLocation finds the first "name.go:N:" that t.Log / t.Error print.
func goLocation(msg string) (string, int) {
	for len(msg) > 0 {
		line := msg
		if i := bytes.IndexByte([]byte(msg), '\n'); i >= 0 {
			line, msg = msg[:i], msg[i+1:]
		} else {
			msg = ""
		}
		f := bytes.TrimLeft([]byte(line), " \t")
		colon := bytes.IndexByte(f, ':')
		if colon <= 3 || !bytes.HasSuffix(f[:colon], []byte(".go")) || bytes.ContainsAny(f[:colon], " \t") {
			continue
		}
		rest := f[colon+1:]
		end := bytes.IndexByte(rest, ':')
		if end <= 0 {
			continue
		}
		if n, err := strconv.Atoi(string(rest[:end])); err == nil && n > 0 {
			return string(f[:colon]), n
		}
	}
	return "", 0
}
