// Verify's recomputation: every run's judgement, the outcome rules and the
// verdict decided again from the recorded facts, through the same functions
// the engine used.

package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/verdict"
)

// checkJudgements recomputes every run's status, coverage and findings from
// its recorded facts through verdict.Judge, the function the engine used,
// and requires equality: a signed statement whose recorded status
// contradicts its facts is not evidence (issue 12, "one place decides").
// It also holds each report's named failures to its inventory.
func (v *verification) checkJudgements() *failure {
	p := &v.dst.Predicate
	ctx := contexts(&p.Manifest, p.Checks)
	for i := range p.Checks {
		r := &p.Checks[i]
		bad := func(format string, args ...any) *failure {
			return fail(ReasonVerdictMismatch, "predicate.checks[%d] (%s, %s): %s", i, r.CheckID, r.Phase, fmt.Sprintf(format, args...))
		}
		if rep := r.Report; rep != nil && rep.Inventory != nil {
			named := rep.Inventory.Failed[:min(len(rep.Inventory.Failed), verdict.MaxNamedFailures)]
			if len(rep.FailedTests) != len(named) {
				return bad("the report names %d failed tests; its inventory's first %d failed ids must be named", len(rep.FailedTests), len(named))
			}
			for k, t := range rep.FailedTests {
				if t.ID != named[k] {
					return bad("the report's named failed test %q is not its inventory's failed id %q", t.ID, named[k])
				}
			}
		}
		c, _ := p.Manifest.Check(r.CheckID)
		j := verdict.Judge(Requirement(&p.Manifest, c), withContext(Facts(r), ctx[r.CheckID]))
		if j.Status != r.Status || j.Coverage != r.Coverage {
			return bad("recorded status %s and coverage %s, but its facts give %s and %s", r.Status, r.Coverage, j.Status, j.Coverage)
		}
		want, _ := json.Marshal(j.Findings)
		have, _ := json.Marshal(record.Normalize(r.Findings))
		if !bytes.Equal(want, have) {
			return bad("its recorded findings differ from those its facts give")
		}
	}
	return nil
}

// recomputeVerdict enforces "verdict recomputed from the recorded facts with
// pkg/verdict and equal to the signed one", and, one level down, that the
// preservation and zero-test findings of every candidate run follow from
// the recorded inventories (pkg/outcome), so a signer cannot record a full
// inventory and omit the finding it implies.
func (v *verification) recomputeVerdict() *failure {
	p := &v.dst.Predicate
	if f := recomputeOutcome(p); f != nil {
		return f
	}
	got := verdict.Evaluate(VerdictInput(p))
	want, err1 := json.Marshal(p.Verdict)
	have, err2 := json.Marshal(got)
	if err1 != nil || err2 != nil || !bytes.Equal(want, have) {
		return fail(ReasonVerdictMismatch, "the signed verdict (merge_ready %t) differs from the verdict recomputed from the records (merge_ready %t)", p.Verdict.MergeReady, got.MergeReady)
	}
	mr := p.Verdict.MergeReady
	v.result.MergeReady = &mr
	return nil
}

func isPreservationRule(rule string) bool {
	return strings.HasPrefix(rule, "outcome.preservation.") || strings.HasPrefix(rule, "outcome.declared-skip.")
}

func recomputeOutcome(p *Delivery) *failure {
	specs := checkIndex(&p.Manifest)
	approver := approverOf(p)
	type key struct {
		id    string
		phase record.Phase
	}
	runs := map[key][]int{}
	for i, r := range p.Checks {
		if r.Executor == record.Orchestrator {
			runs[key{r.CheckID, r.Phase}] = append(runs[key{r.CheckID, r.Phase}], i)
		}
	}
	// Each candidate run is judged on its own, so the runs are shared out
	// to one worker per core; the first failing run in record order is
	// reported, whichever worker found it.
	check := func(i int) *failure {
		r := &p.Checks[i]
		if r.Executor != record.Orchestrator || r.Phase != record.Candidate || r.Report == nil || r.Report.Inventory == nil {
			return nil
		}
		cand := reportInventory(r.Report.Inventory, r.Report)
		base := runs[key{r.CheckID, record.Baseline}]
		noMoves := func() *failure {
			if len(r.Moved) > 0 {
				return fail(ReasonVerdictMismatch, "predicate.checks[%d] (%s): it records moved tests without a baseline inventory to compare with", i, r.CheckID)
			}
			return nil
		}
		if len(base) != 1 || len(runs[key{r.CheckID, record.Candidate}]) != 1 {
			return noMoves() // the verdict judges every run; preservation pairs one with one
		}
		b := &p.Checks[base[0]]
		if b.Report == nil || b.Report.Inventory == nil {
			return noMoves() // no baseline inventory: the verdict fails the check itself
		}
		got := outcome.Compare(reportInventory(b.Report.Inventory, b.Report), cand, ChangeOf(&p.Manifest, specs[r.CheckID], p.Renames, approver))
		if !slices.Equal(got.Moved, r.Moved) {
			return fail(ReasonVerdictMismatch, "predicate.checks[%d] (%s): its moved tests differ from those recomputed from the inventories and the renames git shows", i, r.CheckID)
		}
		want := withCheck(got.Findings, r.CheckID)
		var have []record.Finding
		for _, f := range r.Observations {
			if isPreservationRule(f.Rule) {
				have = append(have, f)
			}
		}
		have = withCheck(have, r.CheckID)
		w, _ := json.Marshal(want)
		h, _ := json.Marshal(have)
		if !bytes.Equal(w, h) {
			return fail(ReasonVerdictMismatch, "predicate.checks[%d] (%s): its preservation findings differ from those recomputed from the baseline and candidate inventories", i, r.CheckID)
		}
		return nil
	}
	workers := min(runtime.GOMAXPROCS(0), 1+len(p.Checks)/64)
	type found struct {
		at int
		f  *failure
	}
	firsts := make([]found, workers)
	var wg sync.WaitGroup
	for w := range workers {
		firsts[w].at = len(p.Checks)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(p.Checks); i += workers {
				if f := check(i); f != nil {
					firsts[w] = found{i, f} // i only grows: the worker's first
					return
				}
			}
		}()
	}
	wg.Wait()
	first := found{at: len(p.Checks)}
	for _, f := range firsts {
		if f.f != nil && f.at < first.at {
			first = f
		}
	}
	return first.f
}

func withCheck(fs []record.Finding, id string) []record.Finding {
	out := make([]record.Finding, len(fs))
	for i, f := range fs {
		if f.Check == "" {
			f.Check = id
		}
		out[i] = f
	}
	return record.Normalize(out)
}

// checkMergeReady: a valid result is an authority decision, so it requires a
// merge-ready verdict (spec: a contradictory bundle "never becomes an
// authority decision"; neither does a negative one).
func (v *verification) checkMergeReady() *failure {
	if v.dst.Predicate.Verdict.MergeReady || v.opts.AllowNotMergeReadyUnsafe {
		return nil
	}
	reasons := v.dst.Predicate.Verdict.Reasons()
	msg := "the signed verdict is not merge-ready"
	if len(reasons) > 0 {
		msg += fmt.Sprintf(" (%d reasons; first: %s)", len(reasons), reasons[0].Err().Error())
	}
	return fail(ReasonNotMergeReady, "%s", msg)
}
