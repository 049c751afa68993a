package action_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/githubtest"
)

// releasedAction lays out the action as its release commit has it: the
// action's files and runmill's source, and the checksums/SHA256SUMS the
// release process commits before tagging (docs/action.md § Releasing).
func releasedAction(t *testing.T, sums string) string {
	t.Helper()
	src, dst := actionRoot(t), t.TempDir()
	if out, err := exec.Command("cp", "-a", filepath.Join(src, "cmd"), filepath.Join(src, "internal"), filepath.Join(src, "pkg"), dst).CombinedOutput(); err != nil {
		t.Fatalf("copying the source: %v %s", err, out)
	}
	files := []string{"action.yml", "go.mod", "go.sum", "action/go-toolchain.sha256"}
	scripts, _ := filepath.Glob(filepath.Join(src, "action", "*.sh"))
	for _, s := range scripts {
		files = append(files, filepath.Join("action", filepath.Base(s)))
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dst, "action", "checksums"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "action", "checksums", "SHA256SUMS"), []byte(sums), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestReleasedBinary (issue 27): at a release tag the action installs the
// release's binary for the runner, downloaded from the action's own
// repository, only when it matches the checksums committed in the action;
// otherwise it refuses, before anything is installed or built. A release
// not yet downloadable falls back to building that version from source,
// which must then give the release's bytes (the build is reproducible):
// here it cannot, since the stand-in release is another build.
func TestReleasedBinary(t *testing.T) {
	asset, err := os.ReadFile(installedRunmill(t)) // a real runmill build stands in for the release's
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(asset)
	name := "runmill_v1.2.3_linux_" + runtime.GOARCH
	sums := hex.EncodeToString(sum[:]) + "  " + name + "\n" +
		strings.Repeat("0", 64) + "  runmill_v1.2.3_linux_" + map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH] + "\n"
	dir := releasedAction(t, sums)
	download := "/runmill/verify/releases/download/v1.2.3/" + name
	blob := "/github-production-release-asset/771234567/" + name

	for _, tc := range []struct {
		name, ref string
		serve     []githubtest.Exchange
		want      string // in the step's log; "" installs the release
		build     bool   // the Build step builds from source
	}{
		{"matching", "v1", []githubtest.Exchange{
			{Path: download, Status: 302, NoAuth: true, Header: map[string]string{"Location": "{base}" + blob}},
			{Path: blob, Status: 200, NoAuth: true, Body: asset, Header: map[string]string{"Content-Type": "application/octet-stream"}},
		}, "", false},
		{"checksum mismatch", "v1.2.3", []githubtest.Exchange{
			{Path: download, Status: 302, NoAuth: true, Header: map[string]string{"Location": "{base}" + blob}},
			{Path: blob, Status: 200, NoAuth: true, Body: append(slices.Clip(asset), 0), Header: map[string]string{"Content-Type": "application/octet-stream"}},
		}, "error runmill (RM-ACTIONS-004): http://", false},
		{"tag of another release", "v1.2.4", nil, "error runmill (RM-ACTIONS-004): the action's tag is v1.2.4 but its checksums are those of v1.2.3", false},
		{"not published yet", "v1.2.3", []githubtest.Exchange{{Path: download, Status: 404, NoAuth: true}}, "warning runmill: could not download", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := githubtest.New(t)
			for _, e := range tc.serve {
				gh.Add(e)
			}
			j := newJob(t, fixture{dir: t.TempDir()}, "push", "", map[string]string{})
			j.actionPath, j.actionRef, j.actionRepo = dir, tc.ref, "runmill/verify"
			j.action = loadAction(t, filepath.Join(dir, "action.yml"))
			j.env["GITHUB_SERVER_URL"] = gh.URL()
			buildOnly(j)
			j.run()
			r := j.ran[stepInstall]
			home := r.Outputs["home"]
			if home != "" {
				t.Cleanup(func() { os.RemoveAll(home) })
			}
			switch {
			case tc.build:
				if r.Outcome != "success" || r.Outputs["build"] != "true" || r.Outputs["version"] != "v1.2.3" || home != "" ||
					!slices.ContainsFunc(r.Annotations, func(a string) bool { return strings.HasPrefix(a, tc.want) }) {
					t.Errorf("install %s, outputs %q, annotations %q:\n%s", r.Outcome, r.Outputs, r.Annotations, r.Log)
				}
				b := j.ran[stepBuild]
				if b.Outcome != "failure" || !strings.Contains(b.Log, "runmill v1.2.3\n") ||
					!slices.ContainsFunc(b.Annotations, func(a string) bool {
						return strings.HasPrefix(a, "error runmill (RM-ACTIONS-004): runmill built from this release commit has SHA-256 ")
					}) || b.Outputs["runmill"] != "" {
					t.Errorf("the fallback build of v1.2.3 %s, outputs %q, annotations %q:\n%s", b.Outcome, b.Outputs, b.Annotations, b.Log)
				}
			case tc.want != "":
				if r.Outcome != "failure" || !slices.ContainsFunc(r.Annotations, func(a string) bool { return strings.HasPrefix(a, tc.want) }) {
					t.Errorf("install %s, annotations %q, want %q:\n%s", r.Outcome, r.Annotations, tc.want, r.Log)
				}
				if tc.serve != nil {
					bad := sha256.Sum256(tc.serve[1].Body)
					if !strings.Contains(r.Log, "has SHA-256 "+hex.EncodeToString(bad[:])+", but the action's checksums/SHA256SUMS at this ref says "+hex.EncodeToString(sum[:])) {
						t.Errorf("the refusal does not name both digests:\n%s", r.Log)
					}
				}
				if home != "" || strings.Contains(j.sudoLog(), "install -o root") || j.ran[stepBuild].Outcome != "skipped" {
					t.Errorf("installed %q or built (%s) after a refusal; sudo:\n%s", home, j.ran[stepBuild].Outcome, j.sudoLog())
				}
			default:
				bin := j.ran[stepBuild].Outputs["runmill"]
				got, err := os.ReadFile(bin)
				if r.Outcome != "success" || r.Outputs["build"] != "false" || bin != home+"/runmill" || err != nil || !bytes.Equal(got, asset) {
					t.Fatalf("install %s, outputs %q, build outputs %q (%v):\n%s", r.Outcome, r.Outputs, j.ran[stepBuild].Outputs, err, r.Log)
				}
				if !strings.HasPrefix(home, "/var/lib/runmill-action/job.") || !strings.Contains(r.Log, name+" matches the action's checksums") {
					t.Errorf("installed at %q:\n%s", home, r.Log)
				}
				if j.ran[stepRestore].Outcome != "skipped" || j.ran[stepSave].Outcome != "skipped" {
					t.Errorf("the build cache was used with a release installed: %s, %s", j.ran[stepRestore].Outcome, j.ran[stepSave].Outcome)
				}
			}
		})
	}
}

// TestGoToolchainPin: the Go the action builds runmill with is go.mod's,
// pinned for both released architectures; a Go bump that forgets the pin
// (or the pin's other architecture) fails here, not in a user's job.
func TestGoToolchainPin(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join(actionRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if goLine == nil {
		t.Fatal("go.mod has no go line")
	}
	pins, err := os.ReadFile(filepath.Join(actionRoot(t), "action", "go-toolchain.sha256"))
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^[0-9a-f]{64}  golang\.org/toolchain@v0\.0\.1-go` + regexp.QuoteMeta(string(goLine[1])) + `\.linux-(amd64|arm64)\.zip$`)
	var arches []string
	for _, m := range want.FindAllSubmatch(pins, -1) {
		arches = append(arches, string(m[1]))
	}
	slices.Sort(arches)
	if lines := strings.Count(strings.TrimSpace(string(pins)), "\n") + 1; !slices.Equal(arches, []string{"amd64", "arm64"}) || lines != 2 {
		t.Errorf("action/go-toolchain.sha256 pins %q for go %s in %d lines, want amd64 and arm64 only:\n%s", arches, goLine[1], lines, pins)
	}
	cmd := exec.Command("bash", "-c", `source action/lib.sh && go_toolchain_version`)
	cmd.Dir = actionRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "go"+string(goLine[1]) {
		t.Errorf("go_toolchain_version = %q, want go%s", got, goLine[1])
	}
}
