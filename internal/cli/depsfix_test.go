package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/deps/depstest"
	"github.com/runmill/verify/internal/gittest"
)

// Issue 27: following an RM-VERIFY-005 refusal's fix word for word makes
// the next verify find the install. The refusal's command carries the
// --out the refused verify used (without it, deps import wrote into the
// default state directory and the next verify refused again), and deps
// import names where it wrote. Real npm (semver from the registry), real
// containerd, the CLI end to end.
func TestDepsImportFixMakesTheNextVerifyPass(t *testing.T) {
	needContainerd(t)
	depstest.Need(t, "node", "npm", "git")
	r := gittest.New(t)
	depstest.WriteSemver(t, r, "7.5.3")
	r.Write(".gitignore", "node_modules/\nreports/\n")
	r.Write("tests/semver.test.js", "const test = require('node:test');\nconst assert = require('node:assert');\nconst semver = require('semver');\n"+
		"test('orders releases', () => assert.ok(semver.gt('1.10.0', '1.9.0')));\n")
	r.Write(".runmill/checks.yaml", "checks:\n  - id: unit\n    run: node --test --test-reporter=junit --test-reporter-destination=reports/unit.xml tests/\n"+
		"    dependencies: npm\n    report: {path: reports/unit.xml, format: junit}\n    timeout: 120s\n")
	base := r.Commit("base")
	depstest.NPMCI(t, r.Dir) // the operator's preparation of the base
	r.Git("checkout", "-q", "-b", "bump")
	depstest.WriteSemver(t, r, "7.5.4")
	cand := r.Commit("bump semver")
	r.Git("checkout", "-q", "main")

	state := filepath.Join(t.TempDir(), "state")
	t.Setenv("RUNMILL_SIGNING_KEY", "")
	t.Setenv("RUNMILL_STATE_DIR", "") // the --out below is the only state directory
	verify := func() (int, string) {
		code, out, errOut := runCLI(t, "", "verify", "--repo", r.Dir, "--base", base, "--candidate", cand, "--out", state,
			"--containerd-address", containerdAddress, "--no-github")
		return code, out + errOut
	}
	code, out := verify()
	fix := regexp.MustCompile(`prepare it outside verification, scripts off: (.*); then start a fresh run`).FindStringSubmatch(out)
	if code != 1 || fix == nil {
		t.Fatalf("exit %d, want 1 with the import command:\n%s", code, out)
	}
	if !strings.Contains(fix[1], "runmill deps import --repo "+r.Dir+" --commit "+cand+" --out "+state+" --from DIR") {
		t.Fatalf("the fix does not import into this run's state directory %s:\n%s", state, fix[1])
	}
	// The fix, literally: its shell part as printed, its runmill part
	// through the CLI in-process, DIR a directory of the operator's choice.
	dir := filepath.Join(t.TempDir(), "cand")
	install, runmill, ok := strings.Cut(strings.ReplaceAll(fix[1], "DIR", dir), " && runmill ")
	if !ok {
		t.Fatalf("no runmill step in %q", fix[1])
	}
	depstest.Run(t, t.TempDir(), nil, "sh", "-c", install)
	code, _, errOut := runCLI(t, "", strings.Fields(runmill)...)
	if code != 0 || !strings.Contains(errOut, "into the state directory "+state+":") {
		t.Fatalf("deps import: exit %d, want 0 naming %s:\n%s", code, state, errOut)
	}
	if _, err := os.Stat(filepath.Join(state, "deps", "index", "npm", cand)); err != nil {
		t.Fatalf("the import is not where the run looks: %v", err)
	}
	if code, out := verify(); code != 0 || !strings.Contains(out, "MERGE-READY") {
		t.Fatalf("after the fix: exit %d, want 0 (merge-ready):\n%s", code, out)
	}
}
