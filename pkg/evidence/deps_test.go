package evidence

import (
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/record"
)

// A recorded install is held to its own inputs, the manifest's strategy
// and, with expectations, the lockfiles at the bound commits (issue 15) —
// judged both ways: an honest record passes, each lie fails.
func TestCheckDependencyUse(t *testing.T) {
	const (
		base = "1111111111111111111111111111111111111111"
		cand = "2222222222222222222222222222222222222222"
	)
	lockBase, lockCand, pkg := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64), "sha256:"+strings.Repeat("c", 64)
	lockfiles := map[string]map[string]string{
		base: {"package.json": pkg, "package-lock.json": lockBase},
		cand: {"package.json": pkg, "package-lock.json": lockCand, "go.sum": lockCand},
	}
	use := func(preparedFor, lock string, edit func(*record.DependencyUse)) *record.DependencyUse {
		u := &record.DependencyUse{Strategy: "npm", PreparedFor: preparedFor, Fingerprint: "sha256:" + strings.Repeat("d", 64),
			Inputs: map[string]string{"package.json": pkg, "package-lock.json": lock, "platform": "linux", "arch": "x64", "node_abi": "115"}}
		if edit != nil {
			edit(u)
		}
		if u.Key == "" {
			u.Key = DependencyKey(u.Strategy, u.Inputs)
		}
		return u
	}
	for _, tc := range []struct {
		name      string
		u         *record.DependencyUse
		declared  string
		commit    string
		lockfiles map[string]map[string]string
		want      string // "" passes
	}{
		{"the candidate on its own install", use(cand, lockCand, nil), "npm", cand, lockfiles, ""},
		{"the baseline on the base's", use(base, lockBase, nil), "npm", base, lockfiles, ""},
		{"without expectations only the key is checked", use(cand, lockBase, nil), "npm", cand, nil, ""},
		{"the candidate on the base's install", use(base, lockBase, nil), "npm", cand, lockfiles, "keyed by package-lock.json " + lockBase},
		{"a key that is not its inputs'", use(cand, lockCand, func(u *record.DependencyUse) { u.Key = DependencyKey("npm", map[string]string{}) }), "npm", cand, lockfiles, "is not the key"},
		{"an edited input under the old key", use(cand, lockCand, func(u *record.DependencyUse) {
			u.Key = DependencyKey(u.Strategy, u.Inputs)
			u.Inputs["node_abi"] = "127"
		}), "npm", cand, lockfiles, "is not the key"},
		{"another strategy than declared", use(cand, lockCand, nil), "go-modules", cand, lockfiles, "the manifest declares"},
		{"prepared for a commit with another package.json", use(cand, lockCand, func(u *record.DependencyUse) {
			u.Inputs["package.json"] = "sha256:" + strings.Repeat("e", 64)
		}), "npm", cand, lockfiles, "whose package.json is"},
		{"a commit without the lockfile", use(cand, lockCand, nil), "npm", "3333333333333333333333333333333333333333", lockfiles, "observe no package-lock.json"},
		{"go: no go.sum is the empty digest", &record.DependencyUse{Strategy: "go-modules", PreparedFor: base, Inputs: map[string]string{"go.sum": emptyDigest},
			Key: DependencyKey("go-modules", map[string]string{"go.sum": emptyDigest})}, "go-modules", base, lockfiles, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkDependencyUse(tc.u, tc.declared, tc.commit, tc.lockfiles)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
