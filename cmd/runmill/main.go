// Command runmill decides whether a change is merge-ready from evidence.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/runmill/verify/internal/cli"
	// The hidden in-task init mode (`runmill __task-init …`, PID 1 of every
	// sandbox task) is dispatched by this package's init, before main and
	// the CLI, so it never appears in --help (docs/sandbox.md § Leftovers).
	_ "github.com/runmill/verify/internal/taskinit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
