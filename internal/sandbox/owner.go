package sandbox

import (
	"os"
	"strconv"
	"strings"

	"github.com/runmill/verify/internal/procfs"
)

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
	start, err := procfs.Start(pid)
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
