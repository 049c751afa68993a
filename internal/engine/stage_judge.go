package engine

import (
	"context"

	"github.com/runmill/verify/pkg/evidence"
)

// judge is the fourth stage: the remote checks reconciled (spec § Remote
// checks; after the local ones, which took time the remote ones used to
// finish; a shard leaves it to the merge, which reconciles once for all),
// then Outcome, Coverage and the verdict through the one decision function.
func (v *verification) judge(ctx context.Context) (mergeReady bool, err error) {
	o, d := &v.o, &v.run.Delivery
	if o.GitHub != nil && o.Shard == nil {
		if err := reconcile(ctx, o.GitHub, d, v.logf); err != nil {
			return false, err
		}
		v.event("github.reconciled", map[string]any{"remote": len(d.Remote), "pending": len(d.PendingContexts)})
	}
	verdict := evidence.Decide(d)
	v.event("verdict", map[string]any{"merge_ready": verdict.MergeReady})
	return verdict.MergeReady, nil
}
