package testreq

import (
	"runtime"
	"testing"
)

// recorder is a testing.TB that records how a need ended; Skip and Fatal
// stop the goroutine as the real ones do.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()                          {}
func (r *recorder) Skip(args ...any)                 { r.skipped = true; runtime.Goexit() }
func (r *recorder) Skipf(format string, args ...any) { r.skipped = true; runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = true
	runtime.Goexit()
}

func run(f func(t testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() { defer close(done); f(r) }()
	<-done
	return r
}

// TestNeed: a met need does nothing; an unmet one skips, and fails under
// CI=true — the one thing the package exists for.
func TestNeed(t *testing.T) {
	for _, tc := range []struct {
		ci, ok              bool
		wantSkip, wantFatal bool
	}{
		{false, true, false, false},
		{true, true, false, false},
		{false, false, true, false},
		{true, false, false, true},
	} {
		if tc.ci {
			t.Setenv("CI", "true")
		} else {
			t.Setenv("CI", "")
		}
		r := run(func(tb testing.TB) { Need(tb, tc.ok, "a part") })
		if r.skipped != tc.wantSkip || r.failed != tc.wantFatal {
			t.Errorf("CI=%v ok=%v: skipped %v failed %v, want %v %v", tc.ci, tc.ok, r.skipped, r.failed, tc.wantSkip, tc.wantFatal)
		}
	}
}

func TestTool(t *testing.T) {
	t.Setenv("CI", "true")
	if r := run(func(tb testing.TB) { Tool(tb, "runmill-no-such-tool") }); !r.failed {
		t.Error("a missing tool under CI=true did not fail")
	}
	var got []string
	if r := run(func(tb testing.TB) { got = Tool(tb, "sh") }); r.failed || r.skipped || len(got) != 1 || got[0] == "" {
		t.Errorf("sh: %v, failed %v skipped %v", got, r.failed, r.skipped)
	}
}
