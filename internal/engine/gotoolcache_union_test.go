package engine_test

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/record"
)

// unionPolicy: "mk" makes, in the sandbox, a build cache holding only the
// module's own package (a copy of the task's GOCACHE, the module built
// into it, the new entries handed out as a base64 tar on stdout); "unit"
// says what its GOCACHE is and how many packages it had to compile.
const unionPolicy = `checks:
  - id: mk
    run: |
      set -e
      c="$TMPDIR/c"
      cp -r "$GOCACHE" "$c"
      chmod -R u+w "$c"
      (cd "$c" && find . -type f | sort) > "$TMPDIR/before"
      GOCACHE="$c" go build -x ./... 2> "$TMPDIR/x"
      (cd "$c" && find . -type f | sort) > "$TMPDIR/after"
      echo "MK-COMPILES $(grep -c '/compile ' "$TMPDIR/x" || true)"
      printf 'TAR '
      comm -13 "$TMPDIR/before" "$TMPDIR/after" | (cd "$c" && tar -cf - -T -) | base64 -w0
      echo
    dependencies: go-modules
    timeout: 600s
  - id: unit
    run: |
      echo "GOCACHE=$GOCACHE"
      go build -x ./... 2> "$TMPDIR/x" || { cat "$TMPDIR/x"; exit 1; }
      echo "COMPILES $(grep -c '/compile ' "$TMPDIR/x" || true)"
      (touch "$GOCACHE/runmill-write-test") 2>/dev/null && echo GOCACHE-WRITABLE
      true
    dependencies: go-modules
    timeout: 600s
`

// TestGoToolchainCacheWithOperatorCache: a Go check given an operator
// build_cache that holds only the module's package also gets the standard
// library from the prepared toolchain cache — it compiles nothing at all,
// where the same check without the operator's cache compiles exactly the
// module's package — through one read-only GOCACHE, and its record's notes
// name both caches.
func TestGoToolchainCacheWithOperatorCache(t *testing.T) {
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		t.Fatalf("this test needs the Go toolchain on the host paths: %v", err)
	}
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", unionPolicy)
	r.Write("go.mod", "module example.com/tc\n\ngo 1.22\n")
	r.Write("tc.go", "package tc\n\nimport \"strings\"\n\nfunc Up(s string) string { return strings.ToUpper(s) }\n")
	base := r.Commit("base")
	r.Write("more.go", "package tc\n\nimport \"fmt\"\n\nfunc Two() string { return fmt.Sprint(2) }\n")
	cand := r.Commit("adds a file")
	modcache := t.TempDir()
	policy := func(build string) func(*engine.VerifyOptions) {
		pol := filepath.Join(t.TempDir(), "policy.yaml")
		doc := "dependencies:\n  go_modules:\n    module_cache: " + modcache + "\n"
		if build != "" {
			doc += "    build_cache: " + build + "\n"
		}
		if err := os.WriteFile(pol, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return func(o *engine.VerifyOptions) { o.Discover.PolicyFile = pol }
	}
	stdout := func(run *engine.Run, id string) (record.CheckRun, string) {
		t.Helper()
		for _, c := range run.Delivery.Checks {
			if c.CheckID == id {
				b, err := os.ReadFile(filepath.Join(run.Dir, "artifacts", c.Stdout.Artifact))
				if err != nil {
					t.Fatal(err)
				}
				if c.ExitCode != 0 {
					t.Fatalf("%s exited %d:\n%s", id, c.ExitCode, outputs(run))
				}
				return c, string(b)
			}
		}
		t.Fatalf("no run of %s:\n%s", id, outputs(run))
		return record.CheckRun{}, ""
	}

	first := verify(t, r, base, cand, policy(""))
	unit, out := stdout(first, "unit")
	if !strings.Contains(out, "COMPILES 1\n") || strings.Contains(out, "GOCACHE=/runmill/gocache") || strings.Contains(out, "WRITABLE") {
		t.Fatalf("without the operator's cache, want the prepared cache alone and one compile (the module's package):\n%s", out)
	}
	if n := toolCacheNote(unit); !strings.HasPrefix(n, "prepared Go toolchain cache") || strings.Contains(n, "operator") {
		t.Errorf("without the operator's cache: note %q", n)
	}
	_, out = stdout(first, "mk")
	if !strings.Contains(out, "MK-COMPILES 1\n") {
		t.Fatalf("mk compiled more than the module's package:\n%.2000s", out)
	}
	m := regexp.MustCompile(`TAR (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("mk printed no archive:\n%.2000s", out)
	}
	operator := t.TempDir()
	if n := untarTo(t, m[1], operator); n == 0 {
		t.Fatal("the module's build added no cache entry")
	}

	second := verify(t, r, base, cand, policy(operator))
	unit, out = stdout(second, "unit")
	if want := "GOCACHE=" + sandbox.GoCachePath + "\nCOMPILES 0\n"; out != want {
		t.Errorf("with the operator's cache: stdout\n%s\nwant\n%s", out, want)
	}
	note := toolCacheNote(unit)
	if !strings.HasPrefix(note, "prepared Go toolchain cache") || !strings.Contains(note, "under the operator's build cache as one GOCACHE") {
		t.Errorf("the note does not say both caches were offered: %q", note)
	}
	if !hasNote(unit, "prepared dependencies go-build:") {
		t.Errorf("no note names the operator's build cache: %q", unit.Notes)
	}
}

func hasNote(c record.CheckRun, substr string) bool {
	for _, n := range c.Notes {
		if strings.Contains(n, substr) {
			return true
		}
	}
	return false
}

// untarTo unpacks the base64 tar of cache files into dir; it returns how
// many files it wrote.
func untarTo(t *testing.T, b64, dir string) int {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(b))
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(h.Name, "./")))
		if h.Typeflag != tar.TypeReg || !strings.HasPrefix(p, dir+"/") {
			t.Fatalf("unexpected entry %q", h.Name)
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		body, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
}
