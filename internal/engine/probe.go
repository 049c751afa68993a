package engine

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/discovery"
)

// probe runs the canary with the settings every check gets — the host
// toolchain root, and each image some check runs in — and opens the gate;
// when a guarantee is missing anywhere the gate opens with the error, and no
// check runs (no weaker fallback).
func (e *executor) probe(ctx context.Context, stateDir string, hostPaths, images []string) (sandbox.ProbeReport, error) {
	created := func(dir string) {
		if e.ledger != nil {
			e.ledger.addTempdir(dir)
		}
	}
	rep, err := probeSandbox(ctx, e.sb, stateDir, hostPaths, "", created)
	for _, img := range images {
		if err != nil {
			break
		}
		var r sandbox.ProbeReport
		r, err = probeSandbox(ctx, e.sb, stateDir, hostPaths, img, created)
		if err != nil {
			err = fmt.Errorf("probing image %s: %w", img, err)
		}
		rep.Images = append(rep.Images, r)
	}
	e.gateErr = err
	close(e.gate) // publishes gateErr to the checks waiting on the gate
	return rep, err
}

// imagesOf lists the distinct images the manifest's runnable checks use.
func imagesOf(m *discovery.Manifest) []string {
	var out []string
	for _, c := range m.Checks {
		if c.Runnable() && c.Image != "" && !slices.Contains(out, c.Image) {
			out = append(out, c.Image)
		}
	}
	slices.Sort(out)
	return out
}

// ProbeSandbox runs the canary exactly as Verify does before any check:
// same environment, same host paths, a read-only directory standing for
// the checkout. `runmill doctor --check sandbox` uses it, so the doctor
// vouches for what verification will actually get.
func ProbeSandbox(ctx context.Context, sb *sandbox.Sandbox, stateDir string, hostPaths []string) (sandbox.ProbeReport, error) {
	return probeSandbox(ctx, sb, stateDir, hostPaths, "", nil)
}

// probeSandbox probes one root: the host toolchain (image "") or an image.
func probeSandbox(ctx context.Context, sb runner, stateDir string, hostPaths []string, image string, created func(string)) (sandbox.ProbeReport, error) {
	dir, err := os.MkdirTemp(stateDir, "probe-")
	if err != nil {
		return sandbox.ProbeReport{}, err
	}
	if created != nil {
		created(dir)
	}
	defer os.RemoveAll(dir)
	return sb.Probe(ctx, sandbox.Spec{ReadOnly: []string{dir}, Env: baseEnv(hostPaths), HostPaths: hostPaths, Image: image})
}
