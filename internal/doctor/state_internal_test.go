package doctor

import "testing"

// The state check names where its directory came from, by the flag and
// variable verify reads: a user whose verify ran with another --out sees
// that the doctor measured another directory.
func TestStateSource(t *testing.T) {
	for _, tc := range []struct{ flag, env, want string }{
		{"/srv/state", "/other", "--out"},
		{"", "/other", "$RUNMILL_STATE_DIR"},
		{"", "", "the default: no --out, $RUNMILL_STATE_DIR unset; a verify given another --out keeps its state there, pass the same --out here"},
	} {
		got := stateSource(tc.flag, func(k string) string {
			if k == "RUNMILL_STATE_DIR" {
				return tc.env
			}
			return ""
		})
		if got != tc.want {
			t.Errorf("stateSource(%q) with RUNMILL_STATE_DIR=%q = %q, want %q", tc.flag, tc.env, got, tc.want)
		}
	}
}
