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
			e.judged(&rec)
		}
		out <- sideResult{rec, inv, err}
	}()
	return out
}
