package engine

import (
	"context"

	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/rmerr"
)

// admitHarnesses resolves the harness of every run the manifest will make
// of the checks in share (nil: all), before any of them writes a checkout
// (issue 23): a change that adds 200 000 files matching a check's harness:
// glob is refused (RM-LIMIT-001) from the two trees' listings alone, not
// after the focus scans and the check runs have written its checkouts.
// The records are computed again, from the cached listings, as each run
// starts.
func admitHarnesses(ctx context.Context, h *harnesses, m *discovery.Manifest, baseline string, share shardSet) error {
	for _, c := range m.Checks {
		if !c.Runnable() || !share.has(c.ID) {
			continue
		}
		if _, err := h.record(ctx, c, m.Candidate); err != nil {
			return err
		}
		if c.Report != nil {
			if _, err := h.record(ctx, c, baseline); err != nil {
				return err
			}
		}
	}
	return nil
}

// refused records in the run's event chain why a bound on repository
// content refused the run (RM-LIMIT-…), so the terminal statement says it.
func (v *verification) refused(err error) error {
	if code := rmerr.CodeOf(err); code != "" {
		v.event("limit.refused", map[string]any{"code": string(code), "message": err.Error()})
	}
	return err
}
