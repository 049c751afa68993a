package outcome_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/outcome"
)

// hitsOf is every tamper fact of one file as "rule:line".
func hitsOf(t *testing.T, file, src string, paths ...string) []string {
	t.Helper()
	rep, err := outcome.ScanTamper(strings.NewReader(src), file, outcome.TamperOptions{ReportPaths: paths})
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, h := range rep.Tamper {
		if h.File != file || h.Code == "" {
			t.Errorf("fact %+v: wrong file or no code", h)
		}
		out = append(out, fmt.Sprintf("%s:%d", h.Rule, h.Line))
	}
	return out
}

func TestScanTamperPython(t *testing.T) {
	for _, c := range []struct {
		name, file, src string
		paths           []string
		want            []string
	}{
		{name: "a makereport hook that turns failures into passes", file: "conftest.py",
			src:  "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    rep = outcome.get_result()\n    if rep.failed:\n        rep.outcome = 'passed'\n        rep.longrepr = None\n",
			want: []string{"pytest-outcome:8", "pytest-outcome:9"}},
		{name: "a pytest_pyfunc_call hook passes tests without running them", file: "tests/conftest.py",
			src: "import pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_pyfunc_call(pyfuncitem):\n    return True\n", want: []string{"pytest-outcome:4"}},
		{name: "force_result in a hook", file: "conftest.py",
			src:  "def pytest_runtest_makereport(item, call):\n    def inner():\n        out.force_result(x)\n",
			want: []string{"pytest-outcome:3"}},
		{name: "a hook in a test module, and a helper of a conftest", file: "tests/test_report.py",
			src:  "def pytest_report_teststatus(report, config):\n    report.outcome = \"passed\"\n\ndef other(r):\n    r.outcome = 'passed'\n",
			want: []string{"pytest-outcome:2"}},
		{name: "a helper of a conftest counts outside hooks too", file: "conftest.py",
			src: "def other(r):\n    r.outcome = 'passed'\n", want: []string{"pytest-outcome:2"}},
		{name: "files pytest does not load by default are not scanned", file: "src/pkg/plugin.py",
			src: "def pytest_report_teststatus(report, config):\n    report.outcome = \"passed\"\n", want: []string{}},
		{name: "setting outcome to failed only adds a failure", file: "conftest.py",
			src:  "def pytest_runtest_makereport(item, call):\n    rep.outcome = 'failed'\n    rep.outcome = \"failed\" if x else \"passed\"\n",
			want: []string{"pytest-outcome:3"}},
		{name: "setattr and wasxfail", file: "tests/conftest.py",
			src:  "setattr(rep, 'outcome', 'skipped')\nrep.wasxfail = 'reason'\nrep.longrepr = 'a message'\n",
			want: []string{"pytest-outcome:1", "pytest-outcome:2"}},
		{name: "silent deselection", file: "conftest.py",
			src:  "def pytest_collection_modifyitems(config, items):\n    keep = [i for i in items if 'db' not in i.name]\n    items[:] = keep\n    items.remove(items[0])\n    del items[0]\n    items[:] = [i for i in items if i.name != 'test_broken']\n",
			want: []string{"pytest-deselect:3", "pytest-deselect:4", "pytest-deselect:5", "pytest-deselect:6"}},
		{name: "announced deselection is pytest's own (N deselected)", file: "conftest.py",
			src:  "def pytest_collection_modifyitems(config, items):\n    keep = [i for i in items if 'db' not in i.name]\n    config.hook.pytest_deselected(items=[i for i in items if i not in keep])\n    items[:] = keep\n",
			want: []string{}},
		{name: "partitions put in a new order", file: "conftest.py",
			src:  "def pytest_collection_modifyitems(items):\n    items[:] = fast + slow + slowest\n    items[:] = fast + [x]\n",
			want: []string{"pytest-deselect:3"}},
		{name: "reordering and marking are not deselection", file: "conftest.py",
			src:  "import pytest\n\ndef pytest_collection_modifyitems(config, items):\n    items[:] = sorted(items, key=lambda i: i.name)\n    items.sort(key=str)\n    for item in items:\n        item.add_marker(pytest.mark.skip(reason='slow'))\n\ndef other(items):\n    items[:] = []\n",
			want: []string{}},
		{name: "atexit and os._exit in test code", file: "tests/test_calc.py",
			src:  "import atexit, os\nfrom atexit import register\n\n@atexit.register\ndef fix():\n    os._exit(0)\n\natexit.register(fix)\natexit.register(lambda: None)\n",
			want: []string{"atexit:2", "atexit:4", "os-exit:6", "atexit:8", "atexit:9"}},
		{name: "an atexit handler that rewrites the report", file: "conftest.py",
			src:  "import atexit\n\ndef fix():\n    p = pathlib.Path(x)\n    p.write_text(p.read_text().replace('<failure', '<skipped'))\n\natexit.register(fix)\n",
			want: []string{"atexit:7"}},
		{name: "an atexit handler that only removes a temporary directory", file: "tests/test_build.py",
			src:  "import atexit, shutil\n\ndef _cleanup():\n    if _dir is not None:\n        shutil.rmtree(_dir)\n\ndef get():\n    atexit.register(_cleanup)\n",
			want: []string{}},
		{name: "os._exit in a forked child, with a failure code, with pytest's status", file: "conftest.py",
			src:  "import os\n\ndef test_fork():\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0 if ok() else 1)\n    else:\n        os._exit(0)\n\ndef stall():\n    os._exit(1)\n\nSTATUS = 0\n\ndef pytest_sessionfinish(session, exitstatus):\n    global STATUS\n    STATUS = int(exitstatus)\n\ndef pytest_unconfigure(config):\n    os._exit(STATUS)\n",
			want: []string{"os-exit:8"}},
		{name: "from os import _exit", file: "test_x.py", src: "from os import _exit, path\n_exit(0)\n", want: []string{"os-exit:1"}},
		{name: "atexit outside test code is no concern", file: "src/app.py",
			src: "import atexit, os\natexit.register(close)\nos._exit(0)\n", want: []string{}},
		{name: "comments and strings are not code", file: "conftest.py",
			src:  "# rep.outcome = 'passed'\ns = \"atexit.register(fix)\"\nt = '''\nos._exit(0)\n'''\nu = r'rep.outcome = \\' ok'\n",
			want: []string{}},
		{name: "code in an f-string's braces is code", file: "conftest.py",
			src: "x = f\"{atexit.register(fix)} and {{atexit.register}}\"\n", want: []string{"atexit:1"}},
		{name: "a multi-line f-string keeps its lines", file: "conftest.py",
			src: "x = f'''\n\n{os._exit(0)}'''\n", want: []string{"os-exit:3"}},
		{name: "the declared report path in test code", file: "tests/test_calc.py",
			src: "open('reports/unit.xml', 'w')\nopen(\"./reports/unit.xml\")\np = '/runmill/checkout/reports/unit.xml'\nq = 'reports/other.xml'\n", paths: []string{"reports/unit.xml"},
			want: []string{"report-path:1", "report-path:2", "report-path:3"}},
		{name: "a bare report file name matches only as written", file: "tests/test_junit.py",
			src: "out = tmp_path / 'x'\nwrite('/tmp/run/junit.xml')\nopen('junit.xml', 'w')\n", paths: []string{"junit.xml"},
			want: []string{"report-path:3"}},
		{name: "a def that ends restores the scope", file: "conftest.py",
			src: "class P:\n    def pytest_collection_modifyitems(self, items):\n        pass\n\n    def helper(self, items):\n        items[:] = []\n", want: []string{}},
		{name: "continuation lines stay in the hook", file: "conftest.py",
			src: "def pytest_collection_modifyitems(config,\n        items):\n    x = (1,\n2)\n    items[:] = \\\n        []\n", want: []string{"pytest-deselect:5"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := hitsOf(t, c.file, c.src, c.paths...); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestScanTamperGo(t *testing.T) {
	const head = "package x\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\n"
	for _, c := range []struct {
		name, src string
		paths     []string
		want      []string
	}{
		{name: "os.Exit(m.Run())", src: head + "func TestMain(m *testing.M) {\n\tsetup()\n\tos.Exit(m.Run())\n}\n", want: []string{}},
		{name: "code := m.Run(); teardown; os.Exit(code)", src: head + "func TestMain(m *testing.M) {\n\tcode := m.Run()\n\tteardown()\n\tos.Exit(code)\n}\n", want: []string{}},
		{name: "a failed setup exits 1", src: head + "func TestMain(m *testing.M) {\n\tif err := setup(); err != nil {\n\t\tos.Exit(1)\n\t}\n\tos.Exit(m.Run())\n}\n", want: []string{}},
		{name: "a deferred exit of a variable assigned later", src: head + "func TestMain(m *testing.M) {\n\tvar code int\n\tdefer func() { os.Exit(code) }()\n\tcode = m.Run()\n}\n", want: []string{}},
		{name: "a helper of the same file returns m.Run()", src: head + "func TestMain(m *testing.M) {\n\tos.Exit(run(m))\n}\n\nfunc run(m *testing.M) int {\n\tdefer teardown()\n\tif setup() != nil {\n\t\treturn 2\n\t}\n\treturn m.Run()\n}\n", want: []string{}},
		{name: "returning from TestMain", src: head + "func TestMain(m *testing.M) {\n\tm.Run()\n}\n", want: []string{}},
		{name: "os.Exit(0)", src: head + "func TestMain(m *testing.M) {\n\tm.Run()\n\tos.Exit(0)\n}\n", want: []string{"go-exit:10"}},
		{name: "a code that is not m.Run()'s", src: head + "func TestMain(m *testing.M) {\n\tcode := m.Run()\n\tif code != 0 {\n\t\tcode = 0\n\t}\n\tos.Exit(code)\n}\n", want: []string{"go-exit:13"}},
		{name: "a helper of another file given m is held to the rule where it is declared", src: head + "func TestMain(m *testing.M) {\n\tos.Exit(rt.RunTests(m))\n}\n", want: []string{}},
		{name: "a helper given m that forges its code", src: head + "func runTests(m *testing.M) (code int) {\n\tm.Run()\n\tif code == 0 {\n\t\treturn\n\t}\n\treturn 0\n}\n", want: []string{"go-exit:11", "go-exit:13"}},
		{name: "a helper given m that exits", src: head + "func runTests(m *testing.M) {\n\tm.Run()\n\tos.Exit(0)\n}\n", want: []string{"go-exit:10"}},
		{name: "a reset after the failure exit adds no pass", src: head + "func TestMain(m *testing.M) {\n\te := m.Run()\n\tif e > 0 {\n\t\tos.Exit(e)\n\t}\n\te = 0\n\tif leaks() {\n\t\te = 1\n\t}\n\tos.Exit(e)\n}\n", want: []string{}},
		{name: "a code received from the goroutine that ran m.Run()", src: head + "func TestMain(m *testing.M) {\n\tch := make(chan int, 1)\n\tgo func() { ch <- m.Run() }()\n\tselect {\n\tcase status := <-ch:\n\t\tos.Exit(status)\n\t}\n}\n", want: []string{}},
		{name: "a re-executed test binary exits 0 before running tests", src: head + "func TestMain(m *testing.M) {\n\tif os.Getenv(\"IS_TOOL\") != \"\" {\n\t\tmain()\n\t\tos.Exit(0)\n\t}\n\tos.Exit(m.Run())\n}\n", want: []string{}},
		{name: "a deferred exit 0", src: head + "func TestMain(m *testing.M) {\n\tdefer os.Exit(0)\n\tm.Run()\n}\n", want: []string{"go-exit:9"}},
		{name: "a closure exits 0", src: head + "func TestMain(m *testing.M) {\n\tdefer func() { os.Exit(0) }()\n\tm.Run()\n}\n", want: []string{"go-exit:9"}},
		{name: "spelled results in a file with a TestMain", src: head + "func TestMain(m *testing.M) {\n\tos.Exit(m.Run())\n}\n\nvar fix = strings.NewReplacer(\"--- FAIL\", \"--- PASS\")\n", want: []string{"go-output:12", "go-output:12"}},
		{name: "spelled results in a test of a parser", src: head + "func TestParse(t *testing.T) {\n\tparse(\"--- FAIL: TestX\")\n}\n", want: []string{}},
		{name: "output replaced and filtered", src: head + "func TestMain(m *testing.M) {\n\tr, w, _ := os.Pipe()\n\tstdout := os.Stdout\n\tos.Stdout = w\n\tgo filter(r, stdout)\n\tm.Run()\n\tos.Exit(0)\n}\n",
			want: []string{"go-output:11", "go-exit:14"}},
		{name: "dup2 and NewFile", src: "package x\n\nimport (\n\t\"os\"\n\tsys \"syscall\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tsys.Dup2(3, 1)\n\t_ = os.NewFile(1, \"stdout\")\n\tos.Exit(m.Run())\n}\n",
			want: []string{"go-output:10", "go-output:11"}},
		{name: "output replaced in init", src: head + "func init() {\n\t*os.Stderr = *os.Stdout\n}\n", want: []string{"go-output:9"}},
		{name: "a test that captures its own output is no concern", src: head + "func TestCLI(t *testing.T) {\n\told := os.Stdout\n\t_, w, _ := os.Pipe()\n\tos.Stdout = w\n\tdefer func() { os.Stdout = old }()\n}\n\nfunc TestHelperProcess(t *testing.T) {\n\tos.Exit(0)\n}\n", want: []string{}},
		{name: "TestMain of another signature is not go test's", src: head + "func TestMain(t *testing.T) {\n\tos.Exit(0)\n}\n", want: []string{}},
		{name: "the report path", src: head + "var out = \"reports/unit.json\"\n", paths: []string{"reports/unit.json"}, want: []string{"report-path:8"}},
		{name: "an aliased os", src: "package x\n\nimport (\n\tstdos \"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tm.Run()\n\tstdos.Exit(0)\n}\n", want: []string{"go-exit:10"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := hitsOf(t, "pkg/x_test.go", c.src, c.paths...); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// FuzzTamper: any bytes, as Python test code and as a Go test file, scan
// without panicking, and every fact names a line of the file; a construct
// that is code is still found after comment and string noise before it.
func FuzzTamper(f *testing.F) {
	for _, s := range []string{
		"def pytest_runtest_makereport(item, call):\n    rep.outcome = 'passed'\n", "import atexit\natexit.register(f)\n",
		"x = f'{os._exit(0)}'\n", "'''\n", "f\"{'{'}\"", "r'\\''", "def pytest_collection_modifyitems(items):\n    items[:] = []\n",
		"if pid == 0:\n    os._exit(0)\n", "\\\n\\", "b'\\\n'", "f'{{'", "f'{x:{y}}'", "(\n)\n]]]", "del items[",
		"package x\nimport (\"os\"; \"testing\")\nfunc TestMain(m *testing.M) { os.Stdout = nil; os.Exit(0) }\n",
		"package x\nfunc TestMain(m *testing.M) { code := m.Run(); os.Exit(code) }\n", "package x\nvar _ = \"reports/unit.xml\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, file := range []string{"conftest.py", "x_test.go"} {
			rep, err := outcome.ScanTamper(bytes.NewReader(data), file, outcome.TamperOptions{ReportPaths: []string{"reports/unit.xml"}})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range rep.Tamper {
				if h.File != file || h.Line < 1 || h.Line > lines || h.Rule == "" {
					t.Fatalf("fact %+v outside the file (%d lines)", h, lines)
				}
			}
		}
		// Noise before a construct does not hide it (lexer state is
		// closed by a newline at depth zero only when the noise is
		// balanced, so the noise here is a comment line).
		if !bytes.ContainsAny(data, "\n\r\\") {
			src := "# " + string(data) + "\nimport atexit\natexit.register(fix)\n"
			rep, _ := outcome.ScanTamper(strings.NewReader(src), "conftest.py", outcome.TamperOptions{})
			if len(rep.Tamper) != 1 || rep.Tamper[0].Line != 3 {
				t.Fatalf("atexit after a comment line %q: got %+v", data, rep.Tamper)
			}
		}
	})
}
