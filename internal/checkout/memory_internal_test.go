package checkout

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/runmill/verify/internal/git"
)

// TestMemoryLimit reads the limit of runmill's own memory cgroup from the
// files the kernel shows, on cgroup v2 (memory.max and memory.high up the
// hierarchy, "max" meaning none), v1 (hierarchical_memory_limit, else
// memory.limit_in_bytes up the hierarchy) and a hybrid; without a limit,
// or without cgroups, it is the host's RAM. The real kernel's v1 or v2 is
// read by TestLayerTmpfsFromTheCgroup.
func TestMemoryLimit(t *testing.T) {
	const host = 16 << 30
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"v2: the lowest up the hierarchy", map[string]string{
			"proc/self/cgroup":                        "0::/runner/job\n",
			"sys/fs/cgroup/runner/memory.max":         "4294967296\n",
			"sys/fs/cgroup/runner/job/memory.max":     "max\n",
			"sys/fs/cgroup/runner/job/memory.high":    "max\n",
			"sys/fs/cgroup/runner/job/cgroup.procs":   "1\n",
			"sys/fs/cgroup/cgroup.controllers":        "memory\n",
			"sys/fs/cgroup/runner/job/memory.current": "1\n",
			"sys/fs/cgroup/runner/memory.high":        "max\n",
		}, 4 << 30},
		{"v2: memory.high counts", map[string]string{
			"proc/self/cgroup":              "0::/job\n",
			"sys/fs/cgroup/job/memory.max":  "4294967296\n",
			"sys/fs/cgroup/job/memory.high": "2147483648\n",
		}, 2 << 30},
		{"v2 in a cgroup namespace: the mount's root is the cgroup", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "1073741824\n",
		}, 1 << 30},
		{"v2 without a limit", map[string]string{
			"proc/self/cgroup":             "0::/job\n",
			"sys/fs/cgroup/job/memory.max": "max\n",
		}, host},
		{"v1: hierarchical_memory_limit", map[string]string{
			"proc/self/cgroup": "12:pids:/x\n4:memory:/process_api/job\n0::/\n",
			"sys/fs/cgroup/memory/process_api/job/memory.stat":           "cache 1\nhierarchical_memory_limit 3221225472\nhierarchical_memsw_limit 9223372036854771712\n",
			"sys/fs/cgroup/memory/process_api/job/memory.limit_in_bytes": "9223372036854771712\n",
		}, 3 << 30},
		{"v1 without memory.stat: the lowest up the hierarchy", map[string]string{
			"proc/self/cgroup": "4:cpu,memory:/a/b\n",
			"sys/fs/cgroup/memory/a/memory.limit_in_bytes":   "2147483648\n",
			"sys/fs/cgroup/memory/a/b/memory.limit_in_bytes": "9223372036854771712\n",
		}, 2 << 30},
		{"v1 unlimited", map[string]string{
			"proc/self/cgroup":                 "4:memory:/\n",
			"sys/fs/cgroup/memory/memory.stat": "hierarchical_memory_limit 9223372036854771712\n",
		}, host},
		{"hybrid: v1 memory and a v2 hierarchy without it", map[string]string{
			"proc/self/cgroup":                       "4:memory:/job\n0::/job\n",
			"sys/fs/cgroup/memory/job/memory.stat":   "hierarchical_memory_limit 1073741824\n",
			"sys/fs/cgroup/unified/job/cgroup.procs": "1\n",
		}, 1 << 30},
		{"a path leaving the mount is read at the mount", map[string]string{
			"proc/self/cgroup":         "0::/../../etc\n",
			"sys/fs/cgroup/memory.max": "1073741824\n",
		}, 1 << 30},
		{"no cgroups", map[string]string{}, host},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for name, content := range c.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := memoryLimit(root, host); got != c.want {
				t.Fatalf("memoryLimit = %d, want %d", got, c.want)
			}
		})
	}
}

// TestReserveTmpfs: a layer goes on the tmpfs only when its measure fits
// what earlier layers left, in bytes and in inodes; a failed layer gives
// its room back.
func TestReserveTmpfs(t *testing.T) {
	m := &Manager{layersInRAM: true, tmpfsBytes: 10 << 20, tmpfsInodes: 1000}
	size := func(bytes, entries int64) git.TreeSize {
		return git.TreeSize{Allocated: bytes, Entries: entries, Dirs: 1}
	}
	ok, release := m.reserveTmpfs(size(6<<20, 100))
	if !ok {
		t.Fatal("6 MiB of 10 did not fit")
	}
	if ok, _ := m.reserveTmpfs(size(6<<20, 100)); ok {
		t.Fatal("6 MiB more fit in the 4 MiB left")
	}
	if ok, _ := m.reserveTmpfs(size(1<<20, 1000)); ok {
		t.Fatal("1 000 entries fit in the 883 inodes left")
	}
	release()
	if ok, _ := m.reserveTmpfs(size(10<<20-4096, 900)); !ok || m.tmpfsBytes != 4096 || m.tmpfsInodes != 1000-900-1-tmpfsInodesPerLayer {
		t.Fatalf("after the release: fits %v, %d bytes and %d inodes left", ok, m.tmpfsBytes, m.tmpfsInodes)
	}
	if ok, _ := (&Manager{tmpfsBytes: 1 << 30, tmpfsInodes: 1 << 20}).reserveTmpfs(size(1, 1)); ok {
		t.Fatal("a layer went on a tmpfs that is not mounted")
	}
}
