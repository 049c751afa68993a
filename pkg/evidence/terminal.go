package evidence

import (
	"fmt"
	"slices"
	"time"
)

// EventDigest is the digest that chains an event to the next one: the
// canonical digest ("sha256:<hex>") of the event's RFC 8785 form, Prev
// included.
func EventDigest(e Event) (string, error) {
	b, err := Marshal(e)
	if err != nil {
		return "", err
	}
	return Digest(b), nil
}

// Chain builds a hash-chained event log. The zero value is an empty log.
type Chain struct {
	events []Event
	head   string
}

// Append adds an event of kind at time at with detail (any value that
// encodes as a JSON object, or nil) and links it to the previous one.
func (c *Chain) Append(at time.Time, kind string, detail any) error {
	e := Event{Seq: int64(len(c.events)), At: formatTime(at), Kind: kind, Prev: c.head}
	if detail != nil {
		b, err := Marshal(detail)
		if err != nil {
			return fmt.Errorf("encoding the detail of event %q: %w", kind, err)
		}
		if len(b) == 0 || b[0] != '{' {
			return fmt.Errorf("the detail of event %q is not a JSON object", kind)
		}
		if string(b) != "{}" {
			e.Detail = b
		}
	}
	d, err := EventDigest(e)
	if err != nil {
		return err
	}
	c.events = append(c.events, e)
	c.head = d
	return nil
}

// Events returns the log and the digest of its last event, for
// Terminal.Events and Terminal.ChainHead.
func (c *Chain) Events() ([]Event, string) { return slices.Clone(c.events), c.head }

var (
	outcomes         = []string{"merge-ready", "not-merge-ready", "no-verdict", "shard"}
	cleanupKinds     = []string{"container", "task", "snapshot", "checkout", "mount", "tempdir", "daemon", "cgroup"}
	budgetResources  = []string{"wall-time-ms", "cpu-ms", "memory-bytes", "stdout-bytes", "stderr-bytes"}
	sideEffectKinds  = []string{"file", "artifact", "api-call"}
	maxEventKindSize = 128
)

func checkTerminal(p *Terminal) *failure {
	bad := func(format string, args ...any) *failure { return fail(ReasonStatement, format, args...) }
	if p.RunmillVersion == "" || p.RunID == "" {
		return bad("predicate.runmill_version and predicate.run_id must not be empty")
	}
	if _, err := parseTime(p.IssuedAt); err != nil {
		return bad("predicate.issued_at: %v", err)
	}
	if f := checkCandidate(p.Candidate); f != nil {
		return f
	}
	if !slices.Contains(outcomes, p.Outcome) {
		return bad("predicate.outcome %q is not one of %v", p.Outcome, outcomes)
	}
	if p.DeliveryDigest != "" && !isDigest(p.DeliveryDigest) {
		return bad("predicate.delivery_digest %q is not sha256:<hex>", p.DeliveryDigest)
	}
	return nil
}

// refuseTerminalArtifacts: spec — terminal bundles have no portable artifact
// manifest, so --artifacts-dir is refused for them. Nothing is read from the
// directory.
func (v *verification) refuseTerminalArtifacts() *failure {
	if v.opts.ArtifactsDir != "" {
		return fail(ReasonTerminalArtifacts, "terminal bundles have no portable artifact manifest; an artifacts directory is refused for them")
	}
	return errSkipped
}

// checkKeyWindow enforces DESIGN.md § Trust document: the signing key's
// window contains the signed issued_at, the key is trusted for this kind of
// statement, and issued_at is not in the future beyond the clock skew.
func (v *verification) checkKeyWindow() *failure {
	var issued string
	var purpose Purpose
	var subj Subject
	if v.dst != nil {
		issued, purpose, subj = v.dst.Predicate.IssuedAt, PurposeDelivery, v.dst.Subject[0]
	} else {
		issued, purpose, subj = v.tst.Predicate.IssuedAt, PurposeTerminal, v.tst.Subject[0]
	}
	v.result.IssuedAt = issued
	v.result.Subject = &ResultSubject{Name: subj.Name, GitCommit: subj.Digest.GitCommit}
	at, _ := parseTime(issued) // checkStatement parsed it
	v.issuedAt = at
	k := v.key
	if !slices.Contains(k.purposes, purpose) {
		return fail(ReasonKeyWindow, "key %q is not trusted for %s statements (purposes %v)", k.id, purpose, k.purposes)
	}
	if at.Before(k.notBefore) || at.After(k.notAfter) {
		return fail(ReasonKeyWindow, "issued_at %s lies outside key %q's window [%s, %s]", issued, k.id, formatTime(k.notBefore), formatTime(k.notAfter))
	}
	if at.After(v.opts.Now.Add(v.opts.ClockSkew)) {
		return fail(ReasonKeyWindow, "issued_at %s lies in the future (now %s, allowed skew %s)", issued, formatTime(v.opts.Now), v.opts.ClockSkew)
	}
	return nil
}

// bindTerminal enforces exact bindings for a terminal statement.
func (v *verification) bindTerminal() *failure {
	e, c := v.terminal, v.tst.Predicate.Candidate
	want := TerminalCandidate{Repository: e.Repository, PullRequest: e.PullRequest, Head: e.Head, Base: e.Base}
	if c != want {
		return fail(ReasonBinding, "predicate.candidate is %+v, the expectations say %+v", c, want)
	}
	return nil
}

// checkEventChain enforces the hash chain: events numbered from 0 without
// gaps, each carrying the digest of the previous one ("" for the first), the
// last one's digest signed as chain_head, timestamps never going backwards
// and never after issued_at.
func (v *verification) checkEventChain() *failure {
	p := &v.tst.Predicate
	if len(p.Events) == 0 {
		return fail(ReasonEventChain, "the event log is empty")
	}
	prev := ""
	var last time.Time
	for i, e := range p.Events {
		bad := func(format string, args ...any) *failure {
			return fail(ReasonEventChain, "predicate.events[%d]: %s", i, fmt.Sprintf(format, args...))
		}
		if e.Seq != int64(i) {
			return bad("seq is %d, want %d", e.Seq, i)
		}
		if e.Prev != prev {
			return bad("prev is %q, but the previous event's digest is %q", e.Prev, prev)
		}
		if e.Kind == "" || len(e.Kind) > maxEventKindSize {
			return bad("kind must have 1 to %d bytes", maxEventKindSize)
		}
		at, err := parseTime(e.At)
		if err != nil {
			return bad("at: %v", err)
		}
		if at.Before(last) || at.After(v.issuedAt) {
			return bad("at %s goes backwards or lies after issued_at", e.At)
		}
		last = at
		d, err := EventDigest(e)
		if err != nil {
			return bad("%v", err)
		}
		prev = d
	}
	if p.ChainHead != prev {
		return fail(ReasonEventChain, "chain_head is %q, but the last event's digest is %q", p.ChainHead, prev)
	}
	return nil
}

// checkCleanup requires every resource the run created to have been observed
// gone, and complete to say exactly that.
func (v *verification) checkCleanup() *failure {
	c := v.tst.Predicate.Cleanup
	all := true
	for i, r := range c.Resources {
		if !slices.Contains(cleanupKinds, r.Kind) || r.ID == "" {
			return fail(ReasonCleanup, "predicate.cleanup.resources[%d] needs a kind of %v and an id", i, cleanupKinds)
		}
		all = all && r.Gone
	}
	if c.Complete != all {
		return fail(ReasonCleanup, "cleanup.complete is %t but the resources say %t", c.Complete, all)
	}
	if !all {
		return fail(ReasonCleanup, "not every resource of the run was observed gone")
	}
	return nil
}

// checkBudget requires a consistent ledger: known resources, positive
// limits, and exceeded exactly when consumption passed the limit.
func (v *verification) checkBudget() *failure {
	for i, b := range v.tst.Predicate.Budget {
		switch {
		case b.CheckID == "" || !slices.Contains(phases, b.Phase):
			return fail(ReasonBudget, "predicate.budget[%d] needs a check id and a phase", i)
		case !slices.Contains(budgetResources, b.Resource):
			return fail(ReasonBudget, "predicate.budget[%d].resource %q is not one of %v", i, b.Resource, budgetResources)
		case b.Limit <= 0 || b.Consumed < 0:
			return fail(ReasonBudget, "predicate.budget[%d] needs a positive limit and a consumption ≥ 0", i)
		case b.Exceeded != (b.Consumed > b.Limit):
			return fail(ReasonBudget, "predicate.budget[%d].exceeded is %t but %d of %d was consumed", i, b.Exceeded, b.Consumed, b.Limit)
		}
	}
	return nil
}

// checkSideEffects requires every entry to say what it touched.
func (v *verification) checkSideEffects() *failure {
	for i, s := range v.tst.Predicate.SideEffects {
		if !slices.Contains(sideEffectKinds, s.Kind) || s.Target == "" || (s.Digest != "" && !isDigest(s.Digest)) {
			return fail(ReasonSideEffects, "predicate.side_effects[%d] needs a kind of %v, a target and a sha256: digest if any", i, sideEffectKinds)
		}
	}
	return nil
}
