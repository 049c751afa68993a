package record

// Conclusion is a GitHub check-run conclusion (or the state of a commit
// status mapped onto one).
type Conclusion string

const (
	Success        Conclusion = "success"
	Neutral        Conclusion = "neutral"
	Skipped        Conclusion = "skipped"
	Failure        Conclusion = "failure"
	Cancelled      Conclusion = "cancelled"
	TimedOut       Conclusion = "timed_out"
	ActionRequired Conclusion = "action_required"
	Stale          Conclusion = "stale"
)

// RemoteResult is the reconciled conclusion of one remote context. The caller
// passes the latest run per context; every result given for a context is
// judged, so an older failure that was re-run must not be passed.
type RemoteResult struct {
	Context    string     `json:"context"`
	Conclusion Conclusion `json:"conclusion"`
}
