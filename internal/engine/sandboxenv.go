package engine

import (
	"os"
	"slices"
	"strings"

	"github.com/runmill/verify/internal/checkout"
	"github.com/runmill/verify/internal/sandbox"
)

// withEnv returns env with each of add replacing the entry of its name.
func withEnv(env, add []string) []string {
	out := slices.Clone(env)
	for _, kv := range add {
		k, _, _ := strings.Cut(kv, "=")
		out = slices.DeleteFunc(out, func(x string) bool { return strings.HasPrefix(x, k+"=") })
		out = append(out, kv)
	}
	return out
}

// baseEnv is the allow-listed environment every check gets. Nothing is
// inherited from runmill's own environment: no token, no signing key, no
// GITHUB_* value ever enters a sandbox.
// hostPaths are the operator's sandbox.host_paths (empty: the defaults):
// PATH keeps the host's entries under them, so a toolchain the operator
// binds (say /opt/node) is found without runmill guessing where it lives.
func baseEnv(hostPaths []string) []string {
	env := []string{"PATH=" + sandbox.SearchPath(os.Getenv("PATH"), hostPaths), "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "TZ=UTC", "CI=true", "RUNMILL=1", "GOTOOLCHAIN=local", "GOFLAGS=-mod=readonly", "GOPROXY=off", "npm_config_offline=true"}
	return append(env, checkout.GitEnv()...)
}

// jobHostPaths are the host paths a check's sandbox binds: the operator's
// sandbox.host_paths (empty: the defaults) and, on a GitHub runner, the
// tool-cache installs the job's PATH reaches (sandbox.RunnerToolPaths), so
// setup-go's, setup-node's or the image's own toolchain is there without a
// host_paths entry. Read-only like every host path; nothing else of the
// tool cache.
func jobHostPaths(hostPaths []string) []string {
	return sandbox.WithRunnerTools(hostPaths, os.Getenv("PATH"), os.Getenv("RUNNER_TOOL_CACHE"))
}
