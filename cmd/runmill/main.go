// Command runmill decides whether a change is merge-ready from evidence.
package main

import (
	"os"
	"runtime/debug"

	"github.com/runmill/verify/internal/cli"
	// The hidden in-task init mode (`runmill __task-init …`, PID 1 of every
	// sandbox task) is dispatched by this package's init, before main and
	// the CLI, so it never appears in --help (docs/sandbox.md § Leftovers).
	_ "github.com/runmill/verify/internal/taskinit"
)

// softMemoryLimit makes the collector work harder before the heap grows
// past it (it is not a cap): a run at the report budget peaks at about
// 488 MB with it and 771 MB without (docs/benchmarks.md § Report budget).
// GOMEMLIMIT overrides it.
const softMemoryLimit = 400 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(softMemoryLimit)
	}
	os.Exit(cli.Main(os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
