package policy_test

import (
	"slices"
	"testing"

	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/rmerr"
)

func TestValidateDeclaredSkips(t *testing.T) {
	type tc struct {
		name      string
		hasReport bool
		skips     []policy.DeclaredSkip
		want      []string // "field: message"
	}
	skip := func(ids ...string) []policy.DeclaredSkip {
		var out []policy.DeclaredSkip
		for _, id := range ids {
			out = append(out, policy.DeclaredSkip{TestID: id, Cause: "ENG-88"})
		}
		return out
	}
	run := func(t *testing.T, c tc) {
		errs := policy.ValidateDeclaredSkips(c.hasReport, c.skips)
		got := []string{}
		for _, e := range errs {
			if e.Code != rmerr.VerifySkipped || e.Hint == "" {
				t.Errorf("error %v: want RM-VERIFY-003 with a hint", e)
			}
			got = append(got, e.Field+": "+e.Msg)
		}
		if c.want == nil {
			c.want = []string{}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("got %q; want %q", got, c.want)
		}
		if (errs.Err() == nil) != (len(c.want) == 0) {
			t.Errorf("Err() = %v", errs.Err())
		}
	}
	for _, c := range []tc{
		{name: "none", hasReport: false},
		{name: "valid", hasReport: true, skips: skip("flaky network integration", "pkg::TestB")},
		{name: "without a report", hasReport: false, skips: skip("a"),
			want: []string{"declared_skips: declared_skips on a check without a report: summary text cannot identify tests"}},
		{name: "empty and blank ids", hasReport: true, skips: skip("", "a", " \t"),
			want: []string{"declared_skips[0].test_id: empty test_id", "declared_skips[2].test_id: empty test_id"}},
		{name: "duplicates name the first", hasReport: true, skips: skip("a", "b", "a", "a"),
			want: []string{`declared_skips[2].test_id: duplicate test_id "a" (also declared_skips[0])`,
				`declared_skips[3].test_id: duplicate test_id "a" (also declared_skips[0])`}},
		{name: "ids are exact", hasReport: true, skips: skip("a", "A", "a ")},
		{name: "every problem at once", hasReport: false, skips: skip("", "x", "x"),
			want: []string{"declared_skips: declared_skips on a check without a report: summary text cannot identify tests",
				"declared_skips[0].test_id: empty test_id",
				`declared_skips[2].test_id: duplicate test_id "x" (also declared_skips[1])`}},
	} {
		t.Run(c.name, func(t *testing.T) { run(t, c) })
	}
}
