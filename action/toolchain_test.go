package action_test

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/testreq"

	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/sandbox"
)

// TestJobToolchain (issue 27): the checks run on the job's toolchains as a
// GitHub-hosted runner lays them out, with no host_paths entry for the tool
// cache. setup-go's Go lives under RUNNER_TOOL_CACHE and is first on PATH
// (its GITHUB_PATH addition); the image's default Go is another install
// there, reached through a symlink in a bin directory the sandbox binds, as
// /usr/bin/go is on ubuntu-24.04. The check that runs go test must get
// setup-go's Go, the other check the symlinked gofmt; the job's PATH is the
// same after the action, and an install PATH does not reach stays hidden.
func TestJobToolchain(t *testing.T) {
	testreq.Slow(t, "compiles the standard library cold in the sandbox, twice")
	if containerdAddress == "" {
		t.Skip(noSandbox)
	}
	goroot := strings.TrimSpace(run(t, "", "go", "env", "GOROOT"))
	// A tool cache of two Go installs (hard links of this machine's Go:
	// the go command finds its GOROOT from its own path, so each install
	// is a Go of its own), readable by the sandbox's user.
	host, err := os.MkdirTemp("", "runmill-runner-image-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(host) })
	tc := filepath.Join(host, "hostedtoolcache")
	// An install no PATH entry reaches: the sandbox must not see it.
	unused := filepath.Join(tc, "node", "22.1.0", "x64", "bin")
	if err := os.MkdirAll(unused, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(unused, "node"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	setupGo, imageGo := filepath.Join(tc, "go", "1.26.8", "x64"), filepath.Join(tc, "go", "1.25.0", "x64")
	for _, d := range []string{setupGo, imageGo} {
		if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-al", goroot, d).CombinedOutput(); err != nil {
			if out, err := exec.Command("cp", "-a", goroot, d).CombinedOutput(); err != nil {
				t.Fatalf("copying %s: %v %s", goroot, err, out)
			}
			t.Logf("cp -al: %s (copied instead)", out)
		}
	}
	// The stand-in for /usr/bin: bound through host_paths like /usr is,
	// holding only symlinks into the cache.
	usrbin := filepath.Join(host, "usr", "bin")
	if err := os.MkdirAll(usrbin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"go", "gofmt"} {
		if err := os.Symlink(filepath.Join(imageGo, "bin", name), filepath.Join(usrbin, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(host, 0o755); err != nil {
		t.Fatal(err)
	}

	r := gittest.New(t)
	// One check (a check without a report would be unproven): the
	// image's gofmt through the bound symlink, the unreached install
	// hidden, then go test on setup-go's Go.
	r.Write(".runmill/checks.yaml", `checks:
  - id: unit
    run: >-
      test ! -e `+unused+`/node &&
      test "$(readlink -f `+usrbin+`/gofmt)" = `+imageGo+`/bin/gofmt && test -z "$(`+usrbin+`/gofmt -l .)" &&
      test "$(go env GOROOT)" = `+setupGo+` && go test -json ./... > reports/unit.json
    report: {path: reports/unit.json, format: go-json}
    timeout: 900s
`)
	r.Write("go.mod", "module example.com/shop\n\ngo 1.26\n")
	r.Write("shop.go", "package shop\n\nfunc Total(a, b int) int { return a + b }\n")
	r.Write("shop_test.go", "package shop\n\nimport \"testing\"\n\nfunc TestTotal(t *testing.T) {\n\tif Total(1, 2) != 3 {\n\t\tt.Fatal(\"1+2\")\n\t}\n}\n")
	f := fixture{dir: r.Dir}
	f.base = r.Commit("base")
	r.Checkout("good", true)
	r.Write("shop_test.go", "package shop\n\nimport \"testing\"\n\nfunc TestTotal(t *testing.T) {\n\tif Total(1, 2) != 3 {\n\t\tt.Fatal(\"1+2\")\n\t}\n}\n\nfunc TestZero(t *testing.T) {\n\tif Total(0, 0) != 0 {\n\t\tt.Fatal(\"0+0\")\n\t}\n}\n")
	f.good = r.Commit("good: a test more")
	pullMerge(t, r, &f)

	var hostPaths []string
	for _, d := range sandbox.DefaultHostPaths {
		if _, err := os.Stat(d); err == nil {
			hostPaths = append(hostPaths, d)
		}
	}
	hostPaths = append(hostPaths, usrbin) // not the tool cache
	j := newJob(t, f, "pull_request", f.good, map[string]string{
		"policy":             "sandbox:\n  host_paths: [" + strings.Join(hostPaths, ", ") + "]\n",
		"containerd-address": containerdAddress,
		"github-token":       "",
	})
	j.env["RUNNER_TOOL_CACHE"] = tc
	// The workflow's setup-go: its install first on PATH, through
	// GITHUB_PATH; the image's bin directory after it.
	j.path = []string{filepath.Join(setupGo, "bin")}
	j.env["PATH"] = usrbin + ":" + j.env["PATH"]
	envBefore, added := maps.Clone(j.env), slices.Clone(j.path)
	standInBuild(t, j)
	j.run()
	if t.Failed() || j.failed {
		t.Logf("job log:\n%s", j.log.String())
	}
	if out := j.outputs(); out["verdict"] != "merge-ready" {
		t.Fatalf("verdict %q, want merge-ready on the job's toolchains:\n%s", out["verdict"], j.summary.String())
	}
	if !slices.Equal(j.path, added) || !maps.Equal(j.env, envBefore) {
		t.Errorf("the action changed the job's environment: GITHUB_PATH %q (was %q), PATH %q (was %q)", j.path, added, j.env["PATH"], envBefore["PATH"])
	}
}

// run runs a command and returns its stdout.
func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %q: %v", name, args, err)
	}
	return string(out)
}
