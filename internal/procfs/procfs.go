// Package procfs reads processes as /proc shows them: what the sandbox's
// sweep needs to find a killed run's shims and task processes, and runmill
// to name itself (pid and start time) in a way that survives pid reuse.
package procfs

import (
	"errors"
	"os"
	"strconv"
	"strings"
)

// Process is one process of /proc.
type Process struct {
	PID, PPID int
	// State is /proc/PID/stat's field 3 ('R', 'S', 'Z' for a zombie …).
	State byte
	Name  string   // the command name (field 2)
	Args  []string // the command line; empty for a zombie
}

// Exited reports whether the process is a zombie: it has exited and waits
// for its parent (or no one) to reap it.
func (p Process) Exited() bool { return p.State == 'Z' }

// Read returns the process pid, false when there is none.
func Read(pid int) (Process, bool) {
	name, f, err := stat(pid)
	if err != nil || len(f) < 2 || len(f[0]) != 1 {
		return Process{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	p := Process{PID: pid, PPID: ppid, State: f[0][0], Name: name}
	if cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && len(cmd) > 0 {
		p.Args = strings.Split(strings.TrimSuffix(string(cmd), "\x00"), "\x00")
	}
	return p, true
}

// All lists every process /proc shows.
func All() []Process {
	entries, _ := os.ReadDir("/proc")
	var out []Process
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if p, ok := Read(pid); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// Start returns the start time of a process (clock ticks since boot, field
// 22 of /proc/PID/stat): with the pid it names the process even after the
// pid is reused.
func Start(pid int) (string, error) {
	_, f, err := stat(pid)
	if err != nil {
		return "", err
	}
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return "", errors.New("short /proc stat")
	}
	return f[19], nil
}

// Cgroups returns the process's cgroup path in each hierarchy
// (/proc/PID/cgroup, in its order); nil when it cannot be read.
func Cgroups(pid int) []string {
	var out []string
	for _, l := range cgroupLines(pid) {
		out = append(out, l[1])
	}
	return out
}

// CgroupsByController returns the process's cgroup path by controller
// (each controller of a v1 line; "" for the cgroup2 line); nil when it
// cannot be read.
func CgroupsByController(pid int) map[string]string {
	lines := cgroupLines(pid)
	if lines == nil {
		return nil
	}
	out := map[string]string{}
	for _, l := range lines {
		for _, c := range strings.Split(l[0], ",") {
			out[c] = l[1]
		}
	}
	return out
}

// cgroupLines reads /proc/PID/cgroup as (controllers, path) pairs, in its
// order; nil when it cannot be read.
func cgroupLines(pid int) [][2]string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return nil
	}
	out := [][2]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 {
			out = append(out, [2]string{parts[1], parts[2]})
		}
	}
	return out
}

// stat reads /proc/PID/stat: the command name (field 2) and the fields
// after it, from field 3 (state) on.
func stat(pid int) (name string, fields []string, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", nil, err
	}
	// The name may hold spaces and parentheses: the fields after it start
	// after the last ')'.
	open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
	if open < 0 || end < open {
		return "", nil, errors.New("malformed /proc stat")
	}
	return string(b[open+1 : end]), strings.Fields(string(b[end+1:])), nil
}
