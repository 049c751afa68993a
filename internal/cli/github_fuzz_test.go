package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzEventPullRequest: the event parser never panics, and a number it
// returns is the event's pull_request.number.
func FuzzEventPullRequest(f *testing.F) {
	for _, p := range []string{"pull_request_event.json", "push_event.json"} {
		if b, err := os.ReadFile(filepath.Join("testdata", "github", p)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"pull_request":null}`))
	f.Add([]byte(`{"pull_request":{"number":1e3}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "event.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := eventPullRequest(p)
		if err != nil || n == 0 {
			return
		}
		var ev struct {
			PullRequest struct {
				Number int64 `json:"number"`
			} `json:"pull_request"`
		}
		if json.Unmarshal(data, &ev) == nil && ev.PullRequest.Number != n {
			t.Fatalf("returned %d, the event says %d", n, ev.PullRequest.Number)
		}
	})
}
