package checkout

import (
	"context"

	"github.com/runmill/verify/internal/git"
)

// Bounds (issue 23)
//
// A commit's tree is measured from its objects (git.Repo.TreeSize) before
// the first checkout of it is written, and refused when it passes the
// limits (RM-LIMIT-002, -003, -004): 552 KB of objects expanding to 3 GB had
// OOM-killed the gate, writing its layer to a tmpfs charged to runmill's
// own memory cgroup. The measure also decides where a layer goes: on the
// layers' tmpfs only when it fits what is left of it, otherwise on disk,
// before a byte is written.

// MeasureWith makes the Manager measure the commits it checks out through
// repo — the same repository, with the limits the run holds every commit
// to and what it has already measured (the engine measures the run's
// commits in Discovery). Without it the Manager measures under git's
// default limits. Call it before the first Create.
func (m *Manager) MeasureWith(repo *git.Repo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.measurer = repo
}

// measure returns commit's size, refusing it past the limits.
func (m *Manager) measure(ctx context.Context, commit string) (git.TreeSize, error) {
	m.mu.Lock()
	r := m.measurer
	m.mu.Unlock()
	return r.TreeSize(ctx, commit)
}

// tmpfsInodesPerLayer is what a commit's layer takes beyond its entries and
// directories: its root, .git and the files runmill writes there.
const tmpfsInodesPerLayer = 16

// reserveTmpfs takes s's room on the layers' tmpfs when it fits there and
// reports whether it did; release gives it back (a layer that failed).
func (m *Manager) reserveTmpfs(s git.TreeSize) (ok bool, release func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	bytes, inodes := s.Allocated, s.Entries+s.Dirs+tmpfsInodesPerLayer
	if !m.layersInRAM || bytes > m.tmpfsBytes || inodes > m.tmpfsInodes {
		return false, func() {}
	}
	m.tmpfsBytes -= bytes
	m.tmpfsInodes -= inodes
	return true, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.tmpfsBytes += bytes
		m.tmpfsInodes += inodes
	}
}
