package engine

import (
	"context"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
)

// sideResult is one finished, judged check run.
type sideResult struct {
	rec record.CheckRun
	inv *report.Inventory
	err error
}

// baselineAsync starts c's baseline run (a report check's first run) in its
// own goroutine and semaphore slot, so it runs beside the candidate's
// whenever --parallel leaves a slot free; with --parallel 1 the two still
// run one after the other. The channel yields the judged record; it is nil
// for a check without a report, which has no baseline run.
func (e *executor) baselineAsync(ctx context.Context, sem chan struct{}, c discovery.Check, baseline string) <-chan sideResult {
	if c.Report == nil {
		return nil
	}
	out := make(chan sideResult, 1)
	go func() {
		if r, ok := e.reusedBaseline(ctx, c, baseline); ok {
			out <- r
			return
		}
		sem <- struct{}{}
		rec, inv, err := e.runKeyed(ctx, c, record.Baseline, baseline)
		<-sem
		if err == nil {
			e.judged(&rec, nil) // a baseline's judgement weighs no other run
		}
		out <- sideResult{rec, inv, err}
	}()
	return out
}

// ownHarnessAsync starts, when c's candidate run lays the base's version of
// some harness file over the landing commit (issue 25), the run of the
// landing commit with the change's own harness, in its own slot beside the
// other two: the tests a change wires into its harness run in that change,
// and its findings can only add failures. The channel is nil when the
// harness did not change. It is never reused: it is the change's own.
func (e *executor) ownHarnessAsync(ctx context.Context, sem chan struct{}, c discovery.Check, commit string) (<-chan sideResult, error) {
	if e.harness == nil || e.conflicts != nil {
		return nil, nil
	}
	hr, err := e.harness.record(ctx, c, commit)
	if err != nil {
		return nil, err
	}
	if !hr.Changed() {
		return nil, nil
	}
	out := make(chan sideResult, 1)
	go func() {
		sem <- struct{}{}
		rec, inv, err := e.runKeyed(ctx, c, record.CandidateHarness, commit)
		<-sem
		out <- sideResult{rec, inv, err}
	}()
	return out, nil
}
