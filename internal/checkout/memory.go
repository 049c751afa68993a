package checkout

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/runmill/verify/internal/fsname"
)

// memoryLimit is the memory this process may use: the lowest limit of its
// memory cgroup and of every ancestor it can see (cgroup v2: memory.max
// and memory.high, a tmpfs page being unreclaimable without swap; v1:
// memory.stat's hierarchical_memory_limit, which already folds in the
// ancestors), and never more than the host's RAM. root is "/" but in tests.
func memoryLimit(root string, hostRAM int64) int64 {
	limit := hostRAM
	b, err := os.ReadFile(filepath.Join(root, "proc", "self", "cgroup"))
	if err != nil {
		return limit
	}
	// "<hierarchy-id>:<controllers>:<path>"; v2 is "0::<path>".
	for _, line := range strings.Split(string(b), "\n") {
		id, rest, ok := strings.Cut(line, ":")
		controllers, path, ok2 := strings.Cut(rest, ":")
		switch {
		case !ok || !ok2:
		case id == "0" && controllers == "":
			for _, mnt := range []string{"sys/fs/cgroup", "sys/fs/cgroup/unified"} {
				limit = min(limit, v2Limit(filepath.Join(root, mnt), path))
			}
		case slices.Contains(strings.Split(controllers, ","), "memory"):
			limit = min(limit, v1Limit(filepath.Join(root, "sys", "fs", "cgroup", "memory"), path))
		}
	}
	return limit
}

// noLimit is what a cgroup without a memory limit reads as.
const noLimit = int64(1<<63 - 1)

// v2Limit walks from the cgroup at path below the mount mnt up to mnt,
// taking the lowest memory.max and memory.high ("max": none).
func v2Limit(mnt, path string) int64 {
	limit := noLimit
	dir := filepath.Join(mnt, path)
	if !fsname.Within(dir, mnt) {
		dir = mnt
	}
	for {
		for _, f := range []string{"memory.max", "memory.high"} {
			if n, ok := readLimit(filepath.Join(dir, f)); ok {
				limit = min(limit, n)
			}
		}
		if dir == mnt {
			return limit
		}
		dir = filepath.Dir(dir)
	}
}

// v1Limit reads the cgroup at path below the v1 memory mount mnt: its
// hierarchical_memory_limit, else the lowest memory.limit_in_bytes up to
// mnt.
func v1Limit(mnt, path string) int64 {
	dir := filepath.Join(mnt, path)
	if !fsname.Within(dir, mnt) {
		dir = mnt
	}
	if b, err := os.ReadFile(filepath.Join(dir, "memory.stat")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "hierarchical_memory_limit "); ok {
				if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n > 0 {
					return n
				}
			}
		}
	}
	limit := noLimit
	for {
		if n, ok := readLimit(filepath.Join(dir, "memory.limit_in_bytes")); ok {
			limit = min(limit, n)
		}
		if dir == mnt {
			return limit
		}
		dir = filepath.Dir(dir)
	}
}

// readLimit reads a cgroup limit file: a byte count, or "max".
func readLimit(file string) (int64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil && n > 0
}

// hostRAM is the host's memory.
func hostRAM() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return noLimit
	}
	return int64(si.Totalram) * int64(si.Unit)
}
