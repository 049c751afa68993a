package engine

import (
	"testing"

	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/verdict"
)

// TestSameTree: the first checkout of a commit sets its tree; a later one
// that hashes differently is invalidated (RM-VERIFY-002); another commit has
// its own.
func TestSameTree(t *testing.T) {
	e := &executor{}
	for _, tc := range []struct {
		commit, tree string
		moved        bool
	}{
		{"c1", "sha256:aa", false},
		{"c1", "sha256:aa", false},
		{"c2", "sha256:bb", false},
		{"c1", "sha256:cc", true},
		{"c2", "sha256:bb", false},
	} {
		rec := record.CheckRun{TreeBefore: tc.tree}
		var got []rmerr.Code
		e.sameTree(&rec, tc.commit, func(rule, code, format string, args ...any) {
			if rule != verdict.RuleTreeMoved {
				t.Errorf("rule %s", rule)
			}
			got = append(got, rmerr.Code(code))
		})
		if moved := len(got) > 0; moved != tc.moved || (moved && got[0] != rmerr.VerifyTreeMoved) {
			t.Errorf("%s %s: findings %v, want moved=%v", tc.commit, tc.tree, got, tc.moved)
		}
	}
}
