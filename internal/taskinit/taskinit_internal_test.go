package taskinit

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want config
		err  string
	}{
		{"what Args writes", Args(90*time.Second, "/bin/sh", "-c", "x")[2:], config{90 * time.Second, LifelinePath, []string{"/bin/sh", "-c", "x"}}, ""},
		{"command keeps its dashes", []string{"--limit", "1s", "--lifeline", "/l", "--", "/bin/sh", "--", "--limit"}, config{time.Second, "/l", []string{"/bin/sh", "--", "--limit"}}, ""},
		{"no limit", []string{"--lifeline", "/l", "--", "/bin/true"}, config{}, "--limit is required"},
		{"zero limit", []string{"--limit", "0s", "--lifeline", "/l", "--", "/bin/true"}, config{}, "not a positive duration"},
		{"negative limit", []string{"--limit", "-1s", "--lifeline", "/l", "--", "/bin/true"}, config{}, "not a positive duration"},
		{"no lifeline", []string{"--limit", "1s", "--", "/bin/true"}, config{}, "--lifeline is required"},
		{"relative lifeline", []string{"--limit", "1s", "--lifeline", "l", "--", "/bin/true"}, config{}, "not an absolute path"},
		{"no command", []string{"--limit", "1s", "--lifeline", "/l", "--"}, config{}, "no command"},
		{"no separator", []string{"--limit", "1s", "--lifeline", "/l"}, config{}, "no command"},
		{"empty command", []string{"--limit", "1s", "--lifeline", "/l", "--", ""}, config{}, "no command"},
		{"twice", []string{"--limit", "1s", "--limit", "2s", "--lifeline", "/l", "--", "/bin/true"}, config{}, "given twice"},
		{"unknown", []string{"--deadline", "1s", "--", "/bin/true"}, config{}, "unknown argument"},
		{"dangling", []string{"--limit"}, config{}, "missing value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got.limit != tc.want.limit || got.lifeline != tc.want.lifeline || !slices.Equal(got.argv, tc.want.argv) {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(strings.Join(Args(time.Minute, "/bin/sh", "-c", "true")[2:], "\x00"))
	f.Add("--limit\x001s\x00--\x00x")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parse(strings.Split(s, "\x00"))
		if err != nil {
			return
		}
		// Whatever is accepted is runnable: a positive limit, an absolute
		// lifeline, a command.
		if c.limit <= 0 || !strings.HasPrefix(c.lifeline, "/") || len(c.argv) == 0 || c.argv[0] == "" {
			t.Fatalf("accepted %+v from %q", c, s)
		}
	})
}

// TestMainRefusesOutsideATask: outside its own pid namespace exiting would
// not kill the command's children, so the init refuses to start at all.
func TestMainRefusesOutsideATask(t *testing.T) {
	dir := t.TempDir()
	errf, _ := os.Create(filepath.Join(dir, "stderr"))
	defer errf.Close()
	code := Main([]string{"--limit", "1s", "--lifeline", "/nonexistent", "--", "/bin/true"}, nil, nil, errf)
	b, _ := os.ReadFile(errf.Name())
	if code != ExitInitFailed || !strings.HasPrefix(string(b), Marker) || !strings.Contains(string(b), "PID 1") {
		t.Fatalf("exit %d, stderr %q", code, b)
	}
}

// lifeline makes a FIFO and holds it open for writing, as runmill does;
// closing the returned file is runmill dying.
func lifeline(t *testing.T) (string, *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lifeline")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	return path, w
}

// TestRun runs real commands (this process is not PID 1, so what the
// kernel does on PID 1's exit is the sandbox tests' part).
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		argv    []string
		limit   time.Duration
		cut     bool // close the lifeline once the command runs
		code    int
		because reason
	}{
		{"exit 0", []string{"/bin/sh", "-c", "exit 0"}, time.Minute, false, 0, commandExited},
		{"exit code", []string{"/bin/sh", "-c", "exit 42"}, time.Minute, false, 42, commandExited},
		{"signal", []string{"/bin/sh", "-c", "kill -USR1 $$"}, time.Minute, false, 128 + int(syscall.SIGUSR1), commandExited},
		{"orphans reaped", []string{"/bin/sh", "-c", "(sleep 0.1 &) ; exit 3"}, time.Minute, false, 3, commandExited},
		{"limit", []string{"/bin/sh", "-c", "trap '' TERM; exec sleep 60"}, 200 * time.Millisecond, false, ExitKilled, limitReached},
		{"runmill gone", []string{"/bin/sh", "-c", "exec sleep 60"}, time.Minute, true, ExitKilled, runmillGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, w := lifeline(t)
			defer w.Close()
			if tc.cut {
				go func() { time.Sleep(100 * time.Millisecond); w.Close() }()
			}
			code, why, err := run(config{limit: tc.limit, lifeline: path, argv: tc.argv}, os.Stdin, os.Stdout, os.Stderr)
			if err != nil || code != tc.code || why != tc.because {
				t.Fatalf("run: %d %v %v, want %d %v", code, why, err, tc.code, tc.because)
			}
		})
	}
}

// TestRunRunmillAlreadyGone: a lifeline nobody holds any more (runmill died
// between starting the task and the init's open) ends the task at once
// instead of blocking the open forever.
func TestRunRunmillAlreadyGone(t *testing.T) {
	path, w := lifeline(t)
	w.Close()
	code, why, err := run(config{limit: time.Minute, lifeline: path, argv: []string{"/bin/sleep", "60"}}, os.Stdin, os.Stdout, os.Stderr)
	if err != nil || code != ExitKilled || why != runmillGone {
		t.Fatalf("run: %d %v %v", code, why, err)
	}
}

func TestRunFailsWithoutLifeline(t *testing.T) {
	_, _, err := run(config{limit: time.Minute, lifeline: filepath.Join(t.TempDir(), "absent"), argv: []string{"/bin/true"}}, os.Stdin, os.Stdout, os.Stderr)
	if err == nil || !strings.Contains(err.Error(), "lifeline") {
		t.Fatalf("err %v", err)
	}
}
