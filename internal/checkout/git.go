package checkout

import "strconv"

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
