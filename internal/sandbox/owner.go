package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// processStart returns the start time (clock ticks since boot, field 22 of
// /proc/PID/stat) of a process: with the PID it identifies the process even
// after the PID is reused.
func processStart(pid int) (string, error) {
	_, fields, err := stat(pid)
	if err != nil {
		return "", err
	}
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 {
		return "", errors.New("short /proc stat")
	}
	return fields[19], nil
}

// stat reads /proc/PID/stat: the command name (field 2) and the fields
// after it, from field 3 (state) on.
func stat(pid int) (comm string, fields []string, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", nil, err
	}
	// comm may contain spaces and parentheses; fields after it start
	// after the last ')'.
	open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
	if open < 0 || end < open {
		return "", nil, errors.New("malformed /proc stat")
	}
	return string(b[open+1 : end]), strings.Fields(string(b[end+1:])), nil
}

// ownerAlive reports whether the process an owner label names still runs.
// known is false when the label comes from another PID namespace (or is
// malformed): this process cannot judge it, and must leave it alone.
func ownerAlive(owner string) (alive, known bool) {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return false, false
	}
	parts := strings.Split(owner, "/")
	if len(parts) != 3 || parts[0] != ns {
		return false, false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return false, false
	}
	start, err := processStart(pid)
	if err != nil {
		return false, true
	}
	return start == parts[2], true
}

// ownerDirName turns an owner label into a file name ("PID-START").
func ownerDirName(owner string) string {
	parts := strings.Split(owner, "/")
	if len(parts) != 3 {
		return "unknown"
	}
	return parts[1] + "-" + parts[2]
}
