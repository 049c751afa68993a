package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptible: the first signal cancels the command's context with a
// cause naming it, and a command that honours it returns its own code; one
// that does not (blocked where no context reaches) is left behind at a
// second signal or once the grace has passed, with the command's code for
// a run without an answer (3 for verify, 2 for a command without one).
func TestInterruptible(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		honour bool // the command returns when its context ends
		again  bool // a second signal follows
		grace  time.Duration
		want   int
		stderr string
	}{
		{"honoured", []string{"verify"}, true, false, time.Hour, 42, ""},
		{"blocked, grace passes", []string{"verify"}, false, false, 50 * time.Millisecond, exitNoAnswer, "still running 50ms after terminated"},
		{"blocked, second signal", []string{"verify"}, false, true, time.Hour, exitNoAnswer, "interrupt after terminated: exiting now"},
		{"blocked, no exit 3", []string{"evidence", "verify"}, false, true, time.Hour, exitUsage, "exiting now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sigs := make(chan os.Signal, 2)
			release := make(chan struct{})
			defer close(release)
			var cause error
			started := make(chan struct{})
			run := func(ctx context.Context) int {
				close(started)
				if tc.honour {
					<-ctx.Done()
					cause = context.Cause(ctx)
					return 42
				}
				<-release // blocked where no context reaches
				return 0
			}
			var errb bytes.Buffer
			got := make(chan int, 1)
			go func() { got <- interruptible(sigs, tc.grace, IO{Err: &errb}, tc.args, run) }()
			<-started
			sigs <- syscall.SIGTERM
			if tc.again {
				sigs <- os.Interrupt
			}
			if code := <-got; code != tc.want {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.want, errb.String())
			}
			if tc.honour && (cause == nil || cause.Error() != "runmill received terminated") {
				t.Errorf("cancellation cause %v", cause)
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr %q, want %q", errb.String(), tc.stderr)
			}
		})
	}
}
