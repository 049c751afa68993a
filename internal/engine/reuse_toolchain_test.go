package engine_test

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/sandbox"
)

// writeToolchain extracts a Go toolchain tree (VERSION, bin/go, the
// pkg/tool programs) into root, as actions/setup-go does on every job: the
// same bytes in new files with new modification times.
func writeToolchain(t *testing.T, root string, compile string, mtime time.Time) {
	t.Helper()
	os.RemoveAll(root)
	tools := "pkg/tool/" + runtime.GOOS + "_" + runtime.GOARCH + "/"
	for name, body := range map[string]string{
		"VERSION": "go1.26.8\n", "bin/go": "#!/bin/sh\nexit 3\n",
		tools + "compile": compile, tools + "link": "link", tools + "vet": "vet",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBaselineReusedAcrossToolchainReextract: the toolchain is named by
// its content, so a Go toolchain extracted afresh between two pushes (new
// files, new mtimes) keeps the baseline reusable, and one changed byte of
// its compiler prevents reuse.
func TestBaselineReusedAcrossToolchainReextract(t *testing.T) {
	k := newReuseKey(t)
	r, base := shopRepo(t, tapPolicy)
	cand1, cand2, cand3 := push(r, base, "push1"), push(r, base, "push2"), push(r, base, "push3")
	goroot := filepath.Join(t.TempDir(), "hostedtoolcache", "go")
	day := time.Date(2026, 8, 28, 16, 20, 6, 0, time.UTC)
	writeToolchain(t, goroot, "compile v1", day)
	// The task's PATH finds this go first: its directory is bound in and
	// leads the host's PATH.
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	paths := slices.DeleteFunc(slices.Clone(sandbox.DefaultHostPaths), func(p string) bool { _, err := os.Stat(p); return err != nil })
	if err := os.WriteFile(pol, []byte("sandbox:\n  host_paths: ["+strings.Join(append(paths, goroot), ", ")+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Join(goroot, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	state := t.TempDir()
	opts := func(o *engine.VerifyOptions) { o.SigningKey, o.StateDir, o.Discover.PolicyFile = k.key, state, pol }

	first := verify(t, r, base, cand1, opts)
	if b := baselineOf(t, first); b.ReusedFrom != nil || !first.MergeReady() {
		t.Fatalf("first run: reused %+v, merge-ready %v:\n%s", b.ReusedFrom, first.MergeReady(), strings.Join(rules(first), "\n"))
	}

	writeToolchain(t, goroot, "compile v1", day.Add(24*time.Hour))
	second := verify(t, r, base, cand2, opts)
	if b := baselineOf(t, second); b.ReusedFrom == nil || b.InputKey != baselineOf(t, first).InputKey {
		t.Errorf("the re-extracted toolchain: baseline not reused (key %s, first %s)", b.InputKey, baselineOf(t, first).InputKey)
	}
	if !second.MergeReady() {
		t.Fatalf("second run not merge-ready:\n%s", strings.Join(rules(second), "\n"))
	}

	writeToolchain(t, goroot, "compile v2", day.Add(24*time.Hour))
	third := verify(t, r, base, cand3, opts)
	if b := baselineOf(t, third); b.ReusedFrom != nil {
		t.Errorf("another compiler (one byte): baseline reused from %+v", b.ReusedFrom)
	}
	if !third.MergeReady() {
		t.Fatalf("third run not merge-ready:\n%s", strings.Join(rules(third), "\n"))
	}
}
