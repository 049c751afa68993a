// Package record is the vocabulary of what a verification records: one
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
