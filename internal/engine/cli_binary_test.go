package engine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The tests that need runmill as a process of its own (in a memory cgroup,
// or one process per shard) run the real binary, built once per test run
// from cmd/runmill: the engine's tests do not import internal/cli.
var (
	cliOnce   sync.Once
	cliBinary string
	cliErr    error
)

// runmillCLI returns the path of a runmill binary built from this tree.
func runmillCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			if goBin, err = exec.LookPath("/usr/local/go/bin/go"); err != nil {
				cliErr = err
				return
			}
		}
		dir, err := os.MkdirTemp("", "runmill-engine-test-")
		if err != nil {
			cliErr = err
			return
		}
		bin := filepath.Join(dir, "runmill")
		cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/runmill")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			cliErr = &buildError{err, string(out)}
			return
		}
		cliBinary = bin
	})
	if cliErr != nil {
		t.Fatalf("building runmill to run it as a process: %v", cliErr)
	}
	return cliBinary
}

// removeCLIBinary removes the binary runmillCLI built, if any.
func removeCLIBinary() {
	if cliBinary != "" {
		os.RemoveAll(filepath.Dir(cliBinary))
	}
}

type buildError struct {
	err    error
	output string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.output }
