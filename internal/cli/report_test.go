package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/cli"
	"github.com/runmill/verify/pkg/report"
)

func TestReportInventory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flat := write("flat.tap", "TAP version 14\n1..2\nok 1 - adds\nnot ok 2 - divides # TODO zero\n")
	nested := write("nested.tap", "# Subtest: math\n    1..1\n    ok 1 - adds\nok 1 - math\n1..1\n")
	gojson := write("go.json", `{"Action":"pass","Package":"p","Test":"TestA"}`+"\n"+`{"Action":"pass","Package":"p"}`+"\n")
	empty := write("empty.tap", "")
	// node:test on Node 24.11 names each test's file absolutely, and a
	// helper that defines no test by its path (pkg/report nodetest.go).
	node := write("node.xml", `<testsuites><testcase name="rounds" classname="test" file="/src/shop/test/a.test.js"/>`+
		`<testcase name="test/helpers.js" classname="test" file="/src/shop/test/helpers.js"/></testsuites>`)

	tests := []struct {
		name     string
		args     []string
		stdin    string
		code     int
		ids      []string // expected inventory on stdout
		stderr   string   // fragment expected on stderr
		noStdout bool
	}{
		{name: "tap", args: []string{"--format", "tap", flat}, ids: []string{"adds", "divides"}},
		{name: "flags after the file", args: []string{flat, "--format", "tap"}, ids: []string{"adds", "divides"}},
		{name: "go-json", args: []string{"--format", "go-json", gojson}, ids: []string{"p::TestA"}},
		{name: "stdin", args: []string{"--format=go-json", "-"}, stdin: `{"Action":"skip","Package":"q","Test":"TestS"}` + "\n", ids: []string{"q::TestS"}},
		{name: "suite-path accepts subtests", args: []string{"--format", "tap", "--identity", "suite-path", nested}, ids: []string{"math", "math > adds"}},
		{name: "nested TAP is an invalid report by default", args: []string{"--format", "tap", nested}, code: 1, stderr: "RM-REPORT-002", noStdout: true},
		{name: "an empty report", args: []string{"--format", "tap", empty}, code: 1, stderr: "empty.tap: RM-REPORT-005", noStdout: true},
		{name: "missing --format", args: []string{flat}, code: 2, stderr: "missing required flag(s) --format", noStdout: true},
		{name: "unsupported format", args: []string{"--format", "json", flat}, code: 2, stderr: "RM-USAGE-001", noStdout: true},
		{name: "unknown identity", args: []string{"--format", "tap", "--identity", "guess", flat}, code: 2, stderr: `unknown --identity "guess"`, noStdout: true},
		{name: "no file", args: []string{"--format", "tap"}, code: 2, stderr: "exactly one report FILE", noStdout: true},
		{name: "two files", args: []string{"--format", "tap", flat, flat}, code: 2, stderr: "exactly one report FILE", noStdout: true},
		{name: "a file that does not exist", args: []string{"--format", "tap", filepath.Join(dir, "nope")}, code: 2, stderr: "opening report", noStdout: true},
		{name: "node:test files relative to --root", args: []string{"--format", "junit", "--root", "/src/shop", node}, ids: []string{"test/a.test.js::rounds"}},
		{name: "node:test files outside --root stay absolute", args: []string{"--format", "junit", "--root", "/elsewhere", node}, ids: []string{"/src/shop/test/a.test.js::rounds"}},
		{name: "help", args: []string{"--help"}, code: 0, noStdout: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := cli.Run(context.Background(), append([]string{"report", "inventory"}, tc.args...),
				cli.IO{In: strings.NewReader(tc.stdin), Out: &out, Err: &errb})
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errb.String())
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Fatalf("stderr %q lacks %q", errb.String(), tc.stderr)
			}
			if tc.noStdout && out.Len() > 0 {
				t.Fatalf("stdout must stay empty on error, got %q", out.String())
			}
			if tc.ids == nil {
				return
			}
			var inv report.Inventory
			if err := json.Unmarshal(out.Bytes(), &inv); err != nil {
				t.Fatalf("stdout is not an inventory: %v\n%s", err, out.String())
			}
			var ids []string
			for _, tc := range inv.Tests {
				ids = append(ids, string(tc.ID))
			}
			if strings.Join(ids, "|") != strings.Join(tc.ids, "|") {
				t.Fatalf("ids %q, want %q", ids, tc.ids)
			}
			if inv.SHA256 == "" || inv.Bytes == 0 {
				t.Fatalf("inventory lacks its digest: %+v", inv)
			}
		})
	}
}

// The streamed output must be exactly what encoding the whole inventory
// with an indenting, HTML-unescaped json.Encoder gives.
func TestReportInventoryEncoding(t *testing.T) {
	invs := []*report.Inventory{
		{Format: report.TAP, SHA256: "ab", Bytes: 3, Tests: []report.Test{}},
		{Format: report.TAP, Identity: report.IdentitySuitePath, SHA256: "ab", Bytes: 3, Counts: report.Counts{Total: 2, Passed: 1, Failed: 1},
			Tests: []report.Test{
				{ID: "a > b <&>", Status: report.Passed},
				{ID: `"tests": null`, Status: report.Failed, Message: "m\n\"tests\": null", File: "f.go", Line: 3, Flaky: true},
				{ID: report.TestID(allRunes()), Status: report.Skipped, Message: "bad \xff utf-8 \u2028\u2029", Line: -1},
			},
			Faults: []report.Fault{{Scope: "report", Message: "Bail out!"}},
			Notes:  []string{`a note with "tests": null in it`}},
		{Format: report.JUnit, SHA256: "ab", Bytes: 3, Tests: specialAtEachOffset()},
	}
	for _, inv := range invs {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(inv); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := cli.WriteInventoryForTest(&got, inv); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("streamed encoding differs:\n got %s\nwant %s", got.String(), want.String())
		}
	}
}

// specialAtEachOffset puts each byte the encoder treats apart (controls,
// quote, backslash, DEL, the first byte of a multi-byte rune, an invalid
// byte, U+2028) at every offset of a run of plain ASCII, so the
// word-at-a-time path meets it in each lane.
func specialAtEachOffset() []report.Test {
	var tests []report.Test
	for _, sp := range []string{"\x00", "\x1f", "\"", "\\", "\x7f", " ", "~", "é", "\xff", "\u2028", "!", "#", "[", "]"} {
		for at := 0; at <= 17; at++ {
			id := strings.Repeat("a", at) + sp + strings.Repeat("b", 17-at)
			tests = append(tests, report.Test{ID: report.TestID(id), Status: report.Passed})
		}
	}
	return tests
}

// allRunes holds every control character, the JSON specials and a spread of
// other code points, to pin the hand-written string encoder to encoding/json.
func allRunes() string {
	var b strings.Builder
	for r := rune(0); r < 0x800; r++ {
		b.WriteRune(r)
	}
	for _, r := range []rune{0x2027, 0x2028, 0x2029, 0x202a, 0xfffd, 0xfeff, 0x1f600, 0x10ffff} {
		b.WriteRune(r)
	}
	return b.String()
}
