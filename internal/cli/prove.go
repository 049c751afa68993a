package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/rmerr"
)

// proveFlags is verify's --prove-base (engine.VerifyOptions.ProveBase;
// docs/action.md § Proving the base once per commit).
type proveFlags struct{ rev string }

func (f *proveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.rev, "prove-base", "", "prove base `REV` instead of verifying a change: run every report check's baseline there and sign them for later verifications against REV to reuse")
}

// proofRefuses are the flags a base proof has no use for: it measures one
// commit, for no pull request, and borrows no run.
var proofRefuses = []string{"base", "candidate", "shard", "verification-id", "shard-durations", "agent-proposals", "pr", "check-run", "reuse", "trust", "no-reuse"}

// required checks the flags around --prove-base: with it, only --repo is
// required and the flags a proof cannot use are refused; without it,
// verify's usual ones.
func (f *proveFlags) required(fs *flags) error {
	if f.rev == "" {
		return fs.required("repo", "base", "candidate")
	}
	given := fs.given()
	var bad []string
	for _, n := range proofRefuses {
		if given[n] {
			bad = append(bad, "--"+n)
		}
	}
	if len(bad) > 0 {
		return rmerr.New(rmerr.Usage, "--prove-base %s proves one base commit for no pull request and reuses nothing: %s do not apply", f.rev, strings.Join(bad, ", ")).
			InField("--prove-base").WithHint("drop %s, or verify a change with --base and --candidate", strings.Join(bad, ", "))
	}
	return fs.required("repo")
}

// apply makes o a base proof of the revision.
func (f *proveFlags) apply(o *verifyOptions) {
	if f.rev == "" {
		return
	}
	o.change.Base, o.change.Candidate = f.rev, ""
	o.github.off = true // a proof verifies no pull request: GitHub is not consulted
}

// finishProof prints what a base proof proved. Exit 0: every report
// check's baseline passed with proven coverage, so later verifications
// reuse each; 1 (an answer): some did not (evidence.Reusable says why),
// and verifications against this base run those baselines themselves.
func finishProof(s IO, run *engine.Run, asJSON bool) error {
	d := &run.Delivery
	type proven struct {
		Check    string `json:"check"`
		InputKey string `json:"input_key"`
		// Reusable is "" when later verifications may reuse the run,
		// else why not.
		NotReusable string `json:"not_reusable,omitempty"`
	}
	var out []proven
	all := true
	for i := range d.Checks {
		c := &d.Checks[i]
		p := proven{Check: c.CheckID, InputKey: c.InputKey, NotReusable: evidence.Reusable(c)}
		all = all && p.NotReusable == ""
		out = append(out, p)
	}
	if asJSON {
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			RunID     string   `json:"run_id"`
			Base      string   `json:"base"`
			Dir       string   `json:"dir"`
			Statement string   `json:"statement"`
			Bundle    string   `json:"bundle"`
			Baselines []proven `json:"baselines"`
		}{run.ID, d.Candidate.Base, run.Dir, run.StatementPath, run.BundlePath, out}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(s.Out, "BASE PROOF  %s  of %s: %d baselines, %s\n", run.ID, objectid.Short(d.Candidate.Base), len(out),
			map[bool]string{true: "every one reusable", false: "not every one reusable"}[all])
		for _, p := range out {
			if p.NotReusable == "" {
				fmt.Fprintf(s.Out, "  %s\tproven\tinput key %s\n", p.Check, p.InputKey[:min(16, len(p.InputKey))])
			} else {
				fmt.Fprintf(s.Out, "  %s\tNOT REUSABLE: the run %s; verifications against this base run it themselves\n", p.Check, p.NotReusable)
			}
		}
		fmt.Fprintf(s.Out, "Evidence: %s\n", run.Dir)
	}
	if !all {
		return answer()
	}
	return nil
}
