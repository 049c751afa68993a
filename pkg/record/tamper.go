package record

// Tamper is one place in the change's test code that can decide from inside
// the test process what a run reports (issue 25): a pytest hook that sets a
// report's outcome or deselects collected items, an atexit handler or
// os._exit in test code, a Go TestMain that replaces its own output or
// exits with a code other than m.Run()'s, a literal naming a check's
// declared report path. pkg/outcome's tamper scan finds them in the files
// the change adds or edits; pkg/verdict.Judge makes each one an
// outcome.tamper finding of the candidate runs it concerns.
type Tamper struct {
	File string `json:"file"`
	Line int    `json:"line"` // 1-based; 0 for a file that could not be scanned
	// Rule names what the code does (pkg/outcome's Tamper* constants):
	// "pytest-outcome", "pytest-deselect", "atexit", "os-exit",
	// "go-output", "go-exit", "report-path", "unscanned".
	Rule string `json:"rule"`
	// Code is the construct as the source spells it, escaped and bounded.
	Code string `json:"code"`
	// ReportPath is the declared report path a "report-path" occurrence
	// names; only the runs of checks declaring that path carry it.
	ReportPath string `json:"report_path,omitempty"`
}
