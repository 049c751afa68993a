package sandbox_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	checkouts "github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/internal/sandbox"
)

// TestCheckoutFixedPath: two checkouts at different host paths (as base
// and candidate are) show the task the same working directory and the same
// absolute paths — the paths a reporter writes into test ids — while the
// checkout stays read-only, the prepared view lands under CheckoutPath,
// the report written at its task path reaches the host file, and the host
// checkout path does not exist in the task.
func TestCheckoutFixedPath(t *testing.T) {
	needSandbox(t)
	view := filepath.Join(t.TempDir(), "view")
	if err := os.MkdirAll(filepath.Join(view, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(view, "pkg", "index.js"), []byte("view\n"), 0o644)

	const script = `pwd
echo "$PWD"
realpath fixtures/golden
find "$PWD" -name '*.go' | sort
cat node_modules/pkg/index.js
(echo x > main.go) 2>/dev/null && echo CHECKOUT-WRITABLE
(echo x > node_modules/pkg/index.js) 2>/dev/null && echo VIEW-WRITABLE
(echo x > "$HOSTDIR/main.go") 2>/dev/null && echo HOST-PATH-WRITABLE
if [ -e "$HOSTDIR" ] || [ -L "$HOSTDIR" ]; then echo HOST-PATH-VISIBLE; fi
printf '<testsuite name="%s"/>' "$PWD/test/helpers.js" > /runmill/checkout/report.xml && echo REPORT-OK
`
	want := strings.Join([]string{
		sandbox.CheckoutPath,
		sandbox.CheckoutPath,
		sandbox.CheckoutPath + "/fixtures/golden",
		sandbox.CheckoutPath + "/main.go",
		"view",
		"REPORT-OK",
	}, "\n") + "\n"
	wantReport := `<testsuite name="` + sandbox.CheckoutPath + `/test/helpers.js"/>`

	var outs []string
	for i := range 2 {
		dir := checkout(t)
		if err := os.Mkdir(filepath.Join(dir, "node_modules"), 0o755); err != nil {
			t.Fatal(err)
		}
		report := reportFile(t, dir)
		before := snapshot(t, dir, report)
		res := run(t, sandbox.Spec{
			Command:  script,
			Checkout: dir,
			// As the engine passes them: the checkout among its read-only
			// paths, the view's destination and the report by host path.
			ReadOnly:   []string{dir, filepath.Join(dir, ".git")},
			Views:      []sandbox.View{{Source: view, Destination: filepath.Join(dir, "node_modules")}},
			ReportFile: report,
			Env:        []string{"HOSTDIR=" + filepath.Dir(dir)},
		})
		out := string(res.Stdout.Kept)
		if res.ExitCode != 0 || out != want {
			t.Errorf("checkout %d: exit %d, stdout\n%s\nwant\n%s\nstderr %q", i, res.ExitCode, out, want, res.Stderr.Kept)
		}
		if got, _ := os.ReadFile(report); string(got) != wantReport {
			t.Errorf("checkout %d: host report %q, want %q", i, got, wantReport)
		}
		if after := snapshot(t, dir, report); after != before {
			t.Errorf("checkout %d changed:\nbefore %s\nafter  %s", i, before, after)
		}
		outs = append(outs, out)
	}
	if outs[0] != outs[1] {
		t.Errorf("the two checkouts look different inside the task:\n%s\n---\n%s", outs[0], outs[1])
	}
}

// TestReadOnlyCheckoutFixedPath is TestReadOnlyCheckout's hostile writes
// against a checkout mounted at CheckoutPath, host submount included.
func TestReadOnlyCheckoutFixedPath(t *testing.T) {
	needSandbox(t)
	dir := checkout(t)
	sub := filepath.Join(dir, "node_modules")
	os.Mkdir(sub, 0o777)
	if err := syscall.Mount("tmpfs", sub, "tmpfs", 0, "size=1m,mode=0777"); err != nil {
		t.Logf("no host submount (%v); testing the flat case only", err)
	} else {
		t.Cleanup(func() { syscall.Unmount(sub, syscall.MNT_DETACH) })
	}
	report := reportFile(t, dir)
	before := snapshot(t, dir, report)
	attempts := []string{
		"echo x > main.go",
		"echo x > /runmill/checkout/main.go",
		"echo x > new-untracked-file",
		"mkdir newdir",
		"rm -f main.go",
		"echo x > .git/HEAD",
		"echo x > .git/index.lock",
		"echo x > other-report.xml",
		"echo x > node_modules/injected",
		"rm -f report.xml",
		"mv report.xml r2",
		"mkdir /runmill/other",
		"echo x > /runmill/x",
	}
	var script strings.Builder
	for i, a := range attempts {
		script.WriteString("if (" + a + ") 2>/dev/null; then echo 'WROTE " + strconv.Itoa(i) + "'; fi\n")
	}
	script.WriteString("printf '<testsuite/>' > report.xml && echo REPORT-OK\n")
	res := run(t, sandbox.Spec{Command: script.String(), Checkout: dir, ReadOnly: []string{dir}, ReportFile: report})
	out := string(res.Stdout.Kept)
	if res.ExitCode != 0 || out != "REPORT-OK\n" {
		t.Errorf("exit %d, stdout %q (want only REPORT-OK), stderr %q", res.ExitCode, out, res.Stderr.Kept)
	}
	for i, a := range attempts {
		if strings.Contains(out, "WROTE "+strconv.Itoa(i)+"\n") {
			t.Errorf("write succeeded: %s", a)
		}
	}
	if got, _ := os.ReadFile(report); string(got) != "<testsuite/>" {
		t.Errorf("host report = %q", got)
	}
	if after := snapshot(t, dir, report); after != before {
		t.Errorf("checkout changed:\nbefore %s\nafter  %s", before, after)
	}
}

// TestCheckoutGit: git works read-only inside the task in real checkouts
// made by internal/checkout (full and layered), bound at CheckoutPath
// with their object directories at their host paths — the alternates file
// names them so — and base and candidate differ only in what git says
// about them, not in where they are.
func TestCheckoutGit(t *testing.T) {
	s := needSandbox(t)
	for _, layered := range []bool{false, true} {
		name := map[bool]string{false: "full", true: "layered"}[layered]
		t.Run(name, func(t *testing.T) {
			if layered {
				if shared, err := s.SeesHostMounts(); err != nil || !shared {
					t.Skipf("layered checkouts need containerd in this mount namespace (shared %v, %v)", shared, err)
				}
			}
			repo, base, candidate := gitRepo(t)
			m, err := checkouts.NewManager(context.Background(), repo, filepath.Join(t.TempDir(), "state"))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close(context.Background())
			if layered {
				if err := m.EnableLayers(); err != nil {
					t.Fatal(err)
				}
			}
			const script = `set -e
pwd
git rev-parse HEAD
git log -1 --format=%s
git status --porcelain=v1 --untracked-files=all
git -C /runmill/checkout rev-parse --show-toplevel
if (touch probe) 2>/dev/null || (touch .git/probe) 2>/dev/null; then echo WRITABLE; fi
printf '<testsuite/>' > reports/x.xml
`
			var dirs []string
			for _, c := range []struct{ commit, subject string }{{base, "base"}, {candidate, "candidate"}} {
				co, err := m.Create(context.Background(), c.commit)
				if err != nil {
					t.Fatal(err)
				}
				defer co.Remove()
				if co.Mounted() != layered {
					t.Fatalf("checkout mounted %v, want layered %v", co.Mounted(), layered)
				}
				dirs = append(dirs, co.Dir)
				if err := os.MkdirAll(filepath.Join(co.Dir, "reports"), 0o755); err != nil {
					t.Fatal(err)
				}
				report := filepath.Join(co.Dir, "reports", "x.xml")
				if err := os.WriteFile(report, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				res := run(t, sandbox.Spec{
					Command: script, Checkout: co.Dir, ReadOnly: co.ReadOnlyPaths(),
					Env: checkouts.GitEnv(), ReportFile: report,
				})
				want := strings.Join([]string{sandbox.CheckoutPath, c.commit, c.subject, sandbox.CheckoutPath}, "\n") + "\n"
				if got := string(res.Stdout.Kept); res.ExitCode != 0 || got != want {
					t.Errorf("%s: exit %d, stdout\n%s\nwant\n%s\nstderr %s", c.subject, res.ExitCode, got, want, res.Stderr.Kept)
				}
				if got, _ := os.ReadFile(report); string(got) != "<testsuite/>" {
					t.Errorf("%s: host report %q", c.subject, got)
				}
			}
			if dirs[0] == dirs[1] {
				t.Fatalf("base and candidate share the host path %s: the test proves nothing", dirs[0])
			}
		})
	}
}

// gitRepo makes a repository with two commits, base and candidate.
func gitRepo(t *testing.T) (dir, base, candidate string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "repo")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(filepath.Join(dir, "test"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main")
	write(".gitignore", "node_modules/\nreports/\n")
	write("test/helpers.js", "module.exports = {}\n")
	write("README.md", "base\n")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base = git("rev-parse", "HEAD")
	write("README.md", "candidate: docs only\n")
	git("commit", "-q", "-am", "candidate")
	return dir, base, git("rev-parse", "HEAD")
}

// TestNodeJUnitIDsAgree is issue #12's false alarm at its source: Node
// 20's JUnit reporter names a test-less file under test/ by its absolute
// path, so two checkouts at different host paths used to report different
// ids for the same tree. At the fixed path they report the same ones.
func TestNodeJUnitIDsAgree(t *testing.T) {
	needSandbox(t)
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed on this host: nothing to run the reporter with")
	}
	names := regexp.MustCompile(`<testcase name="([^"]*)"[^>]* classname="([^"]*)"`)
	var ids [2][]string
	for i := range ids {
		dir := filepath.Join(t.TempDir(), "checkouts", "s1019"+strconv.Itoa(i), "co")
		for name, content := range map[string]string{
			"test/helpers.js":   "module.exports = {}\n",
			"test/add.test.js":  "const test = require('node:test');\ntest('adds', () => {});\n",
			"reports/unit.xml":  "",
			"package.json":      `{"name": "x", "private": true}` + "\n",
			"node_modules/.dir": "",
		} {
			p := filepath.Join(dir, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		report := filepath.Join(dir, "reports", "unit.xml")
		res := run(t, sandbox.Spec{
			Command:  "node --test --test-reporter=junit --test-reporter-destination=reports/unit.xml",
			Checkout: dir, ReadOnly: []string{dir}, ReportFile: report,
		})
		b, _ := os.ReadFile(report)
		if res.ExitCode != 0 {
			t.Fatalf("node --test: exit %d, stderr %s\nreport %s", res.ExitCode, res.Stderr.Kept, b)
		}
		for _, m := range names.FindAllStringSubmatch(string(b), -1) {
			ids[i] = append(ids[i], m[2]+"::"+m[1])
		}
		slices.Sort(ids[i])
	}
	want := []string{"test::" + sandbox.CheckoutPath + "/test/helpers.js", "test::adds"}
	for i := range ids {
		if !slices.Equal(ids[i], want) {
			t.Errorf("checkout %d: ids %q, want %q", i, ids[i], want)
		}
	}
}

// TestCopyOnWriteView: a View with Upper is an overlay in the task. The
// task adds entries at its top level (vite's .vite-temp, a .cache) into
// the upper directory; the lower layer — the prepared install, root's and
// read-only as deps makes it — is never written, and with the upper's root
// sticky and root's, as deps makes it, no installed entry can be renamed
// or removed either.
func TestCopyOnWriteView(t *testing.T) {
	needSandbox(t)
	tmp := t.TempDir()
	lower, upper, work := filepath.Join(tmp, "lower"), filepath.Join(tmp, "upper"), filepath.Join(tmp, "work")
	for _, d := range []string{filepath.Join(lower, "pkg"), upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(lower, "pkg", "index.js"), []byte("view\n"), 0o444)
	os.Chmod(filepath.Join(lower, "pkg"), 0o555)
	os.Chmod(lower, 0o555)
	if err := os.Chmod(upper, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	const script = `cat node_modules/pkg/index.js
mkdir node_modules/.vite-temp && echo tmp > node_modules/.vite-temp/config.mjs && cat node_modules/.vite-temp/config.mjs
(echo x > node_modules/pkg/index.js) 2>/dev/null && echo FILE-WRITABLE
(mkdir node_modules/pkg/new) 2>/dev/null && echo PACKAGE-WRITABLE
(mv node_modules/pkg node_modules/moved) 2>/dev/null && echo RENAMED
(rm -rf node_modules/pkg) 2>/dev/null; [ -e node_modules/pkg/index.js ] || echo REMOVED
`
	dir := checkout(t)
	if err := os.Mkdir(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, lower, "")
	res := run(t, sandbox.Spec{
		Command:  script,
		Checkout: dir,
		ReadOnly: []string{dir, filepath.Join(dir, ".git")},
		Views:    []sandbox.View{{Source: lower, Destination: filepath.Join(dir, "node_modules"), Upper: upper, Work: work}},
	})
	if out, want := string(res.Stdout.Kept), "view\ntmp\n"; res.ExitCode != 0 || out != want {
		t.Errorf("exit %d, stdout\n%s\nwant\n%s\nstderr %q", res.ExitCode, out, want, res.Stderr.Kept)
	}
	if after := snapshot(t, lower, ""); after != before {
		t.Errorf("the lower layer changed:\nbefore %s\nafter  %s", before, after)
	}
	if b, err := os.ReadFile(filepath.Join(upper, ".vite-temp", "config.mjs")); err != nil || string(b) != "tmp\n" {
		t.Errorf("the write did not land in the upper layer: %q %v", b, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "node_modules")); len(entries) != 0 {
		t.Errorf("the host mount point holds %v", entries)
	}
}
