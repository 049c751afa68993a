package explain_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
)

// Each line is what a real runner printed in the sandbox (issue 14's five
// projects, and the runners init writes templates for); none is the
// hand-made form of a pattern. The negative cases are output of honest
// failures, for which a hint would be a false lead.
func TestDiagnose(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string // causes, in order; nil: none
	}{
		{"go test mkdir in checkout", "    deadcode_test.go:41: mkdir test_deadcode: read-only file system\n", []string{explain.CauseReadOnly}},
		{"go test open in checkout", "--- FAIL: TestDeadcode (0.00s)\n    deadcode_test.go:44: open test_deadcode/main.go: no such file or directory\n", []string{explain.CauseReadOnly}},
		{"python EROFS", "E   OSError: [Errno 30] Read-only file system: '/runmill/checkout/.hypothesis'\n", []string{explain.CauseReadOnly}},
		{"node EACCES", "Error: EACCES: permission denied, open '/runmill/checkout/coverage/lcov.info'\n", []string{explain.CauseReadOnly}},
		{"go offline", "main.go:4:2: github.com/spf13/cobra@v1.8.0: module lookup disabled by GOPROXY=off\n", []string{explain.CauseOffline}},
		{"go missing sum", "go: updates to go.mod needed; to update it:\n\tgo mod tidy\nmissing go.sum entry for module providing package golang.org/x/sys/unix\n", []string{explain.CauseOffline}},
		{"npm offline", "npm error code ENOTCACHED\nnpm error request to https://registry.npmjs.org/left-pad failed: cache mode is 'only-if-cached' but no cached response is available.\n", []string{explain.CauseOffline}},
		{"node missing module", "Error: Cannot find module 'commander'\nRequire stack:\n- /runmill/checkout/index.js\n", []string{explain.CauseOffline}},
		{"pip", "ERROR: Could not find a version that satisfies the requirement requests (from versions: none)\nERROR: No matching distribution found for requests\n", []string{explain.CauseOffline}},
		{"python import", "E   ModuleNotFoundError: No module named 'attr'\n", []string{explain.CausePyImport}},
		{"pytest collection failure", "collection failure: ModuleNotFoundError: No module named 'calc'\n", []string{explain.CausePyImport}},
		{"dns", "curl: (6) Could not resolve host: example.com\n", []string{explain.CauseNoNetwork}},
		{"node dns", "Error: getaddrinfo EAI_AGAIN registry.npmjs.org\n", []string{explain.CauseNoNetwork}},
		{"go dial", "dial tcp: lookup proxy.golang.org on 127.0.0.53:53: dial udp 127.0.0.53:53: connect: network is unreachable\n", []string{explain.CauseNoNetwork}},
		{"sh not found", "sh: 1: cargo: not found\n", []string{explain.CauseNoCommand}},
		{"bash not found", "bash: line 1: pytest: command not found\n", []string{explain.CauseNoCommand}},
		{"env not found", "/usr/bin/env: 'node': No such file or directory\n", []string{explain.CauseNoCommand}},
		{"cargo locked", "error: cannot create the lock file /runmill/checkout/Cargo.lock because --locked was passed to prevent this\nhelp: to generate the lock file without accessing the network, remove the --locked flag and use --offline instead.\n", []string{explain.CauseLockfile}},
		{"cargo needs update", "error: the lock file /runmill/checkout/Cargo.lock needs to be updated but --locked was passed to prevent this\n", []string{explain.CauseLockfile}},
		{"commander unknown option", "error: unknown option '--ci'\n", []string{explain.CauseUnknownFlag}},
		{"argparse", "usage: cli.py [-h] [--verbose]\ncli.py: error: unrecognized arguments: --junitxml=reports/pytest.xml\n", []string{explain.CauseUnknownFlag}},
		{"two causes", "sh: 1: node: not found\nmkdir reports/x: read-only file system\n", []string{explain.CauseReadOnly, explain.CauseNoCommand}},

		// Honest failures: no hint.
		{"assertion", "--- FAIL: TestAdd (0.00s)\n    add_test.go:9: got 3, want 4\nFAIL\n", nil},
		{"missing fixture outside checkout", "open /etc/runmill/fixture.json: no such file or directory\n", nil},
		{"relative read without dir", "open golden.json: no such file or directory\n", nil},
		{"python assertion", "E       AssertionError: assert 3 == 4\n", nil},
		{"mocha", "  1) cart\n       totals:\n     AssertionError [ERR_ASSERTION]: 3 == 4\n", nil},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, h := range explain.Diagnose(tc.text) {
				got = append(got, h.Cause)
				if h.Fix == "" || h.Line == "" {
					t.Errorf("hint %+v: no line or fix", h)
				}
				if strings.ContainsAny(h.Line, "\n\x1b") {
					t.Errorf("hint line %q is not escaped", h.Line)
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("causes %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDiagnoseEscapes(t *testing.T) {
	hs := explain.Diagnose("::error::x read-only file system \x1b[2K\x1b[1A")
	if len(hs) != 1 || strings.HasPrefix(hs[0].Line, "::") || strings.Contains(hs[0].Line, "\x1b") {
		t.Fatalf("hints %+v: the quoted line must be escaped", hs)
	}
}

func TestReporterAdvice(t *testing.T) {
	for cmd, want := range map[string]string{
		"go test ./...":          "go-json",
		"python3 -m pytest":      "--junitxml",
		"node --test tests/":     "--test-reporter=junit",
		"npx jest --ci":          "jest-junit",
		"make check":             "docs/reports.md",
		"cargo test --workspace": "cargo template",
	} {
		if got := explain.ReporterAdvice(cmd); !strings.Contains(got, want) {
			t.Errorf("ReporterAdvice(%q) = %q, want it to mention %q", cmd, got, want)
		}
	}
}

// TestExplainVagueFailure: node:test records a file that fails to load as
// one failed test named by its path with the message "test failed"; the
// error is only in the output, 30-odd lines before node's summary. The Why
// block quotes the error, not the summary (found trying runmill on a real
// node:test project: docs/adoption.md).
func TestExplainVagueFailure(t *testing.T) {
	var out strings.Builder
	out.WriteString("TAP version 13\n# Subtest: /runmill/checkout/test/web-platform.js\n")
	out.WriteString("node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\n")
	out.WriteString("Error: Cannot find module './web-platform-tests/mime-types.json'\n")
	for i := range 30 {
		fmt.Fprintf(&out, "    at Module._load (node:internal/modules/cjs/loader:%d:12)\n", 1000+i)
	}
	out.WriteString("ℹ tests 137\nℹ suites 12\nℹ pass 136\nℹ fail 1\nℹ cancelled 0\nℹ skipped 0\nℹ todo 0\nℹ duration_ms 812.5\n")
	dir := t.TempDir()
	sum := sha256.Sum256([]byte(out.String()))
	hexSum := hex.EncodeToString(sum[:])
	if err := os.MkdirAll(filepath.Join(dir, "artifacts", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "artifacts", "sha256", hexSum), []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	id := report.TestID("test::/runmill/checkout/test/web-platform.js")
	d := &evidence.Delivery{
		Manifest: discovery.Manifest{Checks: []discovery.Check{{ID: "unit", Required: true, Command: "node --test",
			Report: &policy.ReportSpec{Path: "reports/unit.xml", Format: "junit"}}}},
		Checks: []record.CheckRun{{CheckID: "unit", Phase: record.Candidate, Executor: record.Orchestrator,
			Started: true, ExitCode: 1, Status: record.Failed, Coverage: record.Proven,
			Stdout: record.Output{SHA256: hexSum, Size: int64(out.Len()), Artifact: "sha256/" + hexSum, ArtifactSize: int64(out.Len())},
			Report: &record.ReportRecord{Inventory: &record.Inventory{Passed: []report.TestID{"a"}, Failed: []report.TestID{id}},
				FailedTests: []record.FailedTest{{ID: id, Message: "test failed"}}}}},
	}
	xs := explain.Checks(dir, d)
	if len(xs) != 1 || !strings.Contains(strings.Join(xs[0].StdoutTail, "\n"), "Cannot find module './web-platform-tests/mime-types.json'") {
		t.Fatalf("the error is not quoted: %+v", xs)
	}
	if strings.Contains(strings.Join(xs[0].StdoutTail, "\n"), "ℹ tests") {
		t.Errorf("the runner's summary is quoted instead of the error: %q", xs[0].StdoutTail)
	}
	// An informative message needs no output.
	d.Checks[0].Report.FailedTests[0].Message = "expected 2, got 3"
	if xs := explain.Checks(dir, d); len(xs) != 1 || len(xs[0].StdoutTail) != 0 {
		t.Errorf("output quoted beside an informative failure: %+v", xs)
	}
}
