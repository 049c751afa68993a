package main

// A move is one package-level declaration that leaves its package for
// pkg/record, into file. Methods of a moved type move with it unless they
// are conversions.
type move struct{ from, name, file string }

// moves is the record vocabulary, in the order the record files list it.
var moves = []move{
	{verdictPath, "Finding", "finding.go"},
	{verdictPath, "Normalize", "finding.go"},
	{verdictPath, "compareFindings", "finding.go"},

	{verdictPath, "Phase", "run.go"},
	{verdictPath, "Baseline", "run.go"},
	{verdictPath, "Candidate", "run.go"},
	{verdictPath, "Status", "run.go"},
	{verdictPath, "Passed", "run.go"},
	{verdictPath, "Failed", "run.go"},
	{verdictPath, "Coverage", "run.go"},
	{verdictPath, "Proven", "run.go"},
	{verdictPath, "Unproven", "run.go"},
	{verdictPath, "Orchestrator", "run.go"},
	{evidencePath, "CheckRun", "run.go"},
	{evidencePath, "ReuseRef", "run.go"},
	{evidencePath, "Output", "run.go"},
	{evidencePath, "ReportRecord", "run.go"},
	{verdictPath, "FailedTest", "run.go"},
	{evidencePath, "Inventory", "run.go"},
	{evidencePath, "DependencyUse", "run.go"},

	{verdictPath, "Conclusion", "remote.go"},
	{verdictPath, "Success", "remote.go"},
	{verdictPath, "Neutral", "remote.go"},
	{verdictPath, "Skipped", "remote.go"},
	{verdictPath, "Failure", "remote.go"},
	{verdictPath, "Cancelled", "remote.go"},
	{verdictPath, "TimedOut", "remote.go"},
	{verdictPath, "ActionRequired", "remote.go"},
	{verdictPath, "Stale", "remote.go"},
	{verdictPath, "RemoteResult", "remote.go"},
}

// A conversion is a method of a moved type that needs its original package
// (it returns pkg/verdict's facts, or pkg/report's inventory, which the record
// does not know), so it stays there as a function taking the receiver first:
// r.Facts() becomes evidence.Facts(r).
type conversion struct{ from, recv, method string }

var conversions = []conversion{
	{evidencePath, "CheckRun", "Facts"},
	{evidencePath, "ReportRecord", "ReportInventory"},
	{evidencePath, "Inventory", "reportInventory"},
}

// substitutions replace an unexported helper of the original package that
// moved code calls, so that pkg/record does not grow a copy of it.
var substitutions = map[objKey]substitution{
	{verdictPath, "quote"}: {text: "strconv.Quote", imp: "strconv"},
}

type substitution struct{ text, imp string }

// relocations move a declaration to another file of its own package: the
// helper a moved file leaves behind goes to its one remaining user, so no
// file is left holding nothing else.
var relocations = map[objKey]string{
	{verdictPath, "quote"}: "judge.go",
}

type objKey struct{ pkg, name string }

// recordDoc is pkg/record's package comment, written when the package has
// no doc.go yet.
const recordDoc = `// Package record is the vocabulary of what a verification records: one
// check run as the orchestrator observed it (CheckRun, with its outputs,
// report, prepared dependencies and reuse source), the findings that explain
// a decision (Finding), the phase, status and coverage of a run, and a remote
// context's reconciled conclusion (RemoteResult).
//
// It holds types and nothing that decides: pkg/outcome produces findings,
// pkg/verdict judges runs and takes the verdict over these types, and
// pkg/evidence signs and verifies statements that embed them. Their JSON
// encoding is part of the signed wire format (docs/evidence.md), so a field's
// name or tag never changes here without a new predicate version.
package record
`
