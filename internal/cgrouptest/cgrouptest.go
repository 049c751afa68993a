// Package cgrouptest gives a test a memory cgroup of its own, on cgroup v2
// or v1 (the machine's hierarchy decides), so a process can be run under a
// memory limit and its OOM kill or peak observed: how the sandbox's
// lifeline and the engine's report budget are tested against a real kernel.
package cgrouptest

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/testreq"
	"time"
)

// Memory is one memory cgroup, removed when the test ends.
type Memory struct {
	dir string
	v2  bool
}

// New creates the cgroup. Without root or a memory controller the test is
// skipped — and fails under CI=true, where it must run.
func New(t *testing.T, purpose string) *Memory {
	t.Helper()
	testreq.Root(t, "creating a memory cgroup")
	name := "runmill-test-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	var cg *Memory
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers")); err == nil && strings.Contains(" "+string(b)+" ", " memory") {
			os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("+memory"), 0)
			cg = &Memory{dir: filepath.Join(root, name), v2: true}
			break
		}
	}
	if cg == nil {
		if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil {
			cg = &Memory{dir: filepath.Join("/sys/fs/cgroup/memory", name)}
		}
	}
	if cg == nil {
		testreq.Need(t, false, "no memory cgroup controller (neither cgroup v2 with memory nor cgroup v1 memory) %s", purpose)
		return nil
	}
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 100 {
			if err := os.Remove(cg.dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("memory cgroup %s not removed", cg.dir)
	})
	return cg
}

func (c *Memory) write(file, value string) error {
	return os.WriteFile(filepath.Join(c.dir, file), []byte(value), 0)
}

func (c *Memory) read(file string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, file))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// Add moves a process into the cgroup.
func (c *Memory) Add(pid int) error { return c.write("cgroup.procs", strconv.Itoa(pid)) }

// Start starts cmd as a process of the cgroup from its first page: cmd
// must read one line from its standard input before it does any work, and
// the line is written once it is in the cgroup (cgroup v1 moves no earlier
// charges, so the cgroup's peak is all of cmd's memory and its
// children's). cmd's Stdin is taken.
func (c *Memory) Start(cmd *exec.Cmd) error {
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := c.Add(cmd.Process.Pid); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return err
	}
	_, err = io.WriteString(in, "go\n")
	return err
}

// SetLimit sets the memory limit, with no swap on top.
func (c *Memory) SetLimit(max int64) error {
	v := strconv.FormatInt(max, 10)
	if c.v2 {
		c.write("memory.swap.max", "0") // absent without swap accounting
		return c.write("memory.max", v)
	}
	if err := c.write("memory.limit_in_bytes", v); err != nil {
		return err
	}
	c.write("memory.memsw.limit_in_bytes", v) // absent without swap accounting
	return nil
}

// LimitAbove sets the limit to what the cgroup uses now plus headroom.
func (c *Memory) LimitAbove(headroom int64) error {
	file := "memory.usage_in_bytes"
	if c.v2 {
		file = "memory.current"
	}
	used, err := c.read(file)
	if err != nil {
		return err
	}
	return c.SetLimit(used + headroom)
}

// Peak is the cgroup's high-water mark (page cache included), -1 when the
// kernel does not keep one.
func (c *Memory) Peak() int64 {
	file := "memory.max_usage_in_bytes"
	if c.v2 {
		file = "memory.peak"
	}
	n, err := c.read(file)
	if err != nil {
		return -1
	}
	return n
}

// OOMKills is the cgroup's count of OOM-killed processes.
func (c *Memory) OOMKills(t *testing.T) int {
	t.Helper()
	file := "memory.oom_control"
	if c.v2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(c.dir, file))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatalf("%s has no oom_kill line:\n%s", file, b)
	return 0
}
