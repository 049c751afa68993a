package checkout_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/runmill/verify/internal/testreq"

	"github.com/runmill/verify/internal/checkout"
)

// crashEnv makes the test binary act as a runmill that dies mid-run.
const crashEnv = "RUNMILL_CHECKOUT_TEST_CRASH"

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashEnv); spec != "" {
		crash(spec)
	}
	if spec := os.Getenv(tmpfsChildEnv); spec != "" {
		tmpfsChild(spec)
	}
	code := m.Run()
	cleanupBench()
	os.Exit(code)
}

// crash creates a checkout, reports its path, and is killed with SIGKILL:
// no defer, no Close, no chance to clean up.
func crash(spec string) {
	parts := strings.Split(spec, "\n")
	if len(parts) != 4 {
		fmt.Println("ERROR bad spec")
		os.Exit(2)
	}
	repo, state, commit, layered := parts[0], parts[1], parts[2], parts[3] == "layered"
	m, err := checkout.NewManager(context.Background(), repo, state)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	if layered {
		if err := m.EnableLayers(); err != nil {
			fmt.Println("ERROR", err)
			os.Exit(2)
		}
	}
	c, err := m.Create(context.Background(), commit)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	fmt.Println(c.Dir)
	os.Stdout.Sync()
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

func TestSweep(t *testing.T) {
	t.Run("full", func(t *testing.T) { testSweep(t, "full") })
	t.Run("layered", func(t *testing.T) {
		testreq.Root(t, "a layered checkout")
		testSweep(t, "layered")
	})
}

func testSweep(t *testing.T, mode string) {
	r := newRepo(t)
	state := filepath.Join(t.TempDir(), "state")

	// A runmill killed with -9 mid-run.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+strings.Join([]string{r.dir, state, r.candidate, mode}, "\n"))
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("crash helper: %v\n%s", err, out)
	}
	leftover := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(leftover, "main.go")); err != nil {
		t.Fatalf("the crashed run left no checkout at %q: %v", leftover, err)
	}
	// It was also halfway through deleting another checkout.
	halfDeleted := filepath.Join(filepath.Dir(leftover), "trash", "0123456789ab-7")
	writeFile(t, filepath.Join(halfDeleted, "internal", "a.go"), "package a\n", 0o644)

	// In layered mode it also had a copy-on-write dependency view, whose
	// upper layer is a tmpfs in the session (deps/cow.go).
	viewTmpfs := filepath.Join(filepath.Dir(leftover), "views", "npm-1", "rw")
	if mode == "layered" {
		if err := os.MkdirAll(viewTmpfs, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", viewTmpfs, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(viewTmpfs, "upper", ".vite-temp", "x.mjs"), "x\n", 0o644)
	}

	// A concurrent runmill that is alive: its checkout must survive.
	alive := newManager(t, r.dir+"/")
	aliveCheckout, err := alive.Create(context.Background(), r.base)
	if err != nil {
		t.Fatal(err)
	}
	defer aliveCheckout.Remove()

	// The next start sweeps.
	next, err := checkout.NewManager(context.Background(), r.dir, state)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close(context.Background())
	removed, err := next.Sweep(context.Background())
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	want := []string{leftover, halfDeleted}
	if mode == "layered" {
		// The crash left an overlay mount, the commit's written layer and
		// the tmpfs the layers live on.
		session := filepath.Dir(leftover)
		want = append(want, "overlay mount "+leftover, "layers tmpfs "+filepath.Join(session, "layers"),
			filepath.Join(session, "layers"), filepath.Join(session, "ovl"),
			"dependency view tmpfs "+viewTmpfs, filepath.Join(session, "views"))
		if m := mountsUnder(t, state); len(m) != 0 {
			t.Errorf("mounts survived the sweep: %q", m)
		}
	}
	if !slices.Equal(removed, sorted(want)) {
		t.Errorf("Sweep reported %q, want %q", removed, sorted(want))
	}
	if _, err := os.Lstat(filepath.Dir(leftover)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the crashed session %s survived the sweep: %v", filepath.Dir(leftover), err)
	}
	if _, err := os.Lstat(filepath.Dir(leftover) + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the crashed session's lock survived the sweep: %v", err)
	}
	if _, err := os.Stat(filepath.Join(aliveCheckout.Dir, "main.go")); err != nil {
		t.Errorf("Sweep removed a live runmill's checkout: %v", err)
	}
	// A leftover worktree registration cannot exist: checkouts never touch
	// the repository's .git.
	if wt, err := os.ReadDir(filepath.Join(r.dir, ".git", "worktrees")); err == nil && len(wt) > 0 {
		t.Errorf("the repository gained worktree registrations: %v", wt)
	}
	if again, err := next.Sweep(context.Background()); err != nil || len(again) != 0 {
		t.Errorf("second Sweep = %q, %v; want nothing", again, err)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestSweepLeavesOwnSession: a Manager never sweeps its own checkouts.
func TestSweepLeavesOwnSession(t *testing.T) {
	r := newRepo(t)
	m := newManager(t, r.dir)
	c, err := m.Create(context.Background(), r.base)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	removed, err := m.Sweep(context.Background())
	if err != nil || len(removed) != 0 {
		t.Fatalf("Sweep = %q, %v", removed, err)
	}
	if _, err := os.Stat(c.Dir); err != nil {
		t.Fatal(err)
	}
}
