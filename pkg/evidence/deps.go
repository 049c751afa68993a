package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	"github.com/runmill/verify/pkg/record"
)

// DependencyReceiptSchema names the prepared-dependency receipt format; it
// is part of every content key, so a key of another format never matches.
const DependencyReceiptSchema = "runmill.deps-receipt/v1"

// DependencyKey is the content key of a prepared install: SHA-256 over
// the schema, the strategy and its inputs, length-prefixed so the byte
// stream parses one way.
func DependencyKey(strategy string, inputs map[string]string) string {
	h := sha256.New()
	put := func(s string) { fmt.Fprintf(h, "%d:%s", len(s), s) }
	put(DependencyReceiptSchema)
	put(strategy)
	for _, k := range slices.Sorted(maps.Keys(inputs)) {
		put(k)
		put(inputs[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// DependencyChange is one line of the dependency diff between the
// baseline commit and the candidate: a package (npm: its install path in
// package-lock.json) or module added, removed or changed.
type DependencyChange struct {
	Strategy string `json:"strategy"`
	Name     string `json:"name"`
	// Change is "added", "removed" or "changed".
	Change string `json:"change"`
	// From and To are the versions at the baseline and at the candidate
	// ("" where absent).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// DependencyDiff is the delivery statement's record of what a change does
// to its dependencies.
type DependencyDiff struct {
	// From and To are the commits compared: the baseline (the base tip) and
	// the candidate.
	From    string             `json:"from"`
	To      string             `json:"to"`
	Changes []DependencyChange `json:"changes"`
}

// checkDependencyUse holds a check run's prepared install to its record:
// its key is the content key of its inputs, its strategy the one the
// manifest declares, and — with expectations that observed the commits'
// lockfiles — its lockfile digest that of the run's commit, and its inputs
// those of the commit it was prepared for.
func checkDependencyUse(u *record.DependencyUse, declared string, runCommit string, lockfiles map[string]map[string]string) string {
	if u.Strategy != declared {
		return fmt.Sprintf("records a %q install, the manifest declares %q", u.Strategy, declared)
	}
	if k := DependencyKey(u.Strategy, u.Inputs); u.Key != k {
		return fmt.Sprintf("dependency key %s is not the key %s of its inputs", u.Key, k)
	}
	if lockfiles == nil {
		return ""
	}
	name := dependencyLockfile[u.Strategy]
	if name == "" {
		return fmt.Sprintf("unknown dependency strategy %q", u.Strategy)
	}
	want, ok := lockDigest(lockfiles[runCommit], name)
	if !ok {
		return fmt.Sprintf("ran on a %s install, but the expectations observe no %s at %s", u.Strategy, name, runCommit)
	}
	if u.Inputs[name] != want {
		return fmt.Sprintf("ran on an install keyed by %s %s, but %s at %s is %s", name, u.Inputs[name], name, runCommit, want)
	}
	if prep, ok := lockfiles[u.PreparedFor]; ok {
		for _, f := range []string{"package.json", name} {
			got, has := u.Inputs[f]
			if w, _ := lockDigest(prep, f); has && w != got {
				return fmt.Sprintf("its install was prepared for %s, whose %s is %s, not the recorded %s", u.PreparedFor, f, w, got)
			}
		}
	}
	return ""
}

// lockDigest is a commit's digest of one dependency file; a module without
// dependencies has no go.sum, which the key records as no bytes.
func lockDigest(files map[string]string, name string) (string, bool) {
	d, ok := files[name]
	if !ok && name == "go.sum" && files != nil {
		return emptyDigest, true
	}
	return d, ok
}

// emptyDigest is "sha256:" of no bytes.
const emptyDigest = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
