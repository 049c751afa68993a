package checkout

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// repoLocalEnv is what `git rev-parse --local-env-vars` prints: variables
// that would point git at another repository, index or object store than
// the one runmill names. They are never passed to runmill's own git.
var repoLocalEnv = []string{
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
	"GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
	"GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
	"GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR",
}

// gitHostEnv is the environment of runmill's own git commands on the host.
func gitHostEnv() []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		for _, local := range repoLocalEnv {
			if name == local {
				continue next
			}
		}
		if strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_") ||
			name == "LC_ALL" || name == "GIT_TERMINAL_PROMPT" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
}

// execCommand runs name in its own process group and kills the whole group
// when ctx ends, so parallel-checkout workers die with their git.
func execCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// gitConfig is the configuration git needs to work read-only inside the
// sandbox, where the checkout and the object directories are bound
// read-only and the check runs as a user that owns none of them.
var gitConfig = [][2]string{
	// The checkout belongs to runmill's user, not the sandbox user.
	{"safe.directory", "*"},
	// Nothing may start a daemon or write an index extension.
	{"core.fsmonitor", "false"},
	{"core.untrackedCache", "false"},
	// No automatic housekeeping: it would try to write.
	{"gc.auto", "0"},
	{"maintenance.auto", "false"},
}

// GitEnv is the environment the sandbox adds for a check so that `git log`,
// `git status`, `git rev-parse HEAD` and the like work in a read-only
// checkout: GIT_OPTIONAL_LOCKS=0 keeps `git status` from refreshing (writing)
// the index, and the GIT_CONFIG_COUNT/KEY/VALUE variables carry gitConfig at
// command-line scope, the scope git honours safe.directory from.
func GitEnv() []string {
	env := []string{"GIT_OPTIONAL_LOCKS=0", "GIT_CONFIG_COUNT=" + strconv.Itoa(len(gitConfig))}
	for i, kv := range gitConfig {
		env = append(env, "GIT_CONFIG_KEY_"+strconv.Itoa(i)+"="+kv[0], "GIT_CONFIG_VALUE_"+strconv.Itoa(i)+"="+kv[1])
	}
	return env
}
