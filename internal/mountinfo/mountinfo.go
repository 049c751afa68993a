// Package mountinfo reads mount points: runmill's own mount namespace
// through github.com/moby/sys/mountinfo, and a task's mountinfo text as its
// probe printed it; and it unmounts what a killed run left (UnmountUnder,
// UnmountStacked).
package mountinfo

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"

	moby "github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
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

// CgroupRoots lists the mount points of the cgroup hierarchies (v1 and v2)
// mounted at their root in this process's mount namespace: where a
// cgroup's path ("/runmill/ID") is a directory under each.
func CgroupRoots() ([]string, error) {
	mounts, err := moby.GetMounts(moby.FSTypeFilter("cgroup", "cgroup2"))
	var out []string
	for _, m := range mounts {
		if m.Root == "/" {
			out = append(out, m.Mountpoint)
		}
	}
	return out, err
}

// CgroupMount is one mounted cgroup hierarchy.
type CgroupMount struct {
	Mountpoint string
	// Root is the cgroup path the mount point shows: "/" for a
	// hierarchy mounted at its root, a subtree's path for a bind of one
	// (a container's /sys/fs/cgroup without a cgroup namespace of its own).
	Root string
	V2   bool
	// Controllers of a v1 hierarchy (its super options: "cpu", "cpuacct",
	// "name=systemd"); nil for cgroup2.
	Controllers []string
}

// cgroupV1Options are the super options of a v1 hierarchy that name no
// controller.
var cgroupV1Options = []string{"rw", "ro", "xattr", "noprefix", "clone_children", "cpuset_v2_mode", "favordynmods", "nofavordynmods"}

// CgroupMounts lists every cgroup hierarchy mounted in this process's mount
// namespace, each once, with where its cgroups are: the last mount of it,
// which is the newest (a cgroup2 mounted over /sys/fs/cgroup in a new
// cgroup namespace, not the one it hides).
func CgroupMounts() ([]CgroupMount, error) {
	mounts, err := moby.GetMounts(moby.FSTypeFilter("cgroup", "cgroup2"))
	var out []CgroupMount
	seen := map[string]int{}
	for _, m := range mounts {
		c := CgroupMount{Mountpoint: m.Mountpoint, Root: m.Root, V2: m.FSType == "cgroup2"}
		if !c.V2 {
			for _, o := range strings.Split(m.VFSOptions, ",") {
				if !slices.Contains(cgroupV1Options, o) && !strings.Contains(o, "=") || strings.HasPrefix(o, "name=") {
					c.Controllers = append(c.Controllers, o)
				}
			}
		}
		key := strings.Join(c.Controllers, ",")
		if c.V2 {
			key = "cgroup2"
		}
		if i, ok := seen[key]; ok {
			out[i] = c
			continue
		}
		seen[key] = len(out)
		out = append(out, c)
	}
	return out, err
}

// Unmount detaches target, lazily when something still holds it (the mount
// then disappears with its last user; nothing can reach it by path). A
// target that is not (or no longer) a mount point is not an error.
func Unmount(target string) error {
	err := unix.Unmount(target, 0)
	if err == unix.EBUSY {
		err = unix.Unmount(target, unix.MNT_DETACH)
	}
	if err != nil && err != unix.EINVAL && err != unix.ENOENT { // EINVAL: not a mount point
		return &os.PathError{Op: "unmount", Path: target, Err: err}
	}
	return nil
}

// UnmountStacked unmounts every mount stacked on target (Unmount, top
// first) until target is no mount point, and says how many it unmounted.
// It asks the kernel, not the mount table: a read of the table can be
// judged against a moment the mount no longer matches, and umount(2) on
// the path is the one answer that cannot be stale. max bounds the mounts
// it removes; more left is an error.
func UnmountStacked(target string, max int) (int, error) {
	for n := 0; n < max; n++ {
		err := unix.Unmount(target, 0)
		if err == unix.EBUSY {
			err = unix.Unmount(target, unix.MNT_DETACH)
		}
		switch err {
		case nil:
			continue
		case unix.EINVAL, unix.ENOENT: // no (longer a) mount point, or gone
			return n, nil
		default:
			return n, &os.PathError{Op: "unmount", Path: target, Err: err}
		}
	}
	return max, &os.PathError{Op: "unmount", Path: target, Err: errors.New("still a mount point after " + strconv.Itoa(max) + " unmounts")}
}

// UnmountUnder unmounts every mount at or below dir (Unmount), deepest
// first, and returns their paths.
func UnmountUnder(dir string) ([]string, error) {
	points, err := Under(dir)
	if err != nil {
		return nil, err
	}
	// Stable: mounts stacked on one point stay in the kernel's order, and
	// each is unmounted in turn.
	slices.SortStableFunc(points, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	var done []string
	var errs []error
	for _, p := range points {
		if err := Unmount(p); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, p)
	}
	return slices.Compact(done), errors.Join(errs...)
}
