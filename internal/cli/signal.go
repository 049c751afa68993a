package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// shutdownGrace is how long a command has, after the first SIGTERM or
// SIGINT, to end by itself: the signal cancels its context, and every wait
// of a verification honours it (a check's task is killed and deleted, the
// terminal statement written, in well under a second). Past the grace, or
// at a second signal, runmill exits at once with the command's code for a
// run that produced no answer: whatever still blocks (something no context
// reaches) must not keep it alive, and the next run's sweep removes what
// it left (docs/sandbox.md § Leftovers).
const shutdownGrace = 3 * time.Second

// Main runs one command line as the runmill process, SIGTERM and SIGINT
// included, and returns the exit code.
func Main(args []string, s IO) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return interruptible(sigs, shutdownGrace, s, args, func(ctx context.Context) int { return Run(ctx, args, s) })
}

// interruptible runs run, cancelling its context at the first signal (the
// cause names it) and returning without it at a second signal or once
// grace has passed since the first.
func interruptible(sigs <-chan os.Signal, grace time.Duration, s IO, args []string, run func(context.Context) int) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan int, 1)
	go func() { done <- run(ctx) }()
	var sig os.Signal
	select {
	case code := <-done:
		return code
	case sig = <-sigs:
		cancel(fmt.Errorf("runmill received %v", sig))
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case code := <-done:
		return code
	case again := <-sigs:
		fmt.Fprintf(s.Err, "runmill: %v after %v: exiting now; the next run's sweep removes what this one leaves\n", again, sig)
	case <-timer.C:
		fmt.Fprintf(s.Err, "runmill: still running %s after %v: exiting now; the next run's sweep removes what this one leaves\n", grace, sig)
	}
	return interruptedCode(args)
}

// interruptedCode is the exit code of a command that ended without an
// answer because it was interrupted: what its own cancellation error maps
// to (exit.go), 3 for verify.
func interruptedCode(args []string) int {
	c, _ := lookup(args)
	if c == nil {
		return exitUsage
	}
	return exitCode(c.exit, context.Canceled)
}
