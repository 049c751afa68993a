// Package doctor checks the environment verification needs — containerd,
// the sandbox probe, pytest in the sandbox, prepared dependencies, the
// policies, the state directory, and on request the base's checks — and
// says per check whether it holds and what to fix: the work behind
// `runmill doctor`, apart from its flags and printing.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/rmerr"
)

// Check names: the stable interface of `runmill doctor --check`.
const (
	Containerd   = "containerd"
	Sandbox      = "sandbox"
	Pytest       = "pytest"
	Dependencies = "verification:dependencies"
	Policy       = "policy"
	State        = "state"
	BaseChecks   = "checks"
)

// Default are the checks run when none is named; BaseChecks runs the
// repository's test suites, so it is asked for by name.
var Default = []string{Containerd, Sandbox, Pytest, Dependencies, Policy, State}

// Known are every check's names.
var Known = append(slices.Clone(Default), BaseChecks)

// Options select the checks and name what they look at.
type Options struct {
	Checks            []string // in any order; run in the documented order
	RepoDir, Base     string   // the repository and the revision whose policy governs
	PolicyFile        string   // operator policy; "" for none
	ContainerdAddress string
	// StateDir is the state directory (for a private containerd, the base's
	// checks and the state check); "" uses a temporary directory, removed,
	// and the state check measures the default state directory.
	StateDir string
	// Dependencies answers the verification:dependencies check; nil is
	// internal/deps (Deps).
	Dependencies DependencyChecker
	// Getenv reads RUNMILL_STATE_DIR for the state check's default.
	Getenv func(string) string
}

// Result is one line of the doctor's answer.
type Result struct {
	Name   string     `json:"name"`
	OK     bool       `json:"ok"`
	Detail string     `json:"detail"`
	Code   rmerr.Code `json:"code,omitempty"`
	Fix    string     `json:"fix,omitempty"`
	// Checks are the base's checks as doctor --check checks ran them.
	Checks []engine.CheckDiagnosis `json:"checks,omitempty"`
	// Overrides are the base's checks whose operator definition replaced
	// the repository's, as verify lists them under Overrides:.
	Overrides []discovery.Conflict `json:"overrides,omitempty"`
}

// failed is the result of a check that err failed, its hint as the fix.
func failed(name string, err error) Result {
	r := Result{Name: name, Detail: err.Error(), Code: rmerr.CodeOf(err)}
	var e *rmerr.Error
	if errors.As(err, &e) {
		r.Fix = e.Hint
		// The detail is the error without its hint: the fix has its own field.
		c := *e
		c.Hint = ""
		r.Detail = c.Error()
	}
	if r.Fix == "" {
		r.Fix = "see docs/errors.md for " + string(r.Code)
	}
	return r
}

// Run runs the selected checks in the documented order. containerd is
// connected once, when a selected check needs it.
func Run(ctx context.Context, o Options) []Result {
	if o.Dependencies == nil {
		o.Dependencies = Deps{}
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	want := func(n string) bool { return slices.Contains(o.Checks, n) }
	var out []Result
	// The policies are read first: the sandbox check probes with the
	// operator's host paths, as verification will.
	var pol *engine.Policies
	var polErr error
	if want(Policy) || want(Dependencies) || want(Sandbox) || want(Pytest) {
		pol, polErr = engine.LoadPolicies(ctx, o.RepoDir, o.Base, o.PolicyFile)
	}
	if want(Containerd) || want(Sandbox) || want(Pytest) {
		rs, ok := sandboxChecks(ctx, o, want, pol, polErr)
		if out = append(out, rs...); !ok {
			return out
		}
	}
	if want(Dependencies) {
		out = append(out, checkDependencies(ctx, o.Dependencies, pol, polErr))
	}
	if want(BaseChecks) {
		out = append(out, checkBase(ctx, o))
	}
	if want(Policy) {
		if polErr != nil {
			out = append(out, failed(Policy, polErr))
		} else {
			out = append(out, Result{Name: Policy, OK: true, Detail: describe(pol)})
		}
	}
	if want(State) {
		out = append(out, checkState(engine.StateDir(o.StateDir, o.Getenv), stateSource(o.StateDir, o.Getenv)))
	}
	return out
}

// sandboxChecks connects containerd once and runs the checks that need it.
// ok is false when no state directory could be made: nothing more runs.
func sandboxChecks(ctx context.Context, o Options, want func(string) bool, pol *engine.Policies, polErr error) (out []Result, ok bool) {
	stateDir, cleanup, err := stateDirFor(o.StateDir)
	if err != nil {
		return []Result{failed(Containerd, err)}, false
	}
	defer cleanup()
	sb, err := sandbox.Connect(ctx, sandbox.Options{Address: o.ContainerdAddress, StateDir: stateDir})
	if err == nil {
		defer sb.Close()
	}
	if want(Containerd) {
		out = append(out, checkContainerd(sb, err, o.ContainerdAddress))
	}
	if want(Sandbox) {
		out = append(out, checkProbe(ctx, sb, err, stateDir, pol, polErr))
	}
	if want(Pytest) {
		out = append(out, checkPytest(ctx, sb, err, pol, polErr))
	}
	return out, true
}

// stateSource says where the state directory the state check measures
// came from: the same flag and variable verify reads, so a user whose
// verify runs elsewhere sees that this is not that directory.
func stateSource(flag string, getenv func(string) string) string {
	switch {
	case flag != "":
		return "--out"
	case getenv("RUNMILL_STATE_DIR") != "":
		return "$RUNMILL_STATE_DIR"
	}
	return "the default: no --out, $RUNMILL_STATE_DIR unset; a verify given another --out keeps its state there, pass the same --out here"
}

// stateDirFor returns dir, or without one a temporary directory and the
// function that removes it.
func stateDirFor(dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	d, err := os.MkdirTemp("", "runmill-doctor-")
	if err != nil {
		return "", nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "creating a state directory").WithHint("set TMPDIR to a writable directory, or pass --out")
	}
	return d, func() { os.RemoveAll(d) }, nil
}

func checkContainerd(sb *sandbox.Sandbox, connErr error, address string) Result {
	if connErr != nil {
		return failed(Containerd, connErr)
	}
	how := "system containerd"
	if bin := os.Getenv(sandbox.ContainerdBinEnv); sb.Private() && bin != "" {
		how = fmt.Sprintf("private containerd %s started by runmill ($%s)", bin, sandbox.ContainerdBinEnv)
	} else if sb.Private() {
		how = "private containerd started by runmill (no daemon answered at the system socket)"
	} else if address != "" {
		how = "containerd"
	}
	return Result{Name: Containerd, OK: true, Detail: fmt.Sprintf("%s answers at %s", how, sb.Address())}
}

func checkProbe(ctx context.Context, sb *sandbox.Sandbox, connErr error, stateDir string, pol *engine.Policies, polErr error) Result {
	if connErr != nil {
		r := failed(Sandbox, connErr)
		r.Detail = "cannot run the probe: " + r.Detail
		return r
	}
	if pol == nil && polErr != nil {
		// Probing the defaults would vouch for settings verification will
		// not use.
		r := failed(Sandbox, polErr)
		r.Detail = "cannot probe with the operator's settings: " + r.Detail
		return r
	}
	rep, err := engine.ProbeSandbox(ctx, sb, stateDir, pol.HostPaths())
	if err != nil {
		return failed(Sandbox, err)
	}
	rro := "rro"
	if !rep.Runtime.RecursiveReadOnly {
		rro = "ro (no rro; the mountinfo check held)"
	}
	return Result{Name: Sandbox, OK: true, Detail: fmt.Sprintf("%d guarantees measured, all held (containerd %s, %s, kernel %s, %s)",
		len(rep.Checks), rep.Runtime.Containerd, rep.Runtime.Runc, rep.Runtime.Kernel, rro)}
}
