package cli

import (
	"fmt"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/rmerr"
)

// doctorStateDir reports the state directory's disk use and the retention
// rule that bounds it (issue #13 S3): a number to watch, not a failure —
// unless it cannot be measured.
func doctorStateDir(stateDir string) doctorResult {
	u, err := engine.MeasureState(stateDir)
	if err != nil {
		return failed(doctorState, rmerr.Wrap(rmerr.SandboxCleanup, err, "reading the state directory").
			WithHint("make %s readable by runmill, or pass --out", stateDir))
	}
	r := engine.DefaultRetention
	return doctorResult{Name: doctorState, OK: true, Detail: fmt.Sprintf(
		"%s uses %s: %d runs (%s), the rest is the content-keyed caches; each verify prunes runs beyond the last %d and older than %d days",
		stateDir, humanBytes(u.Bytes), u.Runs, humanBytes(u.RunsBytes), r.KeepLast, int(r.KeepFor.Hours()/24))}
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
