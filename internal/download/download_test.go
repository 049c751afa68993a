package download_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/runmill/verify/internal/download"
	"github.com/runmill/verify/pkg/rmerr"
)

// TestFindOne: exactly one evidence.json is found wherever the archive put
// it; none, or two (a choice the archive would make for the verifier), is
// refused. Download and unpacking run end to end in internal/cli's
// TestEvidenceDownload against a recorded GitHub API.
func TestFindOne(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"at the top", []string{"evidence.json", "artifacts/sha256/ab"}, "evidence.json"},
		{"one level down", []string{"run/evidence.json", "run/statement.json"}, "run/evidence.json"},
		{"none", []string{"statement.json"}, ""},
		{"two", []string{"a/evidence.json", "b/evidence.json"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(dir, f)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := download.FindOne(dir, "evidence.json")
			if tc.want == "" {
				if rmerr.CodeOf(err) != rmerr.GitHubArtifact {
					t.Fatalf("found %q, err %v; want a GitHubArtifact refusal", got, err)
				}
				return
			}
			if err != nil || got != filepath.Join(dir, tc.want) {
				t.Fatalf("found %q, %v; want %s", got, err, tc.want)
			}
		})
	}
}
