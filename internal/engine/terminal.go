package engine

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/record"
)

// ledger records what each check run created and consumed, for the terminal
// statement's cleanup observation, budget and side-effect ledgers.
type ledger struct {
	mu       sync.Mutex
	runs     []ledgerRun
	tempdirs []string
	// checkoutRoots are the checkout managers' own directories (the
	// commits' written layers live there); observed gone like the rest.
	checkoutRoots []string
}

func (l *ledger) addCheckoutRoot(d string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkoutRoots = append(l.checkoutRoots, d)
}

type ledgerRun struct {
	check       string
	phase       record.Phase
	checkoutDir string
	mounted     bool // the checkout was an overlay mount
	containerID string
	timeout     time.Duration
	maxOutput   int64
	duration    time.Duration
	stdout      int64
	stderr      int64
	cpuLimit    time.Duration // CPU quota over the wall-clock limit
	cpu         time.Duration
	memLimit    int64
	memPeak     int64
}

func (l *ledger) addRun(r ledgerRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, r)
}

func (l *ledger) addTempdir(d string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tempdirs = append(l.tempdirs, d)
}

// goneChecker is what the cleanup observation needs of the sandbox.
type goneChecker interface {
	Gone(ctx context.Context, id string) (bool, error)
}

var _ goneChecker = (*sandbox.Sandbox)(nil)

// writeTerminal signs (or, without a key, writes) the terminal statement:
// how the run ended, its event chain, and what it created, consumed and
// touched — every resource looked for again, not assumed gone.
//
// afterContainers runs once every container was looked up: the caller closes
// the sandbox there and returns what it observed of the private daemon.
func writeTerminal(ctx context.Context, run *Run, o VerifyOptions, chain *evidence.Chain, l *ledger, sb goneChecker,
	afterContainers func() []evidence.CleanupResource, outcome, deliveryDigest string, cand evidence.TerminalCandidate) error {
	_ = chain.Append(o.Now(), "run.finished", map[string]any{"outcome": outcome})
	events, head := chain.Events()
	t := evidence.Terminal{
		RunmillVersion: o.Version, RunID: run.ID,
		IssuedAt:  o.Now().UTC().Format(time.RFC3339Nano),
		Candidate: cand, Outcome: outcome, DeliveryDigest: deliveryDigest,
		Events: events, ChainHead: head,
		Cleanup: evidence.Cleanup{Complete: true, Resources: []evidence.CleanupResource{}},
		Budget:  []evidence.BudgetEntry{}, SideEffects: []evidence.SideEffect{},
	}
	obs := &cleanupObserver{t: &t, seen: map[[2]string]bool{}}
	l.mu.Lock()
	defer l.mu.Unlock()
	obs.runs(ctx, l.runs, sb)
	if afterContainers != nil {
		for _, r := range afterContainers() {
			obs.observe(r.Kind, r.ID, r.Gone, r.Detail)
		}
	}
	obs.dirs(l.checkoutRoots, l.tempdirs)
	// Artifacts are observed in the store, not taken from a list.
	stored, _ := filepath.Glob(filepath.Join(run.Dir, "artifacts", "sha256", "*"))
	for _, p := range stored {
		hexd := filepath.Base(p)
		t.SideEffects = append(t.SideEffects, evidence.SideEffect{Kind: "artifact", Target: evidence.ArtifactAddress(hexd), Digest: digest.Prefix + hexd})
	}
	if o.GitHub != nil && o.GitHub.Client != nil {
		t.SideEffects = append(t.SideEffects, apiCalls(o.GitHub.Client.Calls())...)
	}
	sortSideEffects(t.SideEffects)
	return signTerminal(run, o.SigningKey, t)
}

// cleanupObserver builds the terminal statement's cleanup observation: each
// resource once, complete only when every one is gone.
type cleanupObserver struct {
	t    *evidence.Terminal
	seen map[[2]string]bool
}

func (c *cleanupObserver) observe(kind, id string, gone bool, detail string) {
	if c.seen[[2]string{kind, id}] {
		return
	}
	c.seen[[2]string{kind, id}] = true
	c.t.Cleanup.Resources = append(c.t.Cleanup.Resources, evidence.CleanupResource{Kind: kind, ID: id, Gone: gone, Detail: detail})
	c.t.Cleanup.Complete = c.t.Cleanup.Complete && gone
}

// runs looks again for what each check run created — its checkout, its
// overlay mount, its container — and enters what it consumed against its
// limits in the budget ledger.
func (c *cleanupObserver) runs(ctx context.Context, runs []ledgerRun, sb goneChecker) {
	mounts, mountsErr := mountPoints()
	for _, r := range runs {
		if r.checkoutDir != "" {
			_, err := os.Lstat(r.checkoutDir)
			c.observe("checkout", r.checkoutDir, os.IsNotExist(err), "")
			c.t.SideEffects = append(c.t.SideEffects, evidence.SideEffect{Kind: "file", Target: r.checkoutDir, Detail: "fresh checkout, removed after its run"})
		}
		if r.mounted {
			detail := "overlay mount of the checkout, looked for in /proc/self/mountinfo"
			if mountsErr != nil {
				detail = "reading /proc/self/mountinfo: " + mountsErr.Error()
			}
			c.observe("mount", r.checkoutDir, mountsErr == nil && !mounts[r.checkoutDir], detail)
		}
		if r.containerID != "" && sb != nil {
			gone, err := sb.Gone(ctx, r.containerID)
			detail := "check run"
			if err != nil {
				detail += ": " + err.Error()
			}
			c.observe("container", r.containerID, gone, detail)
		}
		c.t.Budget = append(c.t.Budget, budgetEntries(r)...)
	}
}

// budgetEntries are one run's consumption against each limit it had.
func budgetEntries(r ledgerRun) []evidence.BudgetEntry {
	var out []evidence.BudgetEntry
	add := func(resource string, limit, consumed int64) {
		if limit > 0 {
			out = append(out, evidence.BudgetEntry{CheckID: r.check, Phase: r.phase, Resource: resource,
				Limit: limit, Consumed: consumed, Exceeded: consumed > limit})
		}
	}
	add("wall-time-ms", r.timeout.Milliseconds(), r.duration.Milliseconds())
	add("cpu-ms", r.cpuLimit.Milliseconds(), r.cpu.Milliseconds())
	add("memory-bytes", r.memLimit, r.memPeak)
	add("stdout-bytes", r.maxOutput, r.stdout)
	add("stderr-bytes", r.maxOutput, r.stderr)
	return out
}

// dirs looks again for the run's checkout sessions and probe directories.
func (c *cleanupObserver) dirs(checkoutRoots, tempdirs []string) {
	for _, d := range checkoutRoots {
		_, err := os.Lstat(d)
		c.observe("checkout", d, os.IsNotExist(err), "this run's checkout session: the commits' written trees and what remained of its checkouts")
		c.t.SideEffects = append(c.t.SideEffects, evidence.SideEffect{Kind: "file", Target: d, Detail: "checkout session, removed at the end of the run"})
	}
	for _, d := range tempdirs {
		_, err := os.Lstat(d)
		c.observe("tempdir", d, os.IsNotExist(err), "")
		c.t.SideEffects = append(c.t.SideEffects, evidence.SideEffect{Kind: "file", Target: d, Detail: "sandbox probe directory"})
	}
}

// signTerminal writes terminal-statement.json and, with a key, the signed
// terminal.json.
func signTerminal(run *Run, key *evidence.SigningKey, t evidence.Terminal) error {
	st := evidence.NewTerminalStatement(t)
	payload, err := evidence.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding the terminal statement: %w", err)
	}
	if err := os.WriteFile(filepath.Join(run.Dir, "terminal-statement.json"), payload, 0o644); err != nil {
		return err
	}
	if key == nil {
		return nil
	}
	b, _, err := evidence.Sign(st, key)
	if err != nil {
		return fmt.Errorf("signing the terminal statement: %w", err)
	}
	run.TerminalPath = filepath.Join(run.Dir, "terminal.json")
	return os.WriteFile(run.TerminalPath, b, 0o644)
}

func sortSideEffects(s []evidence.SideEffect) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Kind != s[j].Kind {
			return s[i].Kind < s[j].Kind
		}
		return s[i].Target < s[j].Target
	})
}

// closeAndObserve closes the sandbox and reports what it observed of
// everything it created — each container (check runs, the sandbox probes,
// the shim keeper) and each one's task bundle, its working directories —
// and, when runmill started a private containerd for this run, looks for
// it again: its socket must no longer answer.
func closeAndObserve(sb *sandbox.Sandbox) []evidence.CleanupResource {
	private, addr := sb.Private(), sb.Address()
	rs, err := sb.CloseObserved()
	out := make([]evidence.CleanupResource, 0, len(rs)+1)
	for _, r := range rs {
		out = append(out, evidence.CleanupResource{Kind: r.Kind, ID: r.ID, Gone: r.Gone, Detail: r.Detail})
	}
	if !private {
		return out // a failed removal shows as a resource not gone
	}
	conn, derr := net.DialTimeout("unix", addr, time.Second)
	gone := derr != nil
	if conn != nil {
		conn.Close()
	}
	detail := "private containerd stopped; its socket no longer answers"
	if err != nil {
		detail = "stopping: " + err.Error()
	}
	if !gone {
		detail = "its socket still answers"
	}
	return append(out, evidence.CleanupResource{Kind: "daemon", ID: addr, Gone: gone && err == nil, Detail: detail})
}

// mountPoints is the set of mount points in this process's mount namespace.
func mountPoints() (map[string]bool, error) {
	points, err := mountinfo.Self()
	out := map[string]bool{}
	for _, p := range points {
		out[p] = true
	}
	return out, err
}

// apiCalls folds the GitHub requests of a run into one side effect per
// endpoint, with how often it was called (polling repeats the same two).
func apiCalls(calls []string) []evidence.SideEffect {
	n := map[string]int{}
	var order []string
	for _, c := range calls {
		if n[c] == 0 {
			order = append(order, c)
		}
		n[c]++
	}
	out := make([]evidence.SideEffect, 0, len(order))
	for _, c := range order {
		out = append(out, evidence.SideEffect{Kind: "api-call", Target: c, Detail: fmt.Sprintf("%d request(s)", n[c])})
	}
	return out
}
