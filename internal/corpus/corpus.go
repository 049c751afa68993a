// Package corpus locates ../shared/corpus, the real reports written by other
// projects' test suites. The files belong to those projects: tests read them
// in place and never copy them into this repository.
package corpus

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir returns the corpus directory. RUNMILL_CORPUS overrides the default
// (<repo>/../shared/corpus). Where it is absent (a user's clone) the test is
// skipped and says so; under CI=true absence is a failure, so CI cannot
// silently stop exercising the corpus.
func Dir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("RUNMILL_CORPUS")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "corpus")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if os.Getenv("CI") == "true" {
			t.Fatalf("corpus not found at %s (set RUNMILL_CORPUS): CI must exercise the shared corpus", dir)
		}
		t.Skipf("corpus not found at %s: this clone has no ../shared; set RUNMILL_CORPUS to run the conformance tests", dir)
	}
	return dir
}
