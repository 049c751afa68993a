package engine

import (
	"context"
	"fmt"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/verdict"
)

// A base proof (`verify --prove-base REV`, docs/action.md § Proving the
// base once per commit): the baselines of every report check of the
// base's manifest, each path rule taken as matched, run at REV and signed,
// so that every later verification against REV reuses them by input key
// (reuse.go) and runs its candidate alone. It is a delivery statement with
// base_proof set and baseline runs only: the one reuse path loads it like
// any signed run, and a delivery verifier refuses it as a change's
// verdict. Its runs are executed, never reused: a proof is what later
// runs borrow, so it borrows nothing itself.

// proofOptions turns o into a base proof's options: the base is the
// candidate too, Discovery requires every configured check, nothing is
// reused and GitHub is not consulted (a proof verifies no pull request).
func (o *VerifyOptions) proofOptions() error {
	bad := func(format string, args ...any) *rmerr.Error {
		return rmerr.New(rmerr.Usage, format, args...).InField("--prove-base")
	}
	d := &o.Discover
	switch {
	case d.Base == "":
		return bad("a base proof needs the base revision to prove")
	case d.Candidate != "" && d.Candidate != d.Base:
		return bad("a base proof measures one commit; --candidate %s is another", d.Candidate)
	case o.Shard != nil:
		return bad("a base proof is not sharded").WithHint("drop --shard: the proof runs every report check's baseline once")
	case o.GitHub != nil:
		return bad("a base proof verifies no pull request and consults no GitHub").WithHint("drop --github-repo and --pr (or pass --no-github)")
	case d.ProposalsFile != "":
		return bad("a base proof already runs every configured check; agent proposals add nothing").WithHint("drop --agent-proposals")
	case o.SigningKey == nil:
		return bad("an unsigned base proof is never reused").WithHint("pass --signing-key (or RUNMILL_SIGNING_KEY): later verifications reuse only runs their trust document verifies")
	}
	d.Candidate, d.Every, o.NoReuse = d.Base, true, true
	return nil
}

// proveBaseline runs c's baseline at commit, judged, as a verification
// against commit would (baselineAsync); a check without a report has no
// baseline to prove.
func (e *executor) proveBaseline(ctx context.Context, sem chan struct{}, c discovery.Check, commit string) ([]record.CheckRun, error) {
	if c.Report == nil {
		return nil, nil
	}
	r := <-e.baselineAsync(ctx, sem, c, commit)
	if r.err != nil {
		return nil, r.err
	}
	return []record.CheckRun{r.rec}, nil
}

// baseProofFinding is the orchestrator's failure every base proof records:
// its verdict, taken by the one function like any other, is never
// merge-ready (no change was verified), and says so first.
func baseProofFinding(base string) record.Finding {
	return record.Finding{Rule: verdict.RuleBaseProof,
		Message: fmt.Sprintf("a base proof of %s: baseline runs for later verifications against it to reuse; no change was verified", base),
		Hint:    "verify a change against this base with the proof's runs under --reuse (or in the state dir)"}
}
