package engine_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/evidence"
)

// TestNormalRunLeavesOnlyItsRecord (issue #13 S7): after a normal run
// through the real containerd, the terminal statement lists the probe and
// the shim keeper as containers and every task's bundle, each observed
// gone; a walk of the state directory finds no file outside the run's own
// directory; and containerd's bundle directories hold none of the run's
// tasks. Before the fix, every task left its bundle ("failed to remove
// bundle rootfs: directory not empty") while the statement said complete.
func TestNormalRunLeavesOnlyItsRecord(t *testing.T) {
	r, base := shopRepo(t, tapPolicy)
	r.Write("tests/extra.t", "x\n")
	cand := r.Commit("candidate")
	run := verify(t, r, base, cand, nil)
	if !run.MergeReady() {
		t.Fatalf("not merge-ready: %v", rules(run))
	}
	var ts evidence.Statement[evidence.Terminal]
	if b, err := os.ReadFile(filepath.Join(run.Dir, "terminal-statement.json")); err != nil || json.Unmarshal(b, &ts) != nil {
		t.Fatalf("reading the terminal statement: %v", err)
	}
	c := ts.Predicate.Cleanup
	containers, bundles := map[string]string{}, map[string]string{}
	for _, res := range c.Resources {
		if !res.Gone {
			t.Errorf("not gone: %+v", res)
		}
		switch res.Kind {
		case "container":
			containers[res.ID] = res.Detail
		case "task":
			bundles[res.ID] = res.Detail
		}
	}
	if !c.Complete {
		t.Errorf("cleanup not complete")
	}
	roles := map[string]int{}
	for id, d := range containers {
		if _, ok := bundles[id]; !ok {
			t.Errorf("container %s has no bundle observation", id)
		}
		roles[d]++
	}
	if roles["sandbox probe"] != 1 || roles["shim keeper"] < 1 || roles["check run"] != len(run.Delivery.Checks) {
		t.Errorf("containers by role %v: want the sandbox probe and the shim keeper listed", roles)
	}
	// The bundle observation must have looked somewhere real; the same
	// directories are walked here for any of the run's tasks.
	var roots []string
	for _, d := range bundles {
		_, where, ok := strings.Cut(d, "looked for under ")
		if !ok {
			t.Fatalf("a bundle observation that looked nowhere: %q", d)
		}
		roots = strings.Split(where, " and ")
	}
	for _, root := range roots {
		entries, err := os.ReadDir(filepath.Join(root, "runmill"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, e := range entries {
			if _, ours := containers[e.Name()]; ours {
				t.Errorf("task bundle %s remains under %s", e.Name(), root)
			}
		}
	}
	// The state directory: the run's record and nothing else (directories
	// left empty are structure other runmills share, not leftovers).
	state := filepath.Dir(filepath.Dir(run.Dir))
	filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		if !d.IsDir() && !strings.HasPrefix(p, run.Dir+string(filepath.Separator)) {
			t.Errorf("left in the state directory: %s", p)
		}
		return nil
	})
}
