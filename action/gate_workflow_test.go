package action_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestOwnGateRunsTheBaseAction (issue 27 item 4): runmill's own gate never
// runs the pull request's copy of the action. Every local action a workflow
// uses is a directory checked out at the pull request's base commit, after
// the pull request's checkout (which would otherwise overwrite it), and
// the signing key is handed to that step alone: no other step, job or
// workflow env names a secret, so nothing but the base's action sees it.
func TestOwnGateRunsTheBaseAction(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(actionRoot(t), ".github", "workflows", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflows: %v", err)
	}
	type step struct {
		Uses string            `yaml:"uses"`
		Run  string            `yaml:"run"`
		With map[string]string `yaml:"with"`
		Env  map[string]string `yaml:"env"`
	}
	var gates int
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var wf struct {
			Env  map[string]string `yaml:"env"`
			Jobs map[string]struct {
				Env   map[string]string `yaml:"env"`
				Steps []step            `yaml:"steps"`
			} `yaml:"jobs"`
		}
		if err := yaml.Unmarshal(b, &wf); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		name := filepath.Base(file)
		noSecret := func(where string, env map[string]string) {
			for k, v := range env {
				if strings.Contains(v, "secrets.") {
					t.Errorf("%s: %s env %s names a secret (%s): only the base's action may see the key", name, where, k, v)
				}
			}
		}
		noSecret("the workflow's", wf.Env)
		for jobName, j := range wf.Jobs {
			noSecret("job "+jobName+"'s", j.Env)
			baseAt := map[string]int{} // checkout path → step index, for checkouts of the base commit
			lastPR := -1               // the last checkout of the pull request (its default ref)
			for i, s := range j.Steps {
				noSecret("a step's", s.Env)
				if strings.Contains(s.Run, "secrets.") {
					t.Errorf("%s: job %s step %d's run names a secret", name, jobName, i)
				}
				if strings.HasPrefix(s.Uses, "actions/checkout@") {
					if s.With["ref"] == "${{ github.event.pull_request.base.sha }}" && s.With["path"] != "" {
						baseAt[filepath.Clean(s.With["path"])] = i
					} else {
						lastPR = i
					}
				}
				local := strings.HasPrefix(s.Uses, "./")
				for k, v := range s.With {
					if strings.Contains(v, "secrets.") && !local {
						t.Errorf("%s: job %s step %d (%s) is handed %s=%s: only the base's action may see the key", name, jobName, i, s.Uses, k, v)
					}
				}
				if !local {
					continue
				}
				gates++
				at, ok := baseAt[filepath.Clean(s.Uses)]
				switch {
				case !ok:
					t.Errorf("%s: job %s uses %s, which is not a checkout of the base commit: the pull request would run its own action", name, jobName, s.Uses)
				case at < lastPR:
					t.Errorf("%s: job %s checks the base's action out (step %d) before the pull request (step %d), which overwrites it", name, jobName, at, lastPR)
				}
			}
		}
	}
	if gates == 0 {
		t.Error("no workflow runs runmill's own action on its pull requests")
	}
}
