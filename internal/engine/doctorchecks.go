package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
)

// DoctorChecksOptions configure CheckBase.
type DoctorChecksOptions struct {
	RepoDir           string
	Base              string // the revision whose policy governs (default HEAD)
	PolicyFile        string // operator policy; "" for none
	StateDir          string
	ContainerdAddress string
	// Progress receives one line per step; nil discards.
	Progress io.Writer
}

// CheckDiagnosis is what one check did at the base.
type CheckDiagnosis struct {
	Check    string          `json:"check"`
	Status   record.Status   `json:"status"`
	Coverage record.Coverage `json:"coverage"`
	// Tests counts the tests its report shows (passed, failed, skipped);
	// nil without a parsed report.
	Tests *TestCounts `json:"tests,omitempty"`
	// Findings are why it did not pass, as verify would say.
	Findings []record.Finding `json:"findings"`
	// Why is explain.Checks' explanation; nil when it passed proven.
	Why *explain.Explanation `json:"why,omitempty"`
	// Harness says what of the check's harness runmill could not pin
	// ("harness not pinned: …; list it under harness:", issue 25).
	Harness []string `json:"harness,omitempty"`
}

// BaseChecks is CheckBase's answer.
type BaseChecks struct {
	Base string `json:"base"` // the resolved commit
	// FailOnSkippedCheck is the policy's gate: with it, an unproven
	// required check blocks merge-readiness.
	FailOnSkippedCheck bool             `json:"fail_on_skipped_check"`
	Checks             []CheckDiagnosis `json:"checks"`
	// Overrides are the manifest's conflicts: verify prints them under
	// Overrides:, and the doctor says the same before the first run.
	Overrides []discovery.Conflict `json:"overrides,omitempty"`
}

// TestCounts are a report's tests by status.
type TestCounts struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

// CheckBase runs every runnable check of the base's manifest once in the
// sandbox, exactly as a verification runs a candidate — the operator
// policy's definitions and budgets, prepared dependencies, the probe before
// anything runs, a fresh read-only checkout, the report rules — and judges
// each run through the one decision function, as a candidate would be
// judged: `runmill doctor --check checks` answers before the first pull
// request whether the checks will work (issue 14).
func CheckBase(ctx context.Context, o DoctorChecksOptions) (*BaseChecks, error) {
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	logf := func(format string, args ...any) { fmt.Fprintf(progress, "runmill: "+format+"\n", args...) }
	if o.Base == "" {
		o.Base = "HEAD"
	}
	o.StateDir = absolute(o.StateDir)
	// The base against itself: the manifest verification would resolve
	// for a change that touches nothing (path-triggered checks are listed
	// as not triggered and not run).
	repo, err := git.Open(ctx, o.RepoDir)
	if err != nil {
		return nil, err
	}
	m, op, _, err := discoverIn(ctx, repo, DiscoverOptions{RepoDir: o.RepoDir, Base: o.Base, Candidate: o.Base, PolicyFile: o.PolicyFile})
	if err != nil {
		return nil, err
	}
	hostPaths := jobHostPaths(nil)
	e := &executor{manifest: m, logf: logf, event: func(string, any) {}, hostPaths: hostPaths}
	defer e.release()
	if op != nil {
		hostPaths = jobHostPaths(op.Doc.Sandbox.HostPaths)
		e.maxOutput, e.defaultTimeout, e.hostPaths = op.Doc.Budgets.MaxOutputBytes, op.Doc.Budgets.CheckTimeout.D(), hostPaths
	}
	if err := os.MkdirAll(o.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the state directory: %w", err)
	}
	dir, err := os.MkdirTemp(o.StateDir, "doctor-checks-")
	if err != nil {
		return nil, fmt.Errorf("creating the doctor's run directory: %w", err)
	}
	defer os.RemoveAll(dir)
	e.store = store{dir: filepath.Join(dir, "artifacts")}
	checkouts, err := checkout.NewManager(ctx, repo.Dir, o.StateDir)
	if err != nil {
		return nil, err
	}
	checkouts.MeasureWith(repo)
	defer checkouts.Close(context.Background())
	e.checkouts = checkouts
	// The harness as verify resolves it: at the base against itself nothing
	// is laid over, but what runmill cannot pin is said here too (issue 25).
	e.harness = newHarnesses(repo, checkouts, m)
	sb, err := sandbox.Connect(ctx, sandbox.Options{Address: o.ContainerdAddress, StateDir: filepath.Join(o.StateDir, "sandbox")})
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	e.sb = sb
	if shared, _ := sb.SeesHostMounts(); shared {
		_ = checkouts.EnableLayers() // a full checkout per run otherwise
	}
	e.prepareDepsAsync(ctx, repo, m, m.Base, op, o.StateDir)
	e.gate = make(chan struct{})
	if _, err := e.probe(ctx, o.StateDir, hostPaths, imagesOf(m)); err != nil {
		<-e.depsReady
		return nil, err
	}
	d := &evidence.Delivery{Manifest: *m}
	for _, c := range m.Checks {
		if !c.Runnable() {
			continue
		}
		rec, _, err := e.runOne(ctx, c, record.Candidate, m.Base)
		if err != nil {
			return nil, err
		}
		evidence.Judge(m, &rec, nil)
		d.Checks = append(d.Checks, rec)
	}
	return &BaseChecks{Base: m.Base, FailOnSkippedCheck: m.FailOnSkippedCheck, Checks: diagnoses(dir, d), Overrides: m.Conflicts}, nil
}

// diagnoses says what each check run of d did: its status, its tests by
// status, its findings and why (explain.Checks; dir is the run directory
// holding the stored outputs).
func diagnoses(dir string, d *evidence.Delivery) []CheckDiagnosis {
	xs := explain.Checks(dir, d)
	out := make([]CheckDiagnosis, 0, len(d.Checks))
	for _, r := range d.Checks {
		cd := CheckDiagnosis{Check: r.CheckID, Status: r.Status, Coverage: r.Coverage, Findings: r.Findings}
		if r.Harness != nil {
			cd.Harness = explain.UnpinnedLines(r.Harness.Unpinned)
		}
		if r.Report != nil && r.Report.Inventory != nil {
			inv := r.Report.Inventory
			cd.Tests = &TestCounts{Passed: len(inv.Passed), Failed: len(inv.Failed), Skipped: len(inv.Skipped)}
		}
		for i := range xs {
			if xs[i].Check == r.CheckID {
				cd.Why = &xs[i]
			}
		}
		out = append(out, cd)
	}
	return out
}
