// Package outcome applies spec § 4 "Outcome — what passed excludes" to one
// check: exit code 0 is necessary and nowhere near sufficient.
//
//   - Zero tests and identity-free skips in the output: OutputScanner (an
//     io.Writer for the combined output, bounded memory, independent of
//     write boundaries). A report that executed nothing is judged from its
//     facts by verdict.Judge.
//   - Focused execution: FindFocus over every tracked JavaScript/TypeScript
//     source of a commit (the candidate, and the baseline: spec § 3).
//   - Tamper: FindTamper over the files a change adds or edits — pytest
//     hooks, atexit and os._exit in Python test code, a Go TestMain's
//     output and exit code, literals naming a declared report path — each
//     a record.Tamper fact that verdict.Judge makes an outcome.tamper
//     finding (docs/outcome.md § Tamper).
//   - Skipped or missing tests: Compare of the base and candidate
//     inventories against the check's declared skips, on exact identities.
//
// Every rule broken is returned as a record.Finding carrying the rule's name
// (and its RM code where the specification gives one), for the orchestrator
// to attach to the check's verdict.Result. The Finding type lives in package
// verdict because the verdict is what records and signs reasons; outcome
// imports verdict and verdict never imports outcome (it judges records, not
// outputs), so the dependency runs one way, as the data does.
//
// The package is pure: FindFocus and FindTamper read the files they are
// given and nothing else; nothing prints.
package outcome
