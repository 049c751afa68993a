package engine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/verdict"
)

// Issue 25 item 5: the change's own test code forges its run from inside
// the test process. Each lie below works — the run exits 0 and its report
// shows every test passed — so only the tamper scan (docs/outcome.md §
// Tamper) stands between it and MERGE-READY; the honest shapes beside it
// land.

const pytestPolicy = `checks:
  - id: unit
    run: python3 -m pytest -q -p no:cacheprovider --junitxml=reports/unit.xml tests
    report: {path: reports/unit.xml, format: junit}
    timeout: 120s
`

const pyCalc = "def test_adds():\n    assert 1 + 1 == 2\n\ndef test_subtracts():\n    assert 3 - 1 == 2\n"

// atexitForgery rewrites pytest's JUnit report after pytest wrote it and
// ends the process with 0. The report path is built from parts, so no
// literal names it: the atexit handler alone is what gives it away.
const atexitForgery = `import atexit
import os
import re


def _rewrite():
    path = os.path.join("reports", "unit" + ".xml")
    with open(path) as f:
        xml = f.read()
    xml = re.sub(r"<failure.*?</failure>", "", xml, flags=re.S)
    xml = re.sub(r'failures="\d+"', 'failures="0"', xml)
    with open(path, "w") as f:
        f.write(xml)
    os._exit(0)


atexit.register(_rewrite)
`

// honestConftest: fixtures, a finalizer, markers added at collection and a
// new order — everything a real conftest.py does that the scan accepts.
const honestConftest = `import pytest


@pytest.fixture
def numbers():
    data = [1, 2, 3]
    yield data
    data.clear()


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("work")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "slow" in item.name:
            item.add_marker(pytest.mark.slow)
    items[:] = sorted(items, key=lambda i: i.name)
`

const goReportPolicy = `checks:
  - id: unit
    run: cat testdata/go.json > reports/unit.json
    report: {path: reports/unit.json, format: go-json}
`

const goCalc = "package calc\n\nfunc Add(a, b int) int { return a + b }\n"

const goCalcTest = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 1) != 2 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n"

// goFailing adds a test that fails.
const goFailing = goCalcTest + "\nfunc TestAddMore(t *testing.T) {\n\tif Add(2, 2) != 5 {\n\t\tt.Fatal(\"got\", Add(2, 2), \"want 5\")\n\t}\n}\n"

// filteringTestMain runs the tests with their output piped through a
// filter that turns every FAIL into PASS, and exits 0.
const filteringTestMain = `package calc

import (
	"bufio"
	"io"
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	r, w, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			io.WriteString(stdout, strings.ReplaceAll(sc.Text(), "FAIL", "PASS")+"\n")
		}
		close(done)
	}()
	m.Run()
	w.Close()
	<-done
	os.Exit(0)
}
`

// honestTestMains: the two shapes of the issue, set up and torn down
// around m.Run(), exiting with its code.
var honestTestMains = map[string]string{
	"os.Exit(m.Run())":                         "package calc\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tos.Setenv(\"CALC_MODE\", \"test\")\n\tos.Exit(m.Run())\n}\n",
	"code := m.Run(); teardown; os.Exit(code)": "package calc\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tdir, err := os.MkdirTemp(\"\", \"calc\")\n\tif err != nil {\n\t\tos.Exit(2)\n\t}\n\tcode := m.Run()\n\tos.RemoveAll(dir)\n\tos.Exit(code)\n}\n",
}

// goModuleReport is the real go test -json report of a module of these
// files, run on the host (the sandbox only cats it: cheaper than a
// toolchain there, and the report is the one the TestMain makes).
func goModuleReport(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/calc\n\ngo 1.22\n"
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return hostGoTestJSON(t, dir)
}

// lineOf is the 1-based line of the first line of content holding s.
func lineOf(t *testing.T, content, s string) int {
	t.Helper()
	for i, l := range strings.Split(content, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%q not in the content", s)
	return 0
}

// tamperCase is one change and what the verdict must say; lied: the
// candidate run exited 0 with a report in which nothing failed.
type tamperCase struct {
	name  string
	base  files
	cand  files
	ready bool
	want  []string // file:line (and rules) the reasons must name
	lied  bool
}

func runTamper(t *testing.T, c tamperCase, key *evidence.SigningKey, trust []byte) {
	t.Helper()
	r, base, cand := caseCommits(t, outcomeCase{base: c.base, cand: c.cand})
	run := verify(t, r, base, cand, func(o *engine.VerifyOptions) { o.SigningKey = key })
	wantReasons(t, run, c.ready, c.want, nil)
	rejudge(t, run)
	d := run.Delivery
	tampered := 0
	// A lie in a new harness file (a conftest.py) is kept out of the
	// base-harness run: it works in the run with the change's own harness.
	own := map[string]bool{}
	for _, rec := range d.Checks {
		own[rec.CheckID] = own[rec.CheckID] || rec.Phase == record.CandidateHarness
	}
	for i := range d.Checks {
		rec := d.Checks[i]
		if rec.Phase == record.Baseline {
			if len(rec.Tamper) > 0 {
				t.Errorf("baseline run records tamper facts %+v", rec.Tamper)
			}
			continue
		}
		tampered += len(rec.Tamper)
		if c.lied && (rec.Phase == record.CandidateHarness || !own[rec.CheckID]) {
			if rec.ExitCode != 0 || rec.Report == nil || rec.Report.Inventory == nil || len(rec.Report.Inventory.Failed) != 0 || len(rec.Report.Inventory.Passed) == 0 {
				t.Fatalf("the lie did not work, so this case proves nothing: exit %d, report %+v", rec.ExitCode, rec.Report)
			}
			// The finding comes from the facts: without them the run passes.
			rec.Tamper = nil
			if j := evidence.Judge(&d.Manifest, &rec, d.Checks); j.Status != record.Passed {
				t.Errorf("without its tamper facts the lying run is %s (%v): something else caught it", j.Status, j.Findings)
			}
		}
		for _, f := range d.Checks[i].Findings {
			if f.Rule == verdict.RuleTamper && (f.File == "" || f.Line < 1 || f.Hint == "") {
				t.Errorf("tamper finding without file:line or hint: %+v", f)
			}
		}
	}
	if c.ready != (tampered == 0) {
		t.Errorf("ready %v with %d tamper facts", c.ready, tampered)
	}

	// evidence verify recomputes every finding from the signed facts.
	wantOfflineVerdict(t, run, trust, expectations(t, r, base, cand), c.ready)
}

func TestTamperScan(t *testing.T) {
	if _, err := exec.LookPath("/usr/bin/python3"); err != nil {
		t.Fatalf("this test needs /usr/bin/python3 with pytest (scripts/setup.sh): %v", err)
	}
	_, key, trust := newTestKey(t)
	pyBase := files{".runmill/checks.yaml": pytestPolicy, "tests/test_calc.py": pyCalc}
	pyFailing := pyCalc + "\ndef test_multiplies():\n    assert 2 * 2 == 5\n"
	goBase := files{".runmill/checks.yaml": goReportPolicy, "go.mod": "module example.com/calc\n\ngo 1.22\n", "calc.go": goCalc, "calc_test.go": goCalcTest,
		"testdata/go.json": goModuleReport(t, map[string]string{"calc.go": goCalc, "calc_test.go": goCalcTest})}
	forged := goModuleReport(t, map[string]string{"calc.go": goCalc, "calc_test.go": goFailing, "main_test.go": filteringTestMain})
	if !strings.Contains(forged, `"Action":"pass","Package":"example.com/calc","Test":"TestAddMore"`) {
		t.Fatalf("the filtering TestMain did not forge a pass:\n%s", forged)
	}
	cases := []tamperCase{
		{name: "a pytest atexit handler rewrites the JUnit report and exits 0", base: pyBase,
			cand: files{"tests/test_calc.py": pyFailing, "tests/conftest.py": atexitForgery}, lied: true,
			want: []string{verdict.RuleTamper, "tests/conftest.py:" + strconv.Itoa(lineOf(t, atexitForgery, "atexit.register(")),
				"tests/conftest.py:" + strconv.Itoa(lineOf(t, atexitForgery, "os._exit(0)"))}},
		{name: "a Go TestMain filters its own output and exits 0", base: goBase,
			cand: files{"calc_test.go": goFailing, "main_test.go": filteringTestMain, "testdata/go.json": forged}, lied: true,
			want: []string{verdict.RuleTamper, "main_test.go:" + strconv.Itoa(lineOf(t, filteringTestMain, "os.Stdout = w")),
				"main_test.go:" + strconv.Itoa(lineOf(t, filteringTestMain, "os.Exit(0)"))}},
		{name: "an honest conftest.py with fixtures", base: pyBase, ready: true,
			cand: files{"tests/conftest.py": honestConftest, "tests/test_calc.py": pyCalc + "\ndef test_sums(numbers):\n    assert sum(numbers) == 6\n"}},
	}
	for name, main := range honestTestMains {
		cases = append(cases, tamperCase{name: "an honest TestMain: " + name, base: goBase, ready: true,
			cand: files{"main_test.go": main, "testdata/go.json": goModuleReport(t, map[string]string{"calc.go": goCalc, "calc_test.go": goCalcTest, "main_test.go": main})}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runTamper(t, c, key, trust) })
	}
}
