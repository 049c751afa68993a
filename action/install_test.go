package action_test

// The runmill the Build step installs (issue 23): root-owned, run by
// absolute path, and the stand-in the cheaper tests use for that step.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// installedRunmill is one runmill the real Build step installed, shared by
// the tests that stand in for that step (a build per subtest would cost
// minutes); testMain removes it.
var shared struct {
	once      sync.Once
	bin, home string
	log       string
}

func installedRunmill(t *testing.T) string {
	t.Helper()
	shared.once.Do(func() {
		j := newJob(t, fixture{dir: t.TempDir()}, "push", "", map[string]string{})
		buildOnly(j)
		j.run()
		r := j.ran[stepBuild]
		shared.log = r.Log
		if r.Outcome == "success" {
			shared.bin, shared.home = r.Outputs["runmill"], r.Outputs["home"]
		}
	})
	if shared.bin == "" {
		t.Fatalf("the Build step failed:\n%s", shared.log)
	}
	return shared.bin
}

// buildOnly cancels every step but the Install, cache and Build steps,
// which keep their own conditions.
func buildOnly(j *job) {
	for i := range j.action.Runs.Steps {
		switch i {
		case stepInstall, stepRestore, stepBuild, stepSave:
		default:
			j.action.Runs.Steps[i].If = "cancelled()"
		}
	}
}

// standInBuild replaces the Build step with one that hands on the shared
// installed runmill as its output, and always runs.
func standInBuild(t *testing.T, j *job) {
	t.Helper()
	bin := installedRunmill(t)
	s := &j.action.Runs.Steps[stepBuild]
	// The build's cache directory exists after a build, for the save.
	s.Run = `if [ -n "${RUNMILL_CACHE_DIR:-}" ]; then mkdir -p -- "$RUNMILL_CACHE_DIR"; fi; echo "runmill=` + bin + `" >>"$GITHUB_OUTPUT"`
	s.If = "always()"
}

// TestInstalledRunmill: the verify step runs only the runmill the Build
// step installed — a file root owns in directories only root can write,
// named without a symlink — and refuses any other it is handed, before
// sudo.
func TestInstalledRunmill(t *testing.T) {
	f := shop(t)
	real := installedRunmill(t)
	dir := t.TempDir() // under /tmp, which everyone can write
	copied := filepath.Join(dir, "runmill")
	b, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copied, b, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	writable := filepath.Join(filepath.Dir(real), "..", "writable")
	for _, tc := range []struct{ name, bin, want string }{
		{"no build", "", "no installed runmill: the Build runmill step did not run or failed"},
		{"a directory others can write", copied, "/tmp is owned by uid 0 with mode 1777"},
		{"a symlink", link, "is missing or reached through a symlink"},
		{"a path with ..", writable + "/../" + filepath.Base(filepath.Dir(real)) + "/runmill", "reached through a symlink"},
		{"the installed one", real, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(t, f, "pull_request", f.good, map[string]string{"github-token": ""})
			j.env["RUNMILL_TEST_SUDO"] = "deny"
			for i := range j.action.Runs.Steps {
				j.action.Runs.Steps[i].If = "cancelled()"
			}
			s := &j.action.Runs.Steps[stepBuild]
			s.Run, s.If = `echo "runmill=`+tc.bin+`" >>"$GITHUB_OUTPUT"`, "always()"
			j.action.Runs.Steps[stepVerify].If = "always()"
			j.run()
			r, sudo := j.ran[stepVerify], j.sudoLog()
			if tc.want == "" {
				if !strings.Contains(sudo, " "+real+" verify ") {
					t.Errorf("the installed runmill was not run:\n%s\n%s", sudo, r.Log)
				}
				return
			}
			if r.Outcome != "failure" || !slices.ContainsFunc(r.Annotations, func(a string) bool { return strings.HasPrefix(a, "error runmill (RM-ACTIONS-002): ") }) || !strings.Contains(r.Log, tc.want) {
				t.Errorf("verify %s, annotations %q, want %q", r.Outcome, r.Annotations, tc.want)
			}
			if strings.Contains(sudo, "runmill") {
				t.Errorf("sudo ran:\n%s", sudo)
			}
		})
	}
}
