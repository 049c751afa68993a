package action_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

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

	lintWorkflow(t, actionlintBin(t), "docs/scale.md's workflow", wf)
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
