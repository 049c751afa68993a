package engine

import (
	"context"
	"time"

	"github.com/runmill/verify/internal/sandbox"
)

// toolProbeTimeout bounds a toolchain probe: it starts an interpreter and
// imports a package, well under a minute.
const toolProbeTimeout = time.Minute

// ProbeTool runs command in the sandbox the way a check's command runs on
// the host toolchain with the operator's host paths (same environment,
// binds, user and limits; no checkout, no report). doctor uses it to prove
// what a check will need (`python3 -m pytest`) before any check needs it.
func ProbeTool(ctx context.Context, sb *sandbox.Sandbox, hostPaths []string, command string) (sandbox.Result, error) {
	return sb.Run(ctx, sandbox.Spec{Command: command, Env: baseEnv(hostPaths), HostPaths: hostPaths, Timeout: toolProbeTimeout})
}
