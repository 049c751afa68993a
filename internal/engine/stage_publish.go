package engine

import "context"

// publish is the last stage: the GitHub check run (not for a shard: the
// merge publishes), then the terminal statement, signed at the end of every
// run, which looks again for everything the run created.
func (v *verification) publish(ctx context.Context, mergeReady bool, digest string) error {
	o := &v.o
	outcome := outcomeOf(mergeReady)
	if o.Shard != nil {
		outcome = "shard" // no verdict of its own: the merge takes it
	}
	if o.GitHub != nil && o.Shard == nil {
		publishCheckRun(ctx, o.GitHub, v.run.Dir, &v.run.Delivery, v.logf)
	}
	return writeTerminal(ctx, v.run, *o, &v.chain, v.e.ledger, v.sb, v.closeSandbox, outcome, digest, v.cand)
}

// outcomeOf is a terminal statement's outcome for a verdict.
func outcomeOf(mergeReady bool) string {
	if mergeReady {
		return "merge-ready"
	}
	return "not-merge-ready"
}
