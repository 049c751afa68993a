package initpolicy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/testreq"

	"github.com/runmill/verify/internal/cli"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/golden"
	"github.com/runmill/verify/internal/initpolicy"
	"github.com/runmill/verify/internal/sandbox/sandboxtest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
)

// The acceptance test runs `runmill verify` for real: a private containerd
// with runc started here (or RUNMILL_CONTAINERD_ADDRESS). With CI=true a
// missing containerd or toolchain fails instead of skipping.
var (
	containerdAddress string
	noSandbox         string
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	return sandboxtest.Main(m, "the init acceptance test", &containerdAddress, &noSandbox)
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// need skips, or fails under CI=true, when a toolchain the sample needs is
// not on this machine.
func need(t *testing.T, what string, ok bool) {
	t.Helper()
	testreq.Need(t, ok, "%s is not available to the sandbox", what)
}

// copySample copies testdata/samples/NAME into the repository.
func copySample(t *testing.T, r *gittest.Repo, name string) {
	t.Helper()
	root := filepath.Join("testdata", "samples", name)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		r.Write(rel, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestInitThenVerifyProvesCoverage is the issue's acceptance item: `runmill
// init` on one sample repository per ecosystem writes a policy whose checks
// then produce proven coverage under a real `runmill verify` (containerd
// sandbox, network off, read-only checkout), at the base and at a candidate
// that adds a test — and the added test is in the candidate's inventory.
func TestInitThenVerifyProvesCoverage(t *testing.T) {
	host := initpolicy.LocalHost{PATH: os.Getenv("PATH"), Getenv: os.Getenv}
	for _, tc := range []struct {
		sample, tool string
		ready        func() bool // the toolchain the sample needs works here
		addPath      string
		add          string
		wantID       string // an id the candidate's report must hold
	}{
		{"go", "go", nil, "cart/one_test.go",
			"package cart\n\nimport \"testing\"\n\nfunc TestTotalOne(t *testing.T) {\n\tif Total(5) != 5 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n",
			"example.com/shop/cart::TestTotalOne"},
		{"node-test", "node", nil, "test/more.test.js",
			"const { describe, it } = require('node:test');\nconst assert = require('node:assert');\nconst { total } = require('../cart');\n\ndescribe('more', () => {\n  it('totals one item', () => assert.strictEqual(total([5]), 5));\n});\n",
			"more > test::totals one item"},
		{"pytest", "python3", func() bool {
			// init proves `python3 -m pytest` with the interpreter the
			// sandbox sees; without it the check is not written.
			t := host.Locate("python3")
			return t.Found() && t.Unusable == ""
		}, "tests/test_more.py",
			"from cart import total\n\n\ndef test_total_one():\n    assert total([5]) == 5\n",
			"tests.test_more::test_total_one"},
		{"cargo", "cargo", nil, "tests/more.rs",
			"#[test]\nfn totals_one() {\n    assert_eq!(shop::total(&[5]), 5);\n}\n",
			"tests/more.rs (more) > integration::totals_one"},
	} {
		t.Run(tc.sample, func(t *testing.T) {
			need(t, tc.tool, host.Locate(tc.tool).Found() && (tc.ready == nil || tc.ready()))
			if containerdAddress == "" {
				t.Skip(noSandbox)
			}
			r := gittest.New(t)
			copySample(t, r, tc.sample)
			opFile := filepath.Join(t.TempDir(), "policy.yaml")
			code, stdout, stderr := runCLI(t, "init", "--repo", r.Dir, "--operator-policy-out", opFile)
			if code != 0 || stdout != "" {
				t.Fatalf("init: exit %d stdout %q stderr %s", code, stdout, stderr)
			}
			checks, err := os.ReadFile(filepath.Join(r.Dir, ".runmill", "checks.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			golden.Bytes(t, filepath.Join("testdata", "golden", tc.sample+".checks.yaml"), checks)
			base := r.Commit("base with the generated policy")
			r.Checkout("pr", true)
			r.Write(tc.addPath, tc.add)
			cand := r.Commit("adds a test")

			code, stdout, stderr = runCLI(t, "verify", "--repo", r.Dir, "--base", base, "--candidate", cand,
				"--policy", opFile, "--out", t.TempDir(), "--containerd-address", containerdAddress, "--json")
			var sum struct {
				MergeReady bool               `json:"merge_ready"`
				Delivery   *evidence.Delivery `json:"delivery"`
			}
			if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Delivery == nil {
				t.Fatalf("verify: exit %d, stdout not a run summary (%v)\nstderr:\n%s", code, err, stderr)
			}
			phases := map[record.Phase]bool{}
			for _, c := range sum.Delivery.Checks {
				if c.Status != record.Passed || c.Coverage != record.Proven || c.Report == nil || c.Report.Inventory == nil {
					t.Errorf("%s (%s): status %s coverage %s, notes %v findings %+v\nstderr:\n%s", c.CheckID, c.Phase, c.Status, c.Coverage, c.Notes, c.Findings, stderr)
					continue
				}
				phases[c.Phase] = true
				if c.Phase == record.Candidate && !slices.ContainsFunc(c.Report.Inventory.Passed, func(id report.TestID) bool { return string(id) == tc.wantID }) {
					t.Errorf("candidate report lacks %q: %v", tc.wantID, c.Report.Inventory.Passed)
				}
			}
			if code != 0 || !sum.MergeReady || !phases[record.Baseline] || !phases[record.Candidate] {
				t.Fatalf("verify: exit %d merge-ready %v phases %v; reasons %+v\nstderr:\n%s", code, sum.MergeReady, phases, sum.Delivery.Verdict.Reasons(), stderr)
			}
		})
	}
}

// TestInitMochaFromNPM: a real Mocha project (package-lock.json committed,
// `npm ci` from the npm registry): init recognises the runner, writes the
// xunit reporter flags and `dependencies: npm`; the generated command writes a
// report pkg/report accepts; and `runmill verify` proves coverage once
// dependencies are prepared (internal/deps) from that install.
func TestInitMochaFromNPM(t *testing.T) {
	npm, err := exec.LookPath("npm")
	need(t, "npm", err == nil && initpolicy.LocalHost{PATH: os.Getenv("PATH"), Getenv: os.Getenv}.Locate("node").Visible != "")
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	r := gittest.New(t)
	copySample(t, r, "mocha")
	ci := exec.Command(npm, "ci", "--no-audit", "--no-fund")
	ci.Dir = r.Dir
	if out, err := ci.CombinedOutput(); err != nil {
		t.Fatalf("npm ci (the operator's step, from the npm registry): %v\n%s", err, out)
	}
	r.Commit("the project")
	opFile := filepath.Join(t.TempDir(), "policy.yaml")
	if code, _, stderr := runCLI(t, "init", "--repo", r.Dir, "--operator-policy-out", opFile); code != 0 ||
		!strings.Contains(stderr, "dependencies npm: the source checkout is at the base") {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	checks, err := os.ReadFile(filepath.Join(r.Dir, ".runmill", "checks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Bytes(t, filepath.Join("testdata", "golden", "mocha.checks.yaml"), checks)
	plan, err := initpolicy.Detect(os.DirFS(r.Dir))
	if err != nil || len(plan.Checks) != 1 || plan.Checks[0].Spec.Dependencies != "npm" {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	spec := plan.Checks[0].Spec

	// The generated command, run in the installed source checkout, writes
	// a report verification accepts, with the tests' ids.
	run := exec.Command("sh", "-c", spec.Run)
	run.Dir = r.Dir
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("generated command: %v\n%s", err, out)
	}
	f, err := os.Open(filepath.Join(r.Dir, spec.Report.Path))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := report.Parse(f, report.JUnit, report.Options{})
	f.Close()
	if err != nil {
		t.Fatalf("the generated reporter's output does not parse: %v", err)
	}
	if ids := fmt.Sprint(inv.Tests); inv.Counts.Passed != 2 || !strings.Contains(ids, "cart::totals two items") {
		t.Fatalf("report ids %s", ids)
	}
	if err := os.RemoveAll(filepath.Join(r.Dir, "reports")); err != nil {
		t.Fatal(err)
	}

	base := r.Commit("base with the generated policy")
	r.Checkout("pr", true)
	r.Write("test/more.test.js", "const assert = require('node:assert');\nconst { total } = require('../cart');\n\ndescribe('more', () => {\n  it('totals one item', () => assert.strictEqual(total([5]), 5));\n});\n")
	cand := r.Commit("adds a test")
	code, stdout, stderr := runCLI(t, "verify", "--repo", r.Dir, "--base", base, "--candidate", cand,
		"--policy", opFile, "--out", t.TempDir(), "--containerd-address", containerdAddress, "--json")
	var sum struct {
		MergeReady bool               `json:"merge_ready"`
		Delivery   *evidence.Delivery `json:"delivery"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Delivery == nil {
		t.Fatalf("verify: exit %d, stdout not a run summary (%v)\nstderr:\n%s", code, err, stderr)
	}
	for _, c := range sum.Delivery.Checks {
		t.Logf("%s (%s): status %s coverage %s exit %d findings %+v", c.CheckID, c.Phase, c.Status, c.Coverage, c.ExitCode, c.Findings)
		if c.Status != record.Passed || c.Coverage != record.Proven {
			t.Errorf("%s (%s): status %s coverage %s; findings %+v", c.CheckID, c.Phase, c.Status, c.Coverage, c.Findings)
		}
	}
	if len(sum.Delivery.Checks) != 2 || !sum.MergeReady || code != 0 {
		t.Fatalf("verify: exit %d merge-ready %v, %d check runs\nstderr:\n%s", code, sum.MergeReady, len(sum.Delivery.Checks), stderr)
	}
}
