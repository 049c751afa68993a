// Package proctest finds this test process's children in /proc, so a test
// can read what a command runmill started really saw (its environment, its
// working directory) while the command waits on a FIFO.
package proctest

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// ChildNamed is the pid of this process's one child whose command is name.
// The child is known to be running (blocked on the FIFO) when it is called.
func ChildNamed(t *testing.T, name string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so cut at the last ')'.
		open, end := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(string(stat[end+1:]))
		if len(fields) > 1 && fields[1] == self && string(stat[open+1:end]) == name {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		t.Fatalf("children of %s named %s: %v", self, name, found)
	}
	return found[0]
}
