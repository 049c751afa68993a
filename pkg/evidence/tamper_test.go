package evidence

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// rule maps mutations (kind and path, both regular expressions matched in
// full) to the reason Verify must give; "valid" means the mutation is a
// legitimately different document that must still verify.
type rule struct {
	kind, path string
	want       Reason // a regular expression of alternatives, "canonical|statement"
}

const valid Reason = "valid"

func expected(rules []rule, m mutation) (Reason, bool) {
	for _, r := range rules {
		if regexp.MustCompile("^(?:"+r.kind+")$").MatchString(m.kind) && regexp.MustCompile("^(?:"+r.path+")$").MatchString(m.path) {
			return r.want, true
		}
	}
	return "", false
}

func outcomeOf(res Result) Reason {
	if res.Valid {
		return valid
	}
	return res.Reason
}

// runMatrix verifies every mutation and compares the outcome with rules.
// TAMPER_DUMP=1 prints every outcome (to review the table).
func runMatrix(t *testing.T, muts []mutation, rules []rule, verify func(doc []byte) Result) {
	t.Helper()
	kinds := map[string]int{}
	var bad []string
	for _, m := range muts {
		kinds[m.kind]++
		res := verify(m.doc)
		got := outcomeOf(res)
		want, ok := expected(rules, m)
		if os.Getenv("TAMPER_DUMP") != "" {
			t.Logf("%-14s %-60s -> %-18s %s", m.kind, m.path, got, res.Message)
		}
		if !ok {
			bad = append(bad, fmt.Sprintf("no rule for %s %s (got %s: %s)", m.kind, m.path, got, res.Message))
			continue
		}
		if !regexp.MustCompile("^(?:" + string(want) + ")$").MatchString(string(got)) {
			bad = append(bad, fmt.Sprintf("%s %s: got %s (%s), want %s", m.kind, m.path, got, res.Message, want))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
	t.Logf("%d mutations: %v", len(muts), kinds)
}

func never(string) bool { return false }

// withPayload returns the fixture's bundle with its payload replaced and its
// signature kept.
func withPayload(t testing.TB, bundle, payload []byte) []byte {
	var b Bundle
	if err := json.Unmarshal(bundle, &b); err != nil {
		t.Fatal(err)
	}
	b.DSSEEnvelope.Payload = base64.StdEncoding.EncodeToString(payload)
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTamperMatrix is issue 5's acceptance matrix: every field of the
// bundle envelope, the signed statement, the trust document and the
// expectations is changed, removed, duplicated, re-encoded, key-case-varied
// and (where order matters) reordered, and Verify must fail with the reason
// the rules name.
func TestTamperMatrix(t *testing.T) {
	f := newFixture(t)
	dir := f.writeArtifacts(t)
	opts := VerifyOptions{Now: fixNow, ArtifactsDir: dir}

	t.Run("bundle", func(t *testing.T) {
		runMatrix(t, mutate(t, f.bundle, never), bundleRules, func(doc []byte) Result {
			return Verify(doc, f.trust, f.expectations, opts)
		})
	})
	t.Run("trust", func(t *testing.T) {
		runMatrix(t, mutate(t, f.trust, never), trustRules, func(doc []byte) Result {
			return Verify(f.bundle, doc, f.expectations, opts)
		})
	})
	t.Run("expectations", func(t *testing.T) {
		runMatrix(t, mutate(t, f.expectations, sortedExpectation), expectationRules, func(doc []byte) Result {
			return Verify(f.bundle, f.trust, doc, opts)
		})
	})
	payload := payloadOf(t, f.bundle)
	if got := parseTree(t, payload).bytes(); string(got) != string(payload) {
		t.Fatalf("the tree does not reproduce the canonical payload")
	}
	stmtMuts := mutate(t, payload, orderMatters)
	t.Run("statement-unsigned", func(t *testing.T) {
		// Without a new signature every change to the payload, however
		// small or meaning-preserving, breaks the signature.
		runMatrix(t, stmtMuts, []rule{{".*", ".*", ReasonSignature}}, func(doc []byte) Result {
			return Verify(withPayload(t, f.bundle, doc), f.trust, f.expectations, opts)
		})
	})
	t.Run("statement-resigned", func(t *testing.T) {
		// Signed again with the trusted key — the signer itself lies or
		// errs — the statement's own rules must catch what matters.
		runMatrix(t, stmtMuts, statementRules, func(doc []byte) Result {
			return Verify(f.resign(t, doc), f.trust, f.expectations, opts)
		})
	})
}

func sortedExpectation(path string) bool { return path == "$.required_checks" }

func orderMatters(path string) bool {
	return strings.HasSuffix(path, ".{}") || strings.Contains(path, ".inventory.") || strings.HasSuffix(path, ".events")
}

// bundleRules: the envelope is parsed strictly before anything else, so all
// but a well-formed change of the key id or signature is a schema failure.
// (A changed payload that is still valid base64 is the statement-unsigned
// matrix.)
var bundleRules = []rule{
	// The mutation of the payload keeps it valid base64 when its length
	// allows, and then only the signature can tell.
	{"changed", `\$\.verificationMaterial\.publicKey\.hint|\$\.dsseEnvelope\.signatures\[0\]\.sig`, ReasonSignature},
	{"changed", `\$\.dsseEnvelope\.payload`, "signature|schema"},
	{".*", ".*", ReasonSchema},
}

// trustRules: the trust document is the verifier's own configuration; every
// mutation makes it invalid, except dropping a purpose a delivery bundle does
// not need.
var trustRules = []rule{
	{"removed", `\$\.keys\[0\]\.purposes\[0\]`, ReasonKeyWindow}, // "delivery": the key may no longer sign this bundle
	{"removed", `\$\.keys\[0\]\.purposes\[1\]`, valid},           // "terminal" is not needed for a delivery bundle
	{".*", ".*", ReasonTrust},
}

// expectationRules: every well-formed change of an observation is a fact the
// statement no longer matches; malformed documents fail to parse.
var expectationRules = []rule{
	{"changed", `\$\.(repository\.(name|id)|pull_request|head|base|merge_base|candidate_tree|policy\.(operator|repository)_digest)`, ReasonBinding},
	{"changed", `\$\.landing\.(base_ref|behind|commit|git_tree)`, ReasonBinding},
	{"changed|removed", `\$\.required_checks\[\d\]`, ReasonBinding},
	{"removed", `\$\.reviews\.approvals\[0\]`, ReasonBinding},
	{"changed", `\$\.reviews\.approvals\[0\]\.(reviewer|commit)`, ReasonBinding},
	{"changed", `\$\.reviews\.required_approvals`, ReasonRequiredEvidence},
	// Issue 24: the pull request's author, git's renames, the change's own
	// declared skips.
	{"changed", `\$\.(author|renames\.(from|to|truncated|files\[0\]\.(from|to))|change_declarations\[0\]\.(check_id|added\[0\]|removed\[0\]))`, ReasonBinding},
	{"removed", `\$\.(renames|renames\.files\[0\]|change_declarations|change_declarations\[0\]\.(added|removed)\[0\])`, ReasonBinding},
	{"duplicated", `\$\.change_declarations\[0\]\.(added|removed)\[0\]`, ReasonBinding},
	{".*", ".*", ReasonExpectations},
}

const (
	pred  = `\$\.predicate`
	check = pred + `\.checks\[\d\]`
	base  = pred + `\.checks\[0\]` // the baseline run
	cand  = pred + `\.checks\[1\]` // the candidate run
	mchk  = pred + `\.manifest\.checks\[\d\]`
)

// statementRules say, for a statement re-signed with the trusted key, which
// step must catch each mutation. "valid" rows are the fields a signer
// asserts and nothing can check (docs/evidence.md § What is bound): its
// version, run id, durations, notes, reasons, the generic sandbox probe, the
// cut stdout's whole-stream digest, and facts that change nothing the
// verdict or the expectations depend on.
var statementRules = []rule{
	// One payload, one spelling: any re-spelling is not its JCS transform.
	{"key-re-encoded|re-encoded", `.*`, ReasonCanonical},
	{"duplicated", `.*[^\]]`, ReasonCanonical}, // a repeated key
	{"reordered", `.*\.\{\}`, ReasonCanonical},
	{"key-case", pred + `\.sandbox\..*`, "valid|canonical"}, // generic object: a new key (out of order or not), not a variant
	{"key-case", `.*`, "canonical|statement"},               // out of order, or an unknown key
	{"reordered", `.*\.inventory\.passed`, ReasonStatement},

	// Repeated list elements.
	{"duplicated", check + `\.report\.inventory\..*|\$\.subject\[0\]|` + mchk + `\.sources\[0\]`, ReasonStatement},
	{"duplicated", check + `|` + mchk + `\.declared_skips\[0\]`, ReasonVerdictMismatch},
	{"duplicated", pred + `\.manifest\.checks\[0\]`, ReasonVerdictMismatch},
	{"duplicated", mchk + `|` + mchk + `\.change_(declared|removed)_skips\[0\]`, ReasonBinding}, // the change's declarations twice
	{"duplicated", cand + `\.moved\[0\]|` + pred + `\.renames\.files\[0\]`, ReasonStatement},
	{"duplicated", `.*\.(notes|reasons|contexts)\[0\]|` + pred + `\.(remote|reviews)\[\d\]|` + pred + `\.sandbox\..*`, valid},

	// Signer-asserted facts.
	// oom_killed only words the exit-code finding of a failed run, and a
	// baseline's summary claims decide nothing.
	{"changed", check + `\.(duration_ms|notes\[0\]|oom_killed|report\.shown_failures)|` + base + `\.report\.claimed_failures|` + pred + `\.(run_id|runmill_version)|` + pred + `\.sandbox\..*`, valid},
	{"changed", mchk + `\.(reasons\[0\]|(change_)?declared_skips\[0\]\.cause|timeout)|` + pred + `\.manifest\.(changed_paths|github\..*|policies\.(operator|repository)\.path)`, valid},
	{"changed", pred + `\.reviews\[1\]\.(reviewer|commit)`, valid}, // a comment, not an approval
	{"changed", cand + `\.stdout\.(sha256|size)`, valid},           // the stored prefix cannot prove the whole stream
	{"changed", cand + `\.report\.inventory\.(passed\[2\]|skipped\[0\])`, valid},
	{"removed", check + `\.notes\[0\]|` + mchk + `\.(reasons\[0\]|defined_by|timeout)|` + pred + `\.sandbox\..+|` + pred + `\.manifest\.github\.contexts\[0\]|` + pred + `\.reviews\[1\]`, valid},
	{"removed", base + `\.report\.inventory\.passed\[0\]`, ReasonVerdictMismatch},                                              // the moved test: nothing moved
	{"removed", base + `\.report\.inventory\.passed\[\d\]|` + cand + `\.report\.inventory\.(passed\[2\]|skipped\[0\])`, valid}, // still preserved as declared
	// Issue 24: without the approval on record the change's own
	// declaration no longer counts; without the moved tests or the
	// renames, the moved test is missing.
	{"removed", pred + `\.reviews\[0\]|` + cand + `\.moved`, ReasonVerdictMismatch},
	{"removed", cand + `\.report(\.inventory)?`, ReasonStatement}, // moved tests with nothing to have moved to
	{"removed", pred + `\.renames(\.files\[0\])?|` + mchk + `\.change_(declared|removed)_skips`, ReasonBinding},

	// Form: schema, grammar and enumerations.
	{"changed", `\$\._type|\$\.predicateType|\$\.subject\[0\]\..*|` + pred + `\.candidate\.(head|repository\.name)`, ReasonStatement},
	{"changed", check + `\.(phase|status|coverage|report\.format|started)|` + pred + `\.reviews\[\d\]\.state|` + pred + `\.manifest\.(schema|read_from|autonomy)|` + mchk + `\.(sources\[0\]|defined_by)`, ReasonStatement},
	{"removed", pred + `\.manifest\.checks\[\d\]\.report`, ReasonRecord},
	{"removed", check + `\.report(\.inventory)?`, ReasonRecord},
	{"removed", pred + `\.manifest\.policies\.(operator|repository)(\.commit)?`, ReasonBinding},
	{"removed", mchk + `\.declared_skips`, ReasonVerdictMismatch},
	{"removed", check + `|` + pred + `\.remote\[0\]`, ReasonRequiredEvidence},
	{"removed", mchk + `|` + mchk + `\.sources\[0\]`, ReasonBinding},
	{"removed", check + `\.report\.inventory\.passed\[\d\]`, ReasonVerdictMismatch},
	{"removed", `.*`, ReasonStatement}, // every other member is required

	// Bindings to the expectations.
	{"changed", pred + `\.candidate\.(author|base|merge_base|pull_request|repository\.id|tree)|` + pred + `\.manifest\.(base|candidate|policies\..*)`, ReasonBinding},
	{"changed", pred + `\.candidate\.landing\.(base_ref|behind|commit|git_tree)`, ReasonBinding},
	{"changed", pred + `\.candidate\.landing\.merged`, ReasonStatement}, // a merge exactly when behind
	{"changed", pred + `\.renames\.(from|to|truncated|files\[0\]\.(from|to))|` + mchk + `\.(change_declared_skips\[0\]\.test_id|change_removed_skips\[0\])`, ReasonBinding},
	{"changed", pred + `\.renames\.files\[0\]\.similarity|` + pred + `\.manifest\.change_declarations|` + cand + `\.moved\[0\]\.by`, ReasonStatement},
	{"changed", cand + `\.moved\[0\]\.(from|to)`, ReasonVerdictMismatch},
	{"changed", check + `\.commit|` + cand + `\.tree_before|` + mchk + `\.(id|required)|` + pred + `\.reviews\[0\]\.(reviewer|commit)`, ReasonBinding},
	{"changed", pred + `\.issued_at`, ReasonKeyWindow},

	// Internal consistency of the records.
	{"changed", cand + `\.stdout\.(artifact|artifact_size)`, ReasonArtifact}, // a cut stream: only the store can tell
	{"changed", pred + `\.manifest\.checks\[1\]\.command`, ReasonRecord},
	{"changed", check + `\.(check_id|command|report\.(path|sha256|artifact))|` + check + `\.std(out|err)\.(sha256|size|artifact|artifact_size)|` + mchk + `\.report\.(path|format)`, ReasonRecord},

	// Required evidence.
	{"changed", check + `\.executor|` + pred + `\.remote\[0\]\..*|` + mchk + `\.command`, ReasonRequiredEvidence},

	// The recomputed verdict.
	// A run's facts that decide its status: Judge, recomputed in the
	// record step, disagrees with the signed status.
	{"changed", check + `\.(timed_out|tree_after|exit_code)|` + base + `\.tree_before|` + cand + `\.report\.claimed_failures`, ReasonVerdictMismatch},
	{"changed", pred + `\.verdict\..*|` + pred + `\.manifest\.fail_on_skipped_check|` + mchk + `\.declared_skips\[0\]\.test_id|` + check + `\.report\.inventory\..*`, ReasonVerdictMismatch},
	{"changed", check + `\.report\.size`, ReasonArtifact},
}
