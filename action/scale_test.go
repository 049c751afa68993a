package action_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/testreq"

	"gopkg.in/yaml.v3"
)

// TestShardedWorkflowDoc lints the sharded workflow docs/scale.md documents
// with actionlint, and holds it to the contract the merge relies on: the
// merge job needs the matrix, runs always, and merges what it downloaded.
func TestShardedWorkflowDoc(t *testing.T) {
	wf := shardedWorkflowDoc(t)
	var parsed struct {
		Jobs map[string]struct {
			Needs    any    `yaml:"needs"`
			If       string `yaml:"if"`
			Strategy struct {
				FailFast *bool `yaml:"fail-fast"`
			} `yaml:"strategy"`
			Steps []struct {
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(wf, &parsed); err != nil {
		t.Fatal(err)
	}
	shard, merge := parsed.Jobs["shard"], parsed.Jobs["verify"]
	if merge.Needs != "shard" || merge.If != "always()" {
		t.Errorf("the merge job needs %v if %q; want needs: shard, if: always()", merge.Needs, merge.If)
	}
	if shard.Strategy.FailFast == nil || *shard.Strategy.FailFast {
		t.Error("the matrix must set fail-fast: false")
	}
	var sharded, merged bool
	for _, s := range shard.Steps {
		if strings.HasPrefix(s.Uses, "runmill/verify@") && s.With["shard"] != "" && s.With["merge-job"] == "verify" {
			sharded = true
		}
	}
	for _, s := range merge.Steps {
		if strings.HasPrefix(s.Uses, "runmill/verify@") && s.With["merge"] == "true" && s.With["shard-results"] == "${{ needs.shard.result }}" {
			merged = true
		}
	}
	if !sharded || !merged {
		t.Errorf("shard step %v, merge step %v", sharded, merged)
	}

	bin := os.Getenv("RUNMILL_ACTIONLINT")
	testreq.Need(t, bin != "", "RUNMILL_ACTIONLINT is not set (scripts/test.sh builds actionlint and sets it)")
	dir := filepath.Join(t.TempDir(), ".github", "workflows")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "sharded.yml")
	if err := os.WriteFile(file, wf, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-color=false", file)
	cmd.Dir = filepath.Dir(filepath.Dir(dir))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("actionlint on docs/scale.md's workflow: %v\n%s", err, out)
	}
}

// shardedWorkflowDoc is the sharded workflow docs/scale.md documents.
func shardedWorkflowDoc(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(actionRoot(t), "docs", "scale.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- workflow: sharded[^>]*-->\n```yaml\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/scale.md has no sharded workflow block")
	}
	return m[1]
}
