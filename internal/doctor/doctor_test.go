package doctor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/doctor"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/rmerr"
)

// recorder records the dependency requests doctor.Run makes.
type recorder struct{ got []doctor.DependencyRequest }

func (r *recorder) CheckDependencies(_ context.Context, req doctor.DependencyRequest) (string, error) {
	r.got = append(r.got, req)
	return "ready", nil
}

// TestRunPolicies: doctor.Run reads both policies through
// engine.LoadPolicies, the operator's definition winning per check id —
// judged both ways: a dependency the operator drops is not asked about, one
// it adds is — and a broken operator policy fails every check that needs
// it with its code.
func TestRunPolicies(t *testing.T) {
	r := gittest.New(t)
	r.Write(".runmill/checks.yaml", "checks:\n  - id: web\n    run: x\n    dependencies: npm\n  - id: api\n    run: y\n")
	head := r.Commit("base")
	op := func(body string) string {
		p := filepath.Join(t.TempDir(), "policy.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		operator string
		asked    string // the checks asked about, by strategy
		detail   string // of the policy check
	}{
		{"repository only", "", "npm:web", "2 checks (web, api); no operator policy given"},
		{"the operator drops one", "verification:\n  commands:\n    - id: web\n      run: z\n", "", "; operator policy "},
		{"the operator adds one", "verification:\n  commands:\n    - id: api\n      run: z\n      dependencies: go-modules\n", "go-modules:api npm:web", "1 commands"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			o := doctor.Options{Checks: []string{doctor.Policy, doctor.Dependencies}, RepoDir: r.Dir, Base: "HEAD", Dependencies: rec}
			if tc.operator != "" {
				o.PolicyFile = op(tc.operator)
			}
			res := doctor.Run(context.Background(), o)
			if len(res) != 2 || res[0].Name != doctor.Dependencies || res[1].Name != doctor.Policy || !res[0].OK || !res[1].OK {
				t.Fatalf("results %+v", res)
			}
			var asked []string
			for _, q := range rec.got {
				if q.Base != head {
					t.Errorf("asked at %s, want the base %s", q.Base, head)
				}
				asked = append(asked, q.Strategy+":"+strings.Join(q.Checks, ","))
			}
			if strings.Join(asked, " ") != tc.asked || !strings.Contains(res[1].Detail, tc.detail) {
				t.Fatalf("asked %q, policy %q; want %q and %q", asked, res[1].Detail, tc.asked, tc.detail)
			}
		})
	}
	t.Run("a broken operator policy", func(t *testing.T) {
		o := doctor.Options{Checks: []string{doctor.Policy}, RepoDir: r.Dir, Base: "HEAD", PolicyFile: op("autonomy: sometimes\n")}
		res := doctor.Run(context.Background(), o)
		if len(res) != 1 || res[0].OK || res[0].Code != rmerr.PolicyInvalid || res[0].Fix == "" {
			t.Fatalf("results %+v", res)
		}
	})
}
