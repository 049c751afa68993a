// Package evidence is runmill's signed evidence: the one place that knows the
// bundle schema (DESIGN.md § Evidence wire format), and the portable verifier
// of spec § "Portable signed-bundle verification".
//
// A bundle is a Sigstore bundle v0.3 holding one DSSE envelope whose payload
// is an in-toto Statement v1 in RFC 8785 canonical JSON, signed with pure
// Ed25519. Its subject is the candidate commit; everything runmill records —
// the candidate, the manifest and its policy digests, every check run with
// its output and report digests and test inventory, the sandbox probe, the
// verdict — lives in the predicate. Terminal statements record how a run
// ended: a hash-chained event log, cleanup, budget and side-effect ledgers.
//
// Producing evidence:
//
//	evidence.Decide(&p)                                    // the verdict, as Verify recomputes it
//	bundle, digest, err := evidence.Sign(evidence.NewDeliveryStatement(p), key)
//
// Checking it, with no database, daemon, credential, checkout or network:
//
//	res := evidence.Verify(bundle, trustDoc, expectations, evidence.VerifyOptions{Now: time.Now()})
//	if !res.Valid { … res.Reason, res.Code, res.Message … }
//
// Verify fails closed and reports the first failed step as a stable reason
// code. The package and everything it imports use no network package
// (nonetwork_test.go), which is why DSSE and the key encodings are written
// here on the standard library rather than through sigstore's Go packages
// (docs/evidence.md § Why not sigstore's Go packages).
package evidence
