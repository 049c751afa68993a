// Package mountinfo reads mount points: runmill's own mount namespace
// through github.com/moby/sys/mountinfo, and a task's mountinfo text as its
// probe printed it.
package mountinfo

import (
	"strconv"
	"strings"

	moby "github.com/moby/sys/mountinfo"
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
// It is the parser for text that came out of a task (the probe's), where a
// cut line is skipped and a malformed escape kept as it is: moby's
// GetMountsFromReader refuses the whole text on either, and the probe
// judges the mounts it can read rather than none.
func Points(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if p, ok := MountPoint(line); ok {
			out = append(out, p)
		}
	}
	return out
}

// Self lists the mount points of this process's mount namespace, in the
// kernel's order (moby reads the calling thread's own table, which is right
// also for a thread that changed namespace).
func Self() ([]string, error) { return points(nil) }

// Under lists the mount points of this process's mount namespace at or
// below dir (an absolute, clean path; a trailing slash is ignored).
func Under(dir string) ([]string, error) {
	// PrefixFilter matches dir itself and paths below it, not siblings
	// sharing its prefix (/a/bc under /a/b).
	return points(moby.PrefixFilter(strings.TrimSuffix(dir, "/")))
}

func points(filter moby.FilterFunc) ([]string, error) {
	mounts, err := moby.GetMounts(filter)
	out := make([]string, 0, len(mounts))
	for _, m := range mounts {
		out = append(out, m.Mountpoint)
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
