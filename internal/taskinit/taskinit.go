// Package taskinit is the first process of every sandbox task: runmill's own
// binary, bound read-only into the task and started in the hidden mode Arg.
// It starts the check's command, reaps orphans, forwards the command's exit
// status, and exits at the run's time limit or as soon as the runmill that
// started the task is gone. Being PID 1 of the task's pid namespace is what
// makes exiting enough: when PID 1 exits the kernel kills every other process
// of the namespace. So a check never outlives its limit, nor (by more than
// the time the kernel takes to close a dead process's files) its runmill —
// even when nothing outside the task is left to kill it (issue #13, S2).
//
// The init needs no privilege: it runs as the task's user with no
// capabilities and no-new-privileges, exactly like the command. It prints
// nothing except on its own failure (a line starting with Marker on stderr).
package taskinit

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

const (
	// Arg is the hidden mode: argv[1] of the init. Not a CLI command, so it
	// appears in no help text.
	Arg = "__task-init"
	// Dir holds the init's files inside the task, a path no toolchain or
	// checkout uses.
	Dir = "/.runmill"
	// Path is where the init binary is bound in the task.
	Path = Dir + "/init"
	// LifelinePath is where the lifeline FIFO is bound in the task. runmill
	// holds it open for writing for its whole life; the init reading
	// end-of-file means every writer is gone, so runmill is.
	LifelinePath = Dir + "/lifeline"
	// ExitKilled is the exit code when the init ends the task itself (limit
	// reached, runmill gone): what a task killed with SIGKILL from outside
	// reports, so a timeout is recorded identically whichever side ended it.
	ExitKilled = 128 + int(syscall.SIGKILL)
	// ExitInitFailed is the exit code when the init itself cannot work
	// (bad arguments, no lifeline, command not startable). Its stderr line
	// says why.
	ExitInitFailed = 125
	// Marker starts every line the init writes.
	Marker = "runmill-task-init: "
)

// Args is the task's process: the init at Path, which runs argv with a time
// limit counted from its own start.
func Args(limit time.Duration, argv ...string) []string {
	return append([]string{Path, Arg, "--limit", limit.String(), "--lifeline", LifelinePath, "--"}, argv...)
}

// Every binary that links the sandbox (runmill, and each test binary that
// runs tasks) is the init the sandbox binds into its tasks, so the mode is
// selected here, when the sandbox's packages initialize, rather than in one
// main: a test binary would otherwise run its tests inside the task.
func init() {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		os.Exit(Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
}

// Main runs the init with the arguments after Arg and returns its exit code.
func Main(args []string, stdin, stdout, stderr *os.File) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "%s%v\n", Marker, err)
		return ExitInitFailed
	}
	cfg, err := parse(args)
	if err != nil {
		return fail(err)
	}
	// Outside a pid namespace of its own, exiting would leave the command's
	// children running: refuse rather than promise what does not hold.
	if os.Getpid() != 1 {
		return fail(errors.New("must run as PID 1 of a task's pid namespace; it is started by the sandbox, not by hand"))
	}
	code, _, err := run(cfg, stdin, stdout, stderr)
	if err != nil {
		return fail(err)
	}
	return code
}

// config is the init's parsed command line.
type config struct {
	limit    time.Duration
	lifeline string
	argv     []string
}

// parse reads `--limit D --lifeline PATH -- ARGV…`, the exact shape Args
// writes; anything else is refused, never guessed.
func parse(args []string) (config, error) {
	var c config
	seen := map[string]bool{}
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			c.argv = args[1:]
			break
		}
		if len(args) < 2 {
			return c, fmt.Errorf("argument %q: missing value or \"--\"", a)
		}
		if seen[a] {
			return c, fmt.Errorf("%s given twice", a)
		}
		seen[a] = true
		v := args[1]
		switch a {
		case "--limit":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return c, fmt.Errorf("--limit %q is not a positive duration", v)
			}
			c.limit = d
		case "--lifeline":
			if !strings.HasPrefix(v, "/") {
				return c, fmt.Errorf("--lifeline %q is not an absolute path", v)
			}
			c.lifeline = v
		default:
			return c, fmt.Errorf("unknown argument %q", a)
		}
		args = args[2:]
	}
	switch {
	case c.limit == 0:
		return c, errors.New("--limit is required")
	case c.lifeline == "":
		return c, errors.New("--lifeline is required")
	case len(c.argv) == 0 || c.argv[0] == "":
		return c, errors.New("no command after \"--\"")
	}
	return c, nil
}

// reason says why run returned.
type reason int

const (
	commandExited reason = iota
	limitReached
	runmillGone
)

// forwarded are the signals passed on to the command: it, not the init,
// decides what they mean, as it did when it was PID 1 itself. (From inside
// the namespace only signals PID 1 handles reach it at all.)
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// run starts the command and waits for its exit, the limit or the end of
// the lifeline, reaping every other child meanwhile. On the limit or the
// lifeline it kills the command and returns ExitKilled; the caller's exit,
// as PID 1, then kills the rest.
func run(c config, stdin, stdout, stderr *os.File) (int, reason, error) {
	// Opened before the command starts, so the command never holds it.
	// Non-blocking: an open for reading of a FIFO without writers would
	// otherwise wait for one forever, and a read then returns end-of-file
	// at once, which is the answer (runmill already gone).
	lifeline, err := os.OpenFile(c.lifeline, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("opening the lifeline: %w", err)
	}
	defer lifeline.Close()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	start := time.Now()
	proc, err := os.StartProcess(c.argv[0], c.argv, &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{stdin, stdout, stderr},
	})
	if err != nil {
		return 0, 0, fmt.Errorf("starting %s: %w", c.argv[0], err)
	}
	pid := proc.Pid

	exited := make(chan syscall.WaitStatus, 1)
	go reap(pid, exited)
	gone := make(chan struct{})
	go func() {
		// Nothing is ever written; whatever arrives is discarded. Only
		// end-of-file (or a broken descriptor) ends the loop.
		buf := make([]byte, 512)
		for {
			if _, err := lifeline.Read(buf); err != nil {
				close(gone)
				return
			}
		}
	}()
	limit := time.NewTimer(c.limit - time.Since(start))
	defer limit.Stop()
	for {
		select {
		case ws := <-exited:
			return exitCode(ws), commandExited, nil
		case <-limit.C:
			syscall.Kill(pid, syscall.SIGKILL)
			return ExitKilled, limitReached, nil
		case <-gone:
			syscall.Kill(pid, syscall.SIGKILL)
			return ExitKilled, runmillGone, nil
		case s := <-sigs:
			syscall.Kill(pid, s.(syscall.Signal))
		}
	}
}

// reap waits for every child: the command, whose status it sends, and every
// orphan the kernel hands to PID 1, which would otherwise stay a zombie
// holding a pid of the task's pids limit.
func reap(pid int, exited chan<- syscall.WaitStatus) {
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD: the command was reaped and no orphan is left
		}
		if p == pid {
			exited <- ws
		}
	}
}

// exitCode is what the shim would have reported had the command been PID 1:
// its exit code, or 128+n when signal n killed it.
func exitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
