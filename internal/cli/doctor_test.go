package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/testreq"

	doctorpkg "github.com/runmill/verify/internal/doctor"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/rmerr"
)

type doctorAnswer struct {
	OK     bool               `json:"ok"`
	Checks []doctorpkg.Result `json:"checks"`
}

// doctor runs `runmill doctor --json ARGS` and decodes the answer; the exit
// code must agree with it (0 all passed, 1 one failed).
func doctor(t *testing.T, args ...string) doctorAnswer {
	t.Helper()
	code, out, errOut := runCLI(t, "", append([]string{"doctor", "--json"}, args...)...)
	var a doctorAnswer
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("exit %d, stdout is not the doctor's JSON (%v): %q stderr %q", code, err, out, errOut)
	}
	if want := map[bool]int{true: 0, false: 1}[a.OK]; code != want || errOut != "" {
		t.Fatalf("exit %d with ok=%v (want %d); stderr %q", code, a.OK, want, errOut)
	}
	for _, c := range a.Checks {
		if !c.OK && (c.Code == "" || c.Fix == "") {
			t.Errorf("failed check %s has no code or fix: %+v", c.Name, c)
		}
	}
	return a
}

// one expects exactly one result and checks its verdict and code.
func one(t *testing.T, a doctorAnswer, name string, ok bool, code rmerr.Code, detail string) {
	t.Helper()
	if len(a.Checks) != 1 || a.Checks[0].Name != name {
		t.Fatalf("want one %s result, got %+v", name, a.Checks)
	}
	c := a.Checks[0]
	if c.OK != ok || c.Code != code || !strings.Contains(c.Detail, detail) {
		t.Fatalf("%s: ok %v code %q detail %q; want ok %v code %q detail containing %q", name, c.OK, c.Code, c.Detail, ok, code, detail)
	}
}

func operatorFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func policyRepo(t *testing.T, checks string) *gittest.Repo {
	t.Helper()
	r := gittest.New(t)
	r.Write("README", "x\n")
	if checks != "" {
		r.Write(".runmill/checks.yaml", checks)
	}
	r.Commit("base")
	return r
}

const unitCheck = "checks:\n  - id: unit\n    run: go test -json ./... > reports/u.json\n    report: {path: reports/u.json, format: go-json}\n"

func TestDoctorPolicy(t *testing.T) {
	good := operatorFile(t, "autonomy: pr-only\nverification: {fail_on_skipped_check: false}\n")
	for _, tc := range []struct {
		name   string
		checks string
		args   func(r *gittest.Repo) []string
		ok     bool
		code   rmerr.Code
		detail string
	}{
		{"both load", unitCheck, func(r *gittest.Repo) []string { return []string{"--policy", good} }, true, "", "1 checks (unit); operator policy"},
		{"no operator policy", unitCheck, nil, true, "", "no operator policy given"},
		{"broken checks.yaml at base", "checks: [\n", nil, false, rmerr.VerifyManifest, ".runmill/checks.yaml@"},
		{"unknown key", unitCheck + "    retries: 3\n", nil, false, rmerr.VerifyManifest, "retries"},
		{"no checks.yaml", "", nil, false, rmerr.VerifyManifest, "no .runmill/checks.yaml"},
		{"invalid operator policy", unitCheck, func(r *gittest.Repo) []string {
			return []string{"--policy", operatorFile(t, "autonomy: continuous\nverification: {fail_on_skipped_check: false}\n")}
		}, false, rmerr.PolicyInvalid, "fail_on_skipped_check"},
		{"operator policy inside the repository", unitCheck, func(r *gittest.Repo) []string {
			p := filepath.Join(r.Dir, "policy.yaml")
			os.WriteFile(p, []byte("autonomy: pr-only\n"), 0o644)
			return []string{"--policy", p}
		}, false, rmerr.PolicyInvalid, "inside the repository"},
		{"unknown base", unitCheck, func(r *gittest.Repo) []string { return []string{"--base", "nope"} }, false, rmerr.GitRevision, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := policyRepo(t, tc.checks)
			args := []string{"--check", "policy", "--repo", r.Dir}
			if tc.args != nil {
				args = append(args, tc.args(r)...)
			}
			one(t, doctor(t, args...), "policy", tc.ok, tc.code, tc.detail)
		})
	}
	t.Run("not a repository", func(t *testing.T) {
		one(t, doctor(t, "--check", "policy", "--repo", t.TempDir()), "policy", false, rmerr.GitRepository, "")
	})
}

// recordingChecker stands in for internal/deps, which is built on another
// branch: it records what doctor asks and answers as told.
type recordingChecker struct {
	got []doctorpkg.DependencyRequest
	err error
}

func (c *recordingChecker) CheckDependencies(_ context.Context, req doctorpkg.DependencyRequest) (string, error) {
	c.got = append(c.got, req)
	return "install matches the base", c.err
}

func TestDoctorDependencies(t *testing.T) {
	npm := "checks:\n  - id: web\n    run: node_modules/.bin/mocha\n    dependencies: npm\n  - id: api\n    run: npm test\n    dependencies: npm\n  - id: unit\n    run: go test ./...\n"
	t.Run("none declared", func(t *testing.T) {
		r := policyRepo(t, unitCheck)
		one(t, doctor(t, "--check", "verification:dependencies", "--repo", r.Dir), "verification:dependencies", true, "", "no check declares dependencies")
	})
	t.Run("declared, nothing installed", func(t *testing.T) {
		// The real checker (internal/deps): no npm ci was run in --repo.
		r := policyRepo(t, npm)
		one(t, doctor(t, "--check", "verification:dependencies", "--repo", r.Dir), "verification:dependencies", false, rmerr.VerifyDependencies, "has no package.json")
	})
	t.Run("the operator's definition wins", func(t *testing.T) {
		r := policyRepo(t, "checks:\n  - id: web\n    run: x\n    dependencies: npm\n")
		op := operatorFile(t, "verification:\n  commands:\n    - id: web\n      run: y\n")
		one(t, doctor(t, "--check", "verification:dependencies", "--repo", r.Dir, "--policy", op), "verification:dependencies", true, "", "no check declares")
	})
	t.Run("unreadable policy", func(t *testing.T) {
		r := policyRepo(t, "checks: [\n")
		one(t, doctor(t, "--check", "verification:dependencies", "--repo", r.Dir), "verification:dependencies", false, rmerr.VerifyManifest, "cannot read which checks")
	})
	for _, tc := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"checker passes", nil, true},
		{"checker fails", rmerr.New(rmerr.VerifyDependencies, "package-lock.json differs from the base").WithHint("update the source checkout, run npm ci, start a fresh run"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &recordingChecker{err: tc.err}
			dependencyChecker = c
			defer func() { dependencyChecker = doctorpkg.Deps{} }()
			r := policyRepo(t, npm)
			a := doctor(t, "--check", "verification:dependencies", "--repo", r.Dir)
			code, detail := rmerr.Code(""), "npm (api, web): install matches"
			if !tc.ok {
				code, detail = rmerr.VerifyDependencies, "package-lock.json differs"
			}
			one(t, a, "verification:dependencies", tc.ok, code, detail)
			head := r.Git("rev-parse", "HEAD")
			if len(c.got) != 1 || c.got[0].Base != head || c.got[0].Strategy != "npm" || strings.Join(c.got[0].Checks, ",") != "api,web" {
				t.Fatalf("requests %+v", c.got)
			}
		})
	}
}

func TestDoctorContainerd(t *testing.T) {
	t.Run("unreachable", func(t *testing.T) {
		one(t, doctor(t, "--check", "containerd", "--containerd-address", filepath.Join(t.TempDir(), "none.sock")), "containerd", false, rmerr.SandboxUnavailable, "does not answer")
	})
	t.Run("reachable", func(t *testing.T) {
		needContainerd(t)
		one(t, doctor(t, "--check", "containerd", "--containerd-address", containerdAddress), "containerd", true, "", containerdAddress)
	})
	// The private daemon's binary chosen by RUNMILL_CONTAINERD_BIN (the
	// suite's containerd 2.x run sets it), named as the one that answers.
	t.Run("private daemon of RUNMILL_CONTAINERD_BIN", func(t *testing.T) {
		needContainerd(t)
		bin := os.Getenv(sandbox.ContainerdBinEnv)
		if bin == "" {
			var err error
			if bin, err = exec.LookPath("containerd"); err != nil {
				t.Fatal(err)
			}
		}
		t.Setenv(sandbox.ContainerdBinEnv, bin)
		one(t, doctor(t, "--check", "containerd"), "containerd", true, "", "private containerd "+bin+" started by runmill ($"+sandbox.ContainerdBinEnv+")")
	})
}

func TestDoctorSandbox(t *testing.T) {
	r := policyRepo(t, unitCheck)
	t.Run("containerd unreachable", func(t *testing.T) {
		one(t, doctor(t, "--check", "sandbox", "--repo", r.Dir, "--containerd-address", filepath.Join(t.TempDir(), "none.sock")), "sandbox", false, rmerr.SandboxUnavailable, "cannot run the probe")
	})
	t.Run("probe holds", func(t *testing.T) {
		needContainerd(t)
		one(t, doctor(t, "--check", "sandbox", "--repo", r.Dir, "--containerd-address", containerdAddress), "sandbox", true, "", "guarantees measured, all held")
	})
	t.Run("operator host path missing", func(t *testing.T) {
		needContainerd(t)
		op := operatorFile(t, "sandbox:\n  host_paths: [/usr, /bin, /lib, /lib64, /opt/runmill-no-such-toolchain]\n")
		one(t, doctor(t, "--check", "sandbox", "--repo", r.Dir, "--policy", op, "--containerd-address", containerdAddress), "sandbox", false, rmerr.SandboxSpec, "runmill-no-such-toolchain")
	})
	t.Run("operator host paths apply without a checks.yaml", func(t *testing.T) {
		needContainerd(t)
		bare := policyRepo(t, "")
		op := operatorFile(t, "sandbox:\n  host_paths: [/usr, /bin, /lib, /lib64, /opt/runmill-no-such-toolchain]\n")
		one(t, doctor(t, "--check", "sandbox", "--repo", bare.Dir, "--policy", op, "--containerd-address", containerdAddress), "sandbox", false, rmerr.SandboxSpec, "runmill-no-such-toolchain")
	})
	t.Run("invalid operator policy", func(t *testing.T) {
		needContainerd(t)
		op := operatorFile(t, "sandbox:\n  host_paths: [relative]\n")
		one(t, doctor(t, "--check", "sandbox", "--repo", r.Dir, "--policy", op, "--containerd-address", containerdAddress), "sandbox", false, rmerr.PolicyInvalid, "operator's settings")
	})
}

func TestDoctorTextAndAll(t *testing.T) {
	needContainerd(t)
	r := policyRepo(t, "checks:\n  - id: web\n    run: x\n    dependencies: npm\n")
	code, out, _ := runCLI(t, "", "doctor", "--repo", r.Dir, "--containerd-address", containerdAddress)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 1 || len(lines) != 8 || !strings.HasPrefix(lines[7], "note: the checks themselves were not run") || !strings.HasPrefix(lines[0], "PASS  containerd") || !strings.HasPrefix(lines[1], "PASS  sandbox") ||
		!strings.HasPrefix(lines[2], "PASS  pytest") || !strings.HasPrefix(lines[3], "FAIL  verification:dependencies") ||
		!strings.Contains(lines[4], "fix: ") || !strings.HasPrefix(lines[5], "PASS  policy") || !strings.HasPrefix(lines[6], "PASS  state") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	code, _, errOut := runCLI(t, "", "doctor", "--check", "network")
	if code != 2 || !strings.Contains(errOut, "RM-USAGE-001") {
		t.Fatalf("unknown check: exit %d stderr %q", code, errOut)
	}
}

// venvWithoutPytest lays out a real virtual environment by hand (what
// `python3 -m venv --without-pip` writes): CPython reads pyvenv.cfg beside
// its executable and, with system site packages off, cannot import the
// system's pytest, whatever this machine has installed. World-readable, so
// the sandbox's user can run it.
func venvWithoutPytest(t *testing.T) string {
	t.Helper()
	real, err := filepath.EvalSymlinks("/usr/bin/python3")
	testreq.Need(t, err == nil, "no /usr/bin/python3 (scripts/setup.sh installs python3-pytest): %v", err)
	root := filepath.Join(t.TempDir(), "venv")
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for d := root; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	cfg := "home = " + filepath.Dir(real) + "\ninclude-system-site-packages = false\n"
	if err := os.WriteFile(filepath.Join(root, "pyvenv.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(root, "bin", "python3")); err != nil {
		t.Fatal(err)
	}
	return root
}

// systemHasPytest asks the sandbox's default interpreter itself; with
// CI=true it must (scripts/setup.sh installs python3-pytest).
func systemHasPytest(t *testing.T) bool {
	t.Helper()
	ok := exec.Command("/usr/bin/python3", "-c", "import pytest").Run() == nil
	if !ok && testreq.CI() {
		t.Fatal("CI=true and /usr/bin/python3 cannot import pytest (scripts/setup.sh installs python3-pytest)")
	}
	return ok
}

func TestDoctorPytest(t *testing.T) {
	pytestCheck := func(interp string) string {
		return "checks:\n  - id: py\n    run: PYTHONDONTWRITEBYTECODE=1 " + interp + " -m pytest -p no:cacheprovider --junitxml=reports/p.xml\n    report: {path: reports/p.xml, format: junit}\n"
	}
	t.Run("no check runs pytest", func(t *testing.T) {
		r := policyRepo(t, unitCheck)
		one(t, doctor(t, "--check", "pytest", "--repo", r.Dir, "--containerd-address", filepath.Join(t.TempDir(), "none.sock")), "pytest", true, "", "no check runs pytest")
	})
	t.Run("unreadable policy", func(t *testing.T) {
		r := policyRepo(t, "checks: [\n")
		one(t, doctor(t, "--check", "pytest", "--repo", r.Dir, "--containerd-address", filepath.Join(t.TempDir(), "none.sock")), "pytest", false, rmerr.VerifyManifest, "cannot read which checks run pytest")
	})
	t.Run("containerd unreachable", func(t *testing.T) {
		r := policyRepo(t, pytestCheck("python3"))
		one(t, doctor(t, "--check", "pytest", "--repo", r.Dir, "--containerd-address", filepath.Join(t.TempDir(), "none.sock")), "pytest", false, rmerr.SandboxUnavailable, "cannot run python3 -m pytest in the sandbox")
	})
	t.Run("the sandbox's python3", func(t *testing.T) {
		needContainerd(t)
		// Judged both ways: whatever /usr/bin/python3 says on the host,
		// the sandbox must say the same.
		has := systemHasPytest(t)
		r := policyRepo(t, pytestCheck("python3"))
		a := doctor(t, "--check", "pytest", "--repo", r.Dir, "--containerd-address", containerdAddress)
		if has {
			one(t, a, "pytest", true, "", "/usr/bin/python3: pytest ")
			return
		}
		one(t, a, "pytest", false, rmerr.InitToolchain, "No module named pytest")
		if !strings.Contains(a.Checks[0].Fix, "apt-get install python3-pytest") {
			t.Errorf("fix %q", a.Checks[0].Fix)
		}
	})
	t.Run("an interpreter without pytest", func(t *testing.T) {
		needContainerd(t)
		// The operator binds a virtual environment without pytest and the
		// check calls its interpreter by path: doctor runs that one.
		root := venvWithoutPytest(t)
		interp := filepath.Join(root, "bin", "python3")
		r := policyRepo(t, pytestCheck(interp))
		op := operatorFile(t, "sandbox:\n  host_paths: [/usr, /bin, /lib, /lib64, "+root+"]\n")
		a := doctor(t, "--check", "pytest", "--repo", r.Dir, "--policy", op, "--containerd-address", containerdAddress)
		one(t, a, "pytest", false, rmerr.InitToolchain, interp+" -m pytest fails in the sandbox (checks: py; exit 1): "+interp+": No module named pytest")
		if fix := a.Checks[0].Fix; !strings.Contains(fix, "install pytest for "+interp) || !strings.Contains(fix, "sandbox.host_paths") {
			t.Errorf("fix %q", fix)
		}
	})
	t.Run("an interpreter the sandbox does not bind", func(t *testing.T) {
		needContainerd(t)
		root := venvWithoutPytest(t)
		interp := filepath.Join(root, "bin", "python3")
		r := policyRepo(t, pytestCheck(interp))
		one(t, doctor(t, "--check", "pytest", "--repo", r.Dir, "--containerd-address", containerdAddress), "pytest", false, rmerr.InitToolchain, "not found on the sandbox PATH")
	})
}

// TestDoctorState: the state line reports the state directory's size, its
// runs apart, and the retention rule.
func TestDoctorState(t *testing.T) {
	state := t.TempDir()
	run := filepath.Join(state, "runs", "20261201T000000Z-0000abcd")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "statement.json"), make([]byte, 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "", "doctor", "--check", "state", "--out", state)
	if code != 0 || !strings.HasPrefix(out, "PASS  state") || !strings.Contains(out, "the state directory "+state+" (--out) uses ") ||
		!strings.Contains(out, ": 1 run (") || !strings.Contains(out, "KiB; each verify") ||
		!strings.Contains(out, "keeps at most the newest 200 runs, none older than 14 days") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	// Without --out, the directory verify would use, and where it came
	// from: a verify given another --out is not measured here.
	t.Setenv("RUNMILL_STATE_DIR", state)
	if code, out, _ := runCLI(t, "", "doctor", "--check", "state"); code != 0 || !strings.Contains(out, "the state directory "+state+" ($RUNMILL_STATE_DIR) uses ") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

// TestDoctorChecks: doctor --check checks runs the base's checks in the
// sandbox and says per check what verification would: one passes proven,
// one fails writing into the read-only checkout (and says so), one passes
// unproven — which the specification's default gate blocks.
func TestDoctorChecks(t *testing.T) {
	needContainerd(t)
	r := policyRepo(t, `checks:
  - id: pass
    run: sh tests/tap.sh > reports/pass.tap
    report: {path: reports/pass.tap, format: tap}
  - id: scratch
    run: echo x > scratch.txt
  - id: smoke
    run: "true"
`)
	r.Write("tests/tap.sh", "echo 'ok 1 adds'\necho 'ok 2 subtracts'\necho '1..2'\n")
	r.Commit("tests")
	a := doctor(t, "--check", "checks", "--repo", r.Dir, "--containerd-address", containerdAddress)
	if a.OK || len(a.Checks) != 1 || a.Checks[0].Code != rmerr.InitChecks || !strings.Contains(a.Checks[0].Detail, "3 checks run once at the base") ||
		!strings.Contains(a.Checks[0].Detail, "2 passed, 1 failed, 1 unproven") {
		t.Fatalf("answer %+v", a)
	}
	got := map[string]string{}
	for _, c := range a.Checks[0].Checks {
		s := string(c.Status) + "/" + string(c.Coverage)
		if c.Tests != nil {
			s += fmt.Sprintf("/%d", c.Tests.Passed)
		}
		if c.Why != nil {
			for _, h := range c.Why.Hints {
				s += "/" + h.Cause
			}
			if c.Why.Unproven != "" {
				s += "/says unproven"
			}
		}
		got[c.Check] = s
	}
	want := map[string]string{"pass": "passed/proven/2", "scratch": "failed/unproven/read-only checkout/says unproven", "smoke": "passed/unproven/says unproven"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("per check %v, want %v", got, want)
	}
	code, out, _ := runCLI(t, "", "doctor", "--check", "checks", "--repo", r.Dir, "--containerd-address", containerdAddress)
	for _, w := range []string{"FAIL  checks", "scratch              failed  unproven  no report", "Read-only file system",
		"hint (read-only checkout): the checkout is read-only during verification; write scratch files under $TMPDIR",
		"unproven: no report is declared, so a deleted or skipped test cannot be detected"} {
		if !strings.Contains(out, w) {
			t.Errorf("text output lacks %q:\n%s", w, out)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}

	// Without the failing check and with the pr-only gate, the same
	// repository is ready: unproven is said, not blocking.
	r.Write(".runmill/checks.yaml", "checks:\n  - id: pass\n    run: sh tests/tap.sh > reports/pass.tap\n    report: {path: reports/pass.tap, format: tap}\n  - id: smoke\n    run: \"true\"\n")
	r.Commit("drop scratch")
	op := operatorFile(t, "autonomy: pr-only\nverification:\n  fail_on_skipped_check: false\n")
	a = doctor(t, "--check", "checks", "--repo", r.Dir, "--policy", op, "--containerd-address", containerdAddress)
	if !a.OK || !strings.Contains(a.Checks[0].Detail, "2 passed, 0 failed, 1 unproven") {
		t.Fatalf("pr-only answer %+v", a)
	}

	// An operator definition that replaces the repository's: the doctor
	// prints the Overrides: block verify prints, word for word.
	r.Write(".runmill/checks.yaml", "checks:\n  - id: pass\n    run: sh tests/tap.sh > reports/pass.tap\n    report: {path: reports/pass.tap, format: tap}\n  - id: smoke\n    run: \"true\"\n    timeout: 300s\n")
	r.Commit("smoke has a timeout")
	op = operatorFile(t, "autonomy: pr-only\nverification:\n  fail_on_skipped_check: false\n  commands:\n    - id: smoke\n      run: \"true\"\n")
	code, out, _ = runCLI(t, "", "doctor", "--check", "checks", "--repo", r.Dir, "--policy", op, "--containerd-address", containerdAddress)
	const overrides = "\nOverrides:\n  smoke: the operator policy's definition replaces the repository's; the repository's timeout no longer applies (copy them into the operator's definition: runmill init --operator-policy-out FILE writes them)\n"
	if code != 0 || !strings.Contains(out, overrides) {
		t.Errorf("exit %d; the doctor's output lacks %q:\n%s", code, overrides, out)
	}
	base := strings.TrimSpace(r.Git("rev-parse", "HEAD"))
	code, out, _ = runCLI(t, "", "verify", "--repo", r.Dir, "--base", base, "--candidate", base, "--out", t.TempDir(), "--policy", op,
		"--containerd-address", containerdAddress, "--no-github")
	if !strings.Contains(out, overrides) {
		t.Errorf("exit %d; verify's output lacks %q (the doctor must say what verify says):\n%s", code, overrides, out)
	}
}

// TestUnpinnedHarnessSaidEverywhere: a command runmill cannot resolve to
// harness files is never silently unpinned (issue 25): verify, inspect of
// its run and doctor --check checks each say so, in the same words.
func TestUnpinnedHarnessSaidEverywhere(t *testing.T) {
	needContainerd(t)
	r := policyRepo(t, "checks:\n  - id: smoke\n    run: perl -e 1\n")
	base := strings.TrimSpace(r.Git("rev-parse", "HEAD"))
	const want = "harness not pinned: perl -e 1"
	state := t.TempDir()
	_, out, _ := runCLI(t, "", "verify", "--repo", r.Dir, "--base", base, "--candidate", base, "--out", state,
		"--containerd-address", containerdAddress, "--no-github")
	if !strings.Contains(out, want) {
		t.Fatalf("verify's output lacks %q:\n%s", want, out)
	}
	runs, err := filepath.Glob(filepath.Join(state, "runs", "*", "statement.json"))
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v %v", runs, err)
	}
	if _, out, _ := runCLI(t, "", "inspect", runs[0]); !strings.Contains(out, want) {
		t.Errorf("inspect's output lacks %q:\n%s", want, out)
	}
	if _, out, _ := runCLI(t, "", "doctor", "--check", "checks", "--repo", r.Dir, "--containerd-address", containerdAddress); !strings.Contains(out, want) {
		t.Errorf("the doctor's output lacks %q:\n%s", want, out)
	}
}
