package doctor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/doctor"
	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/gittest"
	"github.com/runmill/verify/pkg/printable"
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

// TestStateCheck: the state check says what each part of the state
// directory uses and the bounds a verify prunes it to.
func TestStateCheck(t *testing.T) {
	state := t.TempDir()
	for _, p := range []string{"runs/20261201T000000Z-00000001/artifacts/a", "deps/objects/ab/x-r", "toolcache/go/file-digests.json", "sandbox/sandbox/etc/f"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(state, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(state, p), make([]byte, 5000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rs := doctor.Run(context.Background(), doctor.Options{Checks: []string{doctor.State}, StateDir: state})
	if len(rs) != 1 || !rs[0].OK {
		t.Fatalf("state check %+v", rs)
	}
	d := rs[0].Detail
	u, err := engine.MeasureState(state)
	if err != nil || u.DepsBytes == 0 || u.ToolCacheBytes == 0 || u.SandboxBytes == 0 {
		t.Fatalf("MeasureState = %+v, %v", u, err)
	}
	for _, want := range []string{"the state directory " + state + " (--out) uses " + printable.Bytes(u.Bytes), "1 run (" + printable.Bytes(u.RunsBytes) + ")",
		"prepared dependencies " + printable.Bytes(u.DepsBytes), "Go toolchain caches " + printable.Bytes(u.ToolCacheBytes),
		"image store) " + printable.Bytes(u.SandboxBytes),
		"each verify keeps at most the newest 200 runs, none older than 14 days (verify --keep-runs, --keep-days)",
		"an entry unused for 14 days goes, and beyond 10.0 GiB together the least recently used go first (never one used within 1 hour)",
		"images unused for 14 days go"} {
		if !strings.Contains(d, want) {
			t.Errorf("detail lacks %q:\n%s", want, d)
		}
	}
}
