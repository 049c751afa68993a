package rmerr

// Codes of signed evidence (pkg/evidence, `runmill evidence …`; spec §
// Portable signed-bundle verification). Each failed verification step has
// a stable reason (docs/evidence.md § Reason codes) and one of these codes;
// docs/errors.md lists each with cause and fix.
const (
	// EvidenceOptions: the verifier was given impossible options (no
	// current time, a negative or excessive cap or clock skew).
	EvidenceOptions Code = "RM-EVIDENCE-001"
	// EvidenceInputSize: the bundle, trust or expectations document exceeds
	// its byte cap; nothing was parsed.
	EvidenceInputSize Code = "RM-EVIDENCE-002"
	// EvidenceSchema: the bundle is not a strict runmill Sigstore bundle
	// v0.3 (unknown, duplicate or case-variant keys, another media or
	// payload type, not exactly one signature, non-canonical base64).
	EvidenceSchema Code = "RM-EVIDENCE-003"
	// EvidenceTrust: the trust document is malformed, names a key whose id
	// does not match its PEM, has an over-long or inverted window, or expired.
	EvidenceTrust Code = "RM-EVIDENCE-004"
	// EvidenceExpectations: the expectations document is malformed or is for
	// the other kind of bundle.
	EvidenceExpectations Code = "RM-EVIDENCE-005"
	// EvidenceSignature: no trusted key with the bundle's key id verifies the
	// pure-Ed25519 DSSE signature.
	EvidenceSignature Code = "RM-EVIDENCE-006"
	// EvidenceCanonical: the signed payload is not RFC 8785 canonical JSON.
	EvidenceCanonical Code = "RM-EVIDENCE-007"
	// EvidenceStatement: the signed statement does not satisfy its schema
	// (fields, types, subject, commit and digest grammar, timestamps).
	EvidenceStatement Code = "RM-EVIDENCE-008"
	// EvidenceKeyWindow: the signing key may not sign this statement: its
	// issued_at lies outside the key's window or in the future, or the key
	// lacks the purpose.
	EvidenceKeyWindow Code = "RM-EVIDENCE-009"
	// EvidenceTerminalArtifacts: an artifacts directory was given for a
	// terminal bundle, which has no portable artifact manifest.
	EvidenceTerminalArtifacts Code = "RM-EVIDENCE-010"
	// EvidenceBinding: the statement is about another repository, pull
	// request, commit, tree or policy than the expectations observed.
	EvidenceBinding Code = "RM-EVIDENCE-011"
	// EvidenceRecord: the statement's records contradict each other.
	EvidenceRecord Code = "RM-EVIDENCE-012"
	// EvidenceRequired: a required check lacks a passing, proven,
	// orchestrator-run result on an unmoved tree, or approvals are missing.
	EvidenceRequired Code = "RM-EVIDENCE-013"
	// EvidenceVerdictMismatch: the verdict recomputed from the records
	// differs from the signed verdict.
	EvidenceVerdictMismatch Code = "RM-EVIDENCE-014"
	// EvidenceNotMergeReady: the bundle is authentic and consistent, and its
	// verdict is not merge-ready.
	EvidenceNotMergeReady Code = "RM-EVIDENCE-015"
	// EvidenceArtifact: a referenced artifact is absent, a symlink, not a
	// regular file, over a cap, or does not hash to its address.
	EvidenceArtifact Code = "RM-EVIDENCE-016"
	// EvidenceTerminal: a terminal statement's event chain, cleanup,
	// budget or side-effect ledger fails its rule.
	EvidenceTerminal Code = "RM-EVIDENCE-017"
	// EvidenceKey: a signing key cannot be read or generated (not a PKCS#8
	// Ed25519 PEM, a validity window out of range).
	EvidenceKey Code = "RM-EVIDENCE-018"
	// EvidenceShard: shard bundles handed to `evidence merge` are not the
	// shards of one verification (another candidate or manifest, a shard
	// given twice, a check in two shards).
	EvidenceShard Code = "RM-EVIDENCE-019"
)
