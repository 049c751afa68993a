// Package mountinfo reads the mount points of /proc/<pid>/mountinfo, the one
// parser runmill has for it (its own mounts, and a task's as its probe saw
// them).
package mountinfo

import (
	"os"
	"strconv"
	"strings"
)

// MountPoint returns the mount point (field 5) of one mountinfo line, and
// false for a line too short to have one.
func MountPoint(line string) (string, bool) {
	f := strings.Fields(line)
	if len(f) < 5 {
		return "", false
	}
	return Unescape(f[4]), true
}

// Points lists the mount points of mountinfo text, in order, repeats kept.
func Points(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if p, ok := MountPoint(line); ok {
			out = append(out, p)
		}
	}
	return out
}

// Self lists the mount points of this process's mount namespace.
func Self() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return Points(string(b)), nil
}

// Under lists the mount points of this process's mount namespace at or
// below dir (an absolute, clean path).
func Under(dir string) ([]string, error) {
	all, err := Self()
	var out []string
	for _, p := range all {
		if p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/") {
			out = append(out, p)
		}
	}
	return out, err
}

// Unescape undoes the kernel's octal escapes (\040 for a space, \134 for a
// backslash); anything else is kept as it is.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
