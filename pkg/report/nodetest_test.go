package report_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// nodeRoot is where testdata/recorded's node:test reports were written.
const nodeRoot = "/tmp/node-ids"

// nodeResult renders an inventory as "id=status" per test, then
// "file <path>" per loaded file and "dup <id>" per repeated id.
func nodeResult(inv *report.Inventory) []string {
	out := junitResult(inv)
	for _, f := range inv.Files {
		out = append(out, "file "+f)
	}
	for _, d := range inv.Duplicates {
		out = append(out, "dup "+string(d))
	}
	return out
}

// parsedAsWanted holds a parse to the error a case wants (code and a
// substring), or to none; it reports whether an inventory is there to check.
func parsedAsWanted(t *testing.T, err error, code rmerr.Code, msg string) bool {
	t.Helper()
	if code != "" {
		if err == nil || rmerr.CodeOf(err) != code || !strings.Contains(err.Error(), msg) {
			t.Fatalf("error %v, want %s containing %q", err, code, msg)
		}
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// TestNodeTestRecorded: what node:test's reporters write (Node 20, 22 and
// 24.11, testdata/recorded/README.md) and the ids runmill reads from it —
// the file in the id where the reporter names it, the helper recorded as a
// file, TODO skipped.
func TestNodeTestRecorded(t *testing.T) {
	// The helper and the TODOs read the same in every case.
	tail := []string{"file test/helpers.js"}
	for _, c := range []struct {
		name, file string
		format     report.Format
		opts       report.Options
		want       []string
		files      string // the loaded file, test/helpers.js when ""
		code       rmerr.Code
		err        string
	}{
		// Node 24.11 writes file=: the same name in two files is two tests.
		{name: "24.11 junit", file: "node24.11-junit.xml", format: report.JUnit, opts: report.Options{Root: nodeRoot},
			want: []string{"test/a.test.js::rounds=passed", "test/a.test.js::adds=passed", "test/a.test.js::refunds=skipped",
				"test/a.test.js::exports=skipped", "test/a.test.js::needs the network=skipped", "test/b.test.js::rounds=passed"}},
		{name: "24.11 junit suite-path", file: "node24.11-junit.xml", format: report.JUnit, opts: report.Options{Root: nodeRoot, Identity: report.IdentitySuitePath},
			want: []string{"test/a.test.js::rounds=passed", "cart > test/a.test.js::adds=passed", "test/a.test.js::refunds=skipped",
				"test/a.test.js::exports=skipped", "test/a.test.js::needs the network=skipped", "test/b.test.js::rounds=passed"}},
		{name: "24.11 junit without a root keeps the absolute file", file: "node24.11-junit.xml", format: report.JUnit, files: "/tmp/node-ids/test/helpers.js",
			want: []string{"/tmp/node-ids/test/a.test.js::rounds=passed", "/tmp/node-ids/test/a.test.js::adds=passed", "/tmp/node-ids/test/a.test.js::refunds=skipped",
				"/tmp/node-ids/test/a.test.js::exports=skipped", "/tmp/node-ids/test/a.test.js::needs the network=skipped", "/tmp/node-ids/test/b.test.js::rounds=passed"}},
		{name: "24.11 junit under another root", file: "node24.11-junit.xml", format: report.JUnit, opts: report.Options{Root: "/tmp/node"}, files: "/tmp/node-ids/test/helpers.js",
			want: []string{"/tmp/node-ids/test/a.test.js::rounds=passed", "/tmp/node-ids/test/a.test.js::adds=passed", "/tmp/node-ids/test/a.test.js::refunds=skipped",
				"/tmp/node-ids/test/a.test.js::exports=skipped", "/tmp/node-ids/test/a.test.js::needs the network=skipped", "/tmp/node-ids/test/b.test.js::rounds=passed"}},
		// Node 20 and 22 name no file: the two roundses are one id, which a
		// baseline keeps twice (issue 24: repeats keep authority by count).
		{name: "20 junit", file: "node20.20-junit.xml", format: report.JUnit, opts: report.Options{Root: nodeRoot},
			code: rmerr.ReportIdentity, err: `duplicate test id "test::rounds"`},
		{name: "20 junit baseline", file: "node20.20-junit.xml", format: report.JUnit, opts: report.Options{Root: nodeRoot, AllowDuplicateIDs: true},
			want: []string{"test::rounds=passed", "test::adds=passed", "test::refunds=skipped", "test::exports=skipped", "test::needs the network=skipped", "test::rounds=passed", "dup test::rounds"}},
		{name: "22 junit baseline", file: "node22.23-junit.xml", format: report.JUnit, opts: report.Options{Root: nodeRoot, AllowDuplicateIDs: true},
			want: []string{"test::rounds=passed", "test::adds=passed", "test::refunds=skipped", "test::exports=skipped", "test::needs the network=skipped", "test::rounds=passed", "dup test::rounds"}},
		// The reporter of docs/reports.md gives Node 20 the ids of 24.11.
		{name: "20 junit with the file in the classname", file: "node20.20-junit-file-classname.xml", format: report.JUnit,
			opts: report.Options{Root: nodeRoot, Identity: report.IdentitySuitePath},
			want: []string{"test/a.test.js::rounds=passed", "cart > test/a.test.js::adds=passed", "test/a.test.js::refunds=skipped",
				"test/a.test.js::exports=skipped", "test/a.test.js::needs the network=skipped", "test/b.test.js::rounds=passed"}},
		// TAP names no file in any version.
		{name: "24.11 tap", file: "node24.11-tap.tap", format: report.TAP, opts: report.Options{Root: nodeRoot, Identity: report.IdentitySuitePath},
			code: rmerr.ReportIdentity, err: `test id "rounds" occurs 2 times`},
		{name: "24.11 tap baseline", file: "node24.11-tap.tap", format: report.TAP, opts: report.Options{Root: nodeRoot, Identity: report.IdentitySuitePath, AllowDuplicateIDs: true},
			want: []string{"rounds=passed", "cart=passed", "cart > adds=passed", "refunds=skipped", "exports=skipped", "needs the network=skipped", "rounds=passed", "dup rounds"}},
		{name: "22 tap baseline", file: "node22.23-tap.tap", format: report.TAP, opts: report.Options{Root: nodeRoot, Identity: report.IdentitySuitePath, AllowDuplicateIDs: true},
			want: []string{"rounds=passed", "cart=passed", "cart > adds=passed", "refunds=skipped", "exports=skipped", "needs the network=skipped", "rounds=passed", "dup rounds"}},
		{name: "20 tap baseline", file: "node20.20-tap.tap", format: report.TAP, opts: report.Options{Root: nodeRoot, Identity: report.IdentitySuitePath, AllowDuplicateIDs: true},
			want: []string{"rounds=passed", "cart=passed", "cart > adds=passed", "refunds=skipped", "exports=skipped", "needs the network=skipped", "rounds=passed", "dup rounds"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := os.Open("testdata/recorded/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			inv, err := report.Parse(f, c.format, c.opts)
			if !parsedAsWanted(t, err, c.code, c.err) {
				return
			}
			tail := tail
			if c.files != "" {
				tail = []string{"file " + c.files}
			}
			want := c.want
			if !strings.HasPrefix(want[len(want)-1], "dup ") {
				want = append(want, tail...)
			} else {
				want = append(want[:len(want)-1:len(want)-1], append(tail, want[len(want)-1])...)
			}
			if got := nodeResult(inv); !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %q\nwant %q", got, want)
			}
			if inv.FileCount != 1 || inv.Counts.Total != len(inv.Tests) {
				t.Errorf("file count %d, counts %+v for %d tests", inv.FileCount, inv.Counts, len(inv.Tests))
			}
		})
	}
}

// TestNodeTestRules: the edges of node:test's rules (nodetest.go) — what is
// a loaded file and what stays a test, which classname the file replaces,
// and a TODO against every other result.
func TestNodeTestRules(t *testing.T) {
	const root = "/runmill/checkout"
	junit := func(cases string) string { return "<testsuites>\n" + cases + "</testsuites>\n" }
	tap := func(lines ...string) string { return "TAP version 13\n" + strings.Join(lines, "\n") + "\n" }
	for _, c := range []struct {
		name   string
		format report.Format
		doc    string
		want   []string
		code   rmerr.Code
		err    string
	}{
		// Loaded files.
		{name: "junit: node 20's absolute name", format: report.JUnit,
			doc:  junit(`<testcase name="t" classname="test"/><testcase name="/runmill/checkout/test/helpers/db.mjs" classname="test"/>`),
			want: []string{"test::t=passed", "file test/helpers/db.mjs"}},
		{name: "junit: a TypeScript helper, relative, file= (24.11)", format: report.JUnit,
			doc:  junit(`<testcase name="t" classname="test" file="/runmill/checkout/test/a.test.ts"/><testcase name="test/setup.ts" classname="test" file="/runmill/checkout/test/setup.ts"/>`),
			want: []string{"test/a.test.ts::t=passed", "file test/setup.ts"}},
		{name: "junit: a file named like a test that defines none", format: report.JUnit,
			doc:  junit(`<testcase name="t" classname="test"/><testcase name="src/cart.test.cjs" classname="test"/>`),
			want: []string{"test::t=passed", "file src/cart.test.cjs"}},
		{name: "junit: only loaded files is zero tests", format: report.JUnit,
			doc:  junit(`<testcase name="test/a.js" classname="test"/><testcase name="/runmill/checkout/test/b.js" classname="test"/>`),
			code: rmerr.ReportEmpty, err: `2 <testcase> element(s) are files node:test loaded that defined no test (first: "test/a.js")`},
		{name: "tap: node 20's absolute name after its Subtest header", format: report.TAP,
			doc:  tap("# Subtest: t", "ok 1 - t", "# Subtest: /runmill/checkout/test/helpers.js", "ok 2 - /runmill/checkout/test/helpers.js", "1..2"),
			want: []string{"t=passed", "file test/helpers.js"}},
		{name: "tap: the file's number is its place among files", format: report.TAP,
			doc:  tap("# Subtest: a", "ok 1 - a", "# Subtest: b", "ok 2 - b", "# Subtest: test/helpers.js", "ok 1 - test/helpers.js", "1..3"),
			want: []string{"a=passed", "b=passed", "file test/helpers.js"}},
		{name: "tap: only loaded files is zero tests", format: report.TAP,
			doc:  tap("# Subtest: test/helpers.js", "ok 1 - test/helpers.js", "1..1"),
			code: rmerr.ReportEmpty, err: `1 test point(s) are files node:test loaded`},
		// Tests that stay tests.
		{name: "junit: a test named after a file node does not discover", format: report.JUnit,
			doc:  junit(`<testcase name="examples/a.js" classname="test"/><testcase name="/runmill/checkout/lib/b.js" classname="test"/>`),
			want: []string{"test::examples/a.js=passed", "test::/runmill/checkout/lib/b.js=passed"}},
		{name: "junit: a helper that threw while loading stays a failed test", format: report.JUnit,
			doc:  junit(`<testcase name="t" classname="test"/><testcase name="test/helpers.js" classname="test" failure="x"><failure message="x"/></testcase>`),
			want: []string{"test::t=passed", "test::test/helpers.js=failed"}},
		{name: "junit: inside a suite", format: report.JUnit,
			doc:  junit(`<testsuite name="s"><testcase name="test/helpers.js" classname="test"/></testsuite>`),
			want: []string{"s > test::test/helpers.js=passed"}},
		{name: "junit: another classname", format: report.JUnit,
			doc:  junit(`<testcase name="test/helpers.js" classname="lint"/>`),
			want: []string{"lint::test/helpers.js=passed"}},
		{name: "junit: file= of another file", format: report.JUnit,
			doc:  junit(`<testcase name="test/helpers.js" classname="test" file="/runmill/checkout/test/a.test.js"/>`),
			want: []string{"test/a.test.js::test/helpers.js=passed"}},
		{name: "tap: eslint names files without Subtest headers", format: report.TAP,
			doc:  tap("ok 1 - /runmill/checkout/test/a.test.js", "ok 2 - test/b.test.js", "1..2"),
			want: []string{"/runmill/checkout/test/a.test.js=passed", "test/b.test.js=passed"}},
		{name: "tap: a failing or skipped file point stays a test", format: report.TAP,
			doc:  tap("# Subtest: test/a.js", "not ok 1 - test/a.js", "# Subtest: test/b.js", "ok 2 - test/b.js # SKIP", "1..2"),
			want: []string{"test/a.js=failed", "test/b.js=skipped"}},
		{name: "tap: a file point with subtests is a test (node-tap)", format: report.TAP,
			doc:  tap("# Subtest: test/a.js", "    ok 1 - works", "    1..1", "ok 1 - test/a.js # time=3ms", "1..1"),
			want: []string{"test/a.js=passed", "test/a.js > works=passed"}},
		{name: "tap: the header names another test", format: report.TAP,
			doc:  tap("# Subtest: x", "ok 1 - test/a.js", "1..1"),
			want: []string{"test/a.js=passed"}},
		// The file replaces only node's placeholder classname.
		{name: "junit: pytest's file= changes nothing", format: report.JUnit,
			doc:  junit(`<testcase classname="tests.test_cart" name="test_total" file="tests/test_cart.py"/>`),
			want: []string{"tests.test_cart::test_total=passed"}},
		{name: "junit: a placeholder classname without file=", format: report.JUnit,
			doc:  junit(`<testcase classname="test" name="a"/>`),
			want: []string{"test::a=passed"}},
		// TODO.
		{name: "junit: a TODO is skipped whatever else it holds", format: report.JUnit,
			doc: junit(`<testcase name="a" classname="test"><skipped type="todo" message="true"/><failure message="x"/></testcase>` +
				`<testcase name="b" classname="test"><error message="y"/><skipped type="todo"/></testcase>` +
				`<testcase name="c" classname="test" status="failed"><skipped type="todo"/></testcase>` +
				`<testcase name="d" classname="test"><skipped type="skipped"/><failure message="z"/></testcase>`),
			want: []string{"test::a=skipped", "test::b=skipped", "test::c=skipped", "test::d=failed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			inv, err := report.Parse(strings.NewReader(c.doc), c.format, report.Options{Root: root, Identity: report.IdentitySuitePath})
			if !parsedAsWanted(t, err, c.code, c.err) {
				return
			}
			if got := nodeResult(inv); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestNodeTodoClaims: node counts a throwing TODO among its suite's
// failures=; its <failure> element is still shown, so the claim does not
// exceed what the file shows and the report does not fail for it.
func TestNodeTodoClaims(t *testing.T) {
	doc := `<testsuites><testsuite name="cart" tests="2" failures="1" skipped="1">
<testcase name="adds" classname="test"/>
<testcase name="refunds" classname="test" failure="x"><skipped type="todo" message="later"/><failure type="testCodeFailure" message="x">boom</failure></testcase>
</testsuite></testsuites>`
	inv, err := report.Parse(strings.NewReader(doc), report.JUnit, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if claimed, seen, more := inv.ClaimsMoreFailures(); more || claimed != 1 || seen != 1 {
		t.Errorf("claims %d, seen %d, more %v", claimed, seen, more)
	}
	if inv.Counts != (report.Counts{Total: 2, Passed: 1, Skipped: 1}) {
		t.Errorf("counts %+v", inv.Counts)
	}
}
