package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/sandbox"
)

// TestGoCacheLayers: two build caches given as one GOCACHE are seen as
// their union at GoCachePath — each one's entries, the first layer's where
// both hold a name — and nothing can be written into it or through it to
// either host directory; with one cache (no layers) GOCACHE stays its bind.
func TestGoCacheLayers(t *testing.T) {
	s := needSandbox(t)
	if !s.UnionsGoCaches() {
		t.Fatal("this kernel has no overlayfs; the layered GOCACHE cannot be tested")
	}
	dir := t.TempDir()
	operator, prepared := filepath.Join(dir, "operator"), filepath.Join(dir, "prepared")
	for p, body := range map[string]string{
		filepath.Join(operator, "aa", "mod-d"): "module\n",
		filepath.Join(operator, "README"):      "operator\n",
		filepath.Join(prepared, "bb", "std-d"): "std\n",
		filepath.Join(prepared, "README"):      "prepared\n",
	} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const script = `echo "GOCACHE=$GOCACHE"
cat "$GOCACHE/aa/mod-d" "$GOCACHE/bb/std-d" "$GOCACHE/README"
(echo x > "$GOCACHE/new") 2>/dev/null && echo CACHE-WRITABLE
(echo x > "$GOCACHE/README") 2>/dev/null && echo ENTRY-WRITABLE
(mkdir "$GOCACHE/cc") 2>/dev/null && echo DIR-WRITABLE
echo done
`
	res := run(t, sandbox.Spec{Command: script, GoCache: operator, ReadOnly: []string{operator}, GoCacheLayers: []string{prepared}})
	want := "GOCACHE=" + sandbox.GoCachePath + "\nmodule\nstd\noperator\ndone\n"
	if got := string(res.Stdout.Kept); res.ExitCode != 0 || got != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", res.ExitCode, got, want, res.Stderr.Kept)
	}
	for _, p := range []string{filepath.Join(operator, "new"), filepath.Join(prepared, "new"), filepath.Join(operator, "cc")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was made on the host", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(operator, "README")); string(b) != "operator\n" {
		t.Errorf("the operator's README is now %q", b)
	}

	// One cache alone keeps its read-only bind at its host path.
	res = run(t, sandbox.Spec{Command: `echo "$GOCACHE"; cat "$GOCACHE/README"; [ -e "$GOCACHE/bb" ] && echo LAYERED; true`, GoCache: operator, ReadOnly: []string{operator}})
	if got := string(res.Stdout.Kept); got != operator+"\noperator\n" {
		t.Errorf("one cache: stdout %q, stderr %s", got, res.Stderr.Kept)
	}
	if strings.Contains(string(res.Stdout.Kept), "LAYERED") {
		t.Error("a single cache shows another's entries")
	}
}
