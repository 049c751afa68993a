package report

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"github.com/runmill/verify/pkg/report/internal/quote"
	"github.com/runmill/verify/pkg/report/internal/textcap"
	"github.com/runmill/verify/pkg/rmerr"
)

// The end of a JUnit report: the records become the Inventory, checked
// against what the suites claimed.

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

func (b *junitBuilder) finish() (*Inventory, error) {
	b.dedup()
	if len(b.dupExtra) > 0 && !b.allowDup {
		first := int32(-1)
		for i := range b.dupExtra {
			if first < 0 || i < first {
				first = i
			}
		}
		msg := fmt.Sprintf("duplicate test id %s: it occurs %d times", quote.String(b.id(b.rec(first))), b.dupExtra[first]+1)
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
	if len(b.loaded) == b.n {
		return nil, rmerr.New(rmerr.ReportEmpty, "the report holds no test: its %d <testcase> element(s) are files node:test loaded that defined no test (first: %s); zero tests is not a pass",
			b.n, quote.String(slices.Min(b.loaded))).
			WithHint("check that the test command found the test files (node --test's patterns, the paths it is given) and that they call test()")
	}
	if b.claimed != nil {
		b.claimed.Shown = b.shown + int64(len(b.faults))
	}
	inv := &Inventory{Format: JUnit, Identity: b.identity, Tests: make([]Test, b.n-len(b.loaded)), Faults: b.faults, Claims: b.claimed}
	k := 0
	for i := range b.n {
		r := b.rec(int32(i))
		if r.loadedFile() {
			continue
		}
		t := &inv.Tests[k]
		k++
		t.ID, t.Line, t.Flaky = TestID(b.id(r)), r.line(), r.flaky()
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
	inv.Counts.Total = len(inv.Tests)
	finishFiles(inv, b.loaded)
	b.recs, b.blocks = nil, nil
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
		listDuplicates(inv)
	}
	return inv, nil
}

func jbShort(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		f := textcap.Field{Buf: []byte(s[:120]), H: sha256.New()}
		s = string(f.Text()) + "…"
	}
	return s
}
