// Package cli is runmill's command line: flag parsing per command, and the one
// place (exit.go) that maps errors to exit codes.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/runmill/verify/pkg/rmerr"
)

// IO is the process's standard streams; tests pass buffers.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// command is one entry of the DESIGN.md command table.
type command struct {
	name    string // "manifest", "evidence verify"
	usage   string // one line: flags
	summary string
	long    string
	// run parses args itself (through newFlags) and does the work.
	run func(ctx context.Context, s IO, args []string) error
}

var commands []*command

func register(c *command) { commands = append(commands, c) }

func lookup(args []string) (*command, []string) {
	// Longest name match first, so "evidence verify" wins over "evidence".
	var best *command
	var bestLen int
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(words) > len(args) || len(words) <= bestLen {
			continue
		}
		match := true
		for i, w := range words {
			if args[i] != w {
				match = false
				break
			}
		}
		if match {
			best, bestLen = c, len(words)
		}
	}
	if best == nil {
		return nil, args
	}
	return best, args[bestLen:]
}

// Run executes one command line and returns the process exit code.
func Run(ctx context.Context, args []string, s IO) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 {
			if c, _ := lookup(args[1:]); c != nil {
				printCommandHelp(s.Out, c, nil)
				return 0
			}
		}
		printOverview(s.Out)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "version" {
		fmt.Fprintln(s.Out, "runmill", Version)
		return 0
	}
	c, rest := lookup(args)
	if c == nil {
		err := rmerr.New(rmerr.Usage, "unknown command %q", strings.Join(args[:min(2, len(args))], " ")).
			WithHint("run 'runmill --help' for the list of commands")
		fmt.Fprintln(s.Err, "runmill:", err)
		return exitUsage
	}
	err := c.run(ctx, s, rest)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	code := exitCode(c.name, err)
	if err != nil && !errors.Is(err, errAnswered) {
		fmt.Fprintf(s.Err, "runmill %s: %v\n", c.name, err)
	}
	return code
}

// Version is set at build time with -ldflags "-X github.com/runmill/verify/internal/cli.Version=…".
var Version = "dev"

func printOverview(w io.Writer) {
	fmt.Fprintln(w, "runmill decides whether a change is merge-ready from evidence.")
	fmt.Fprintln(w, "\nUsage: runmill COMMAND [flags]\n\nCommands:")
	sorted := append([]*command(nil), commands...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	for _, c := range sorted {
		fmt.Fprintf(w, "  %-18s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'runmill COMMAND --help' for a command's flags.")
}

func printCommandHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: runmill %s %s\n\n%s\n", c.name, c.usage, c.summary)
	if c.long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.long))
	}
	if fs != nil {
		fmt.Fprintln(w, "\nFlags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

// newFlags returns a FlagSet for c whose errors are usage errors and whose
// -h prints the command's help to stdout.
func newFlags(c *command, s IO) *flag.FlagSet {
	fs := flag.NewFlagSet("runmill "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() { printCommandHelp(s.Out, c, fs) }
	return fs
}

// parse parses args into fs and turns flag errors into usage errors. Every
// command takes its positional arguments after the flags or between them.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.Usage()
				return nil, flag.ErrHelp
			}
			return nil, rmerr.Wrap(rmerr.Usage, err, "parsing flags").WithHint("run '%s --help'", fs.Name())
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// required reports a usage error naming every missing flag.
func required(fs *flag.FlagSet, names ...string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var missing []string
	for _, n := range names {
		if !set[n] {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return rmerr.New(rmerr.Usage, "missing required flag(s) %s", strings.Join(missing, ", ")).
			WithHint("run '%s --help'", fs.Name())
	}
	return nil
}

func noPositional(fs *flag.FlagSet, pos []string) error {
	if len(pos) > 0 {
		return rmerr.New(rmerr.Usage, "unexpected argument %q", pos[0]).WithHint("run '%s --help'", fs.Name())
	}
	return nil
}
