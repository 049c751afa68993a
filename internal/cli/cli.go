// Package cli is runmill's command line. Each command is built by a
// newXCmd(runF) constructor that parses its flags into an options struct and
// hands it to runF, its behaviour (the engine or a package does the work;
// the command prints). Tests pass their own runF to test flag parsing apart
// from behaviour. exit.go is the one place that maps errors to exit codes.
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
	// exit says what this command's errors mean (exit.go).
	exit exitPolicy
	// run parses args into the command's options and calls its behaviour
	// with them.
	run func(ctx context.Context, s IO, args []string) error
}

// commands is the command table, each command with its real behaviour.
var commands = []*command{
	newVerifyCmd(nil), newManifestCmd(nil), newReportInventoryCmd(nil),
	newEvidenceVerifyCmd(nil), newEvidenceKeygenCmd(nil), newEvidenceExpectCmd(nil),
	newEvidenceDownloadCmd(nil), newEvidenceMergeCmd(nil), newInspectCmd(nil),
	newCacheVetCmd(nil), newCacheSealCmd(nil), newCacheKeyCmd(nil),
	newDoctorCmd(nil), newInitCmd(nil), newDepsImportCmd(nil), newSummaryCmd(nil),
}

func lookup(args []string) (*command, []string) {
	// Longest name match first, so "evidence verify" wins over "evidence".
	var best *command
	var bestLen int
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(words) > len(args) || len(words) <= bestLen {
			continue
		}
		if matches(words, args) {
			best, bestLen = c, len(words)
		}
	}
	if best == nil {
		return nil, args
	}
	return best, args[bestLen:]
}

func matches(words, args []string) bool {
	for i, w := range words {
		if args[i] != w {
			return false
		}
	}
	return true
}

// Run executes one command line and returns the process exit code.
func Run(ctx context.Context, args []string, s IO) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		return help(s, args)
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
	code := exitCode(c.exit, err)
	if err != nil && !errors.Is(err, errAnswered) {
		fmt.Fprintf(s.Err, "runmill %s: %v\n", c.name, err)
	}
	return code
}

// help answers `runmill`, `runmill --help` and `runmill help COMMAND`.
func help(s IO, args []string) int {
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

// flags is one command's FlagSet and what parsing it found: the flags given
// and the positional arguments.
type flags struct {
	*flag.FlagSet
	pos []string
}

// newFlags returns a FlagSet for c whose errors are usage errors and whose
// -h prints the command's help to stdout.
func newFlags(c *command, s IO) *flags {
	fs := flag.NewFlagSet("runmill "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() { printCommandHelp(s.Out, c, fs) }
	return &flags{FlagSet: fs}
}

// parse parses args and turns flag errors into usage errors. Every command
// takes its positional arguments after the flags or between them.
func (f *flags) parse(args []string) error {
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return flag.ErrHelp // the flag package has printed the usage
			}
			return rmerr.Wrap(rmerr.Usage, err, "parsing flags").WithHint("run '%s --help'", f.Name())
		}
		rest := f.Args()
		if len(rest) == 0 {
			return nil
		}
		f.pos = append(f.pos, rest[0])
		args = rest[1:]
	}
}

// given returns the names of the flags the command line set.
func (f *flags) given() map[string]bool {
	set := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return set
}

// required reports a usage error naming every missing flag.
func (f *flags) required(names ...string) error {
	return required(f.Name(), f.given(), names...)
}

// required reports a usage error naming every flag of names not in set;
// cmd ("runmill manifest") names the help to read.
func required(cmd string, set map[string]bool, names ...string) error {
	var missing []string
	for _, n := range names {
		if !set[n] {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return rmerr.New(rmerr.Usage, "missing required flag(s) %s", strings.Join(missing, ", ")).
			WithHint("run '%s --help'", cmd)
	}
	return nil
}

func (f *flags) noPositional() error {
	if len(f.pos) > 0 {
		return rmerr.New(rmerr.Usage, "unexpected argument %q", f.pos[0]).WithHint("run '%s --help'", f.Name())
	}
	return nil
}

// parseStrict parses args into f and refuses positional arguments and
// missing required flags: the parse step of most commands.
func (f *flags) parseStrict(args []string, required ...string) error {
	if err := f.parse(args); err != nil {
		return err
	}
	if err := f.noPositional(); err != nil {
		return err
	}
	return f.required(required...)
}
