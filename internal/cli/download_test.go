package cli_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/githubtest"
	"github.com/runmill/verify/pkg/evidence"
)

const (
	runsPath = "/repos/acme/widget/actions/runs/12099218311/artifacts"
	zipPath  = "/repos/acme/widget/actions/artifacts/2046398733/zip"
)

// zipDir packs dir under prefix/ the way actions/upload-artifact does
// (forward slashes, directories implied), plus extra raw members.
func zipDir(t *testing.T, dir, prefix string, extra ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		f, err := w.Create(prefix + "/" + filepath.ToSlash(rel))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := os.ReadFile(p)
		f.Write(body)
		return nil
	})
	for i := 0; i+1 < len(extra); i += 2 {
		f, _ := w.Create(extra[i])
		f.Write([]byte(extra[i+1]))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// evidenceArtifact is a run directory as the action uploads it: the signed
// bundle and the content-addressed artifacts beside it.
func evidenceArtifact(t *testing.T) (runDir, trust, expect string) {
	t.Helper()
	dir := t.TempDir()
	key, trust := filepath.Join(dir, "k.pem"), filepath.Join(dir, "trust.json")
	if code, _, e := run(t, "evidence", "keygen", "--key-out", key, "--trust-out", trust); code != 0 {
		t.Fatalf("keygen: %s", e)
	}
	bundle, expect, cas := signedDelivery(t, key, time.Now())
	runDir = filepath.Join(dir, "run")
	os.MkdirAll(runDir, 0o755)
	b, _ := os.ReadFile(bundle)
	os.WriteFile(filepath.Join(runDir, "evidence.json"), b, 0o644)
	if err := os.Rename(cas, filepath.Join(runDir, "artifacts")); err != nil {
		t.Fatal(err)
	}
	return runDir, trust, expect
}

// serveArtifact registers the listing (two pages) and the download of z.
func serveArtifact(f *githubtest.Server, z []byte) {
	f.Expect(runsPath, "per_page=100", 200, "artifacts_page1.json", "Link", `<{base}`+runsPath+`?per_page=100&page=2>; rel="next"`)
	f.Expect(runsPath, "per_page=100&page=2", 200, "artifacts_page2.json")
	f.Expect(zipPath, "", 302, "", "Location", "{base}/blob/2046398733.zip?se=2026-11-30&sig=x")
	f.Add(githubtest.Exchange{Path: "/blob/2046398733.zip", Query: "se=2026-11-30&sig=x", Status: 200, Body: z, NoAuth: true})
}

func githubEnv(t *testing.T, f *githubtest.Server) {
	t.Setenv("GITHUB_TOKEN", githubtest.Token)
	t.Setenv("GITHUB_API_URL", f.URL())
}

func TestEvidenceDownload(t *testing.T) {
	runDir, trust, expect := evidenceArtifact(t)
	z := zipDir(t, runDir, "20261130T061958Z-0a1b2c3d")
	out := filepath.Join(t.TempDir(), "got")
	args := []string{"evidence", "download", "--repo", "acme/widget", "--run-id", "12099218311", "--out", out}

	t.Run("download", func(t *testing.T) {
		f := githubtest.New(t)
		githubEnv(t, f)
		serveArtifact(f, z)
		code, stdout, stderr := run(t, args...)
		if code != 0 || strings.TrimSpace(stdout) != out {
			t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
		}
		got, _ := os.ReadFile(filepath.Join(out, "20261130T061958Z-0a1b2c3d", "evidence.json"))
		want, _ := os.ReadFile(filepath.Join(runDir, "evidence.json"))
		if !bytes.Equal(got, want) {
			t.Fatal("the unpacked bundle differs from the uploaded one")
		}
		if strings.Contains(stderr, githubtest.Token) || strings.Contains(stdout, githubtest.Token) {
			t.Fatal("the token was printed")
		}
		// --out must not exist: a second download never mixes with the first.
		if code, _, stderr := run(t, args...); code != 2 || !strings.Contains(stderr, "already exists") {
			t.Fatalf("second download into the same --out: exit %d %s", code, stderr)
		}
	})

	t.Run("verify", func(t *testing.T) {
		f := githubtest.New(t)
		githubEnv(t, f)
		serveArtifact(f, z)
		out := filepath.Join(t.TempDir(), "v")
		code, stdout, stderr := run(t, "evidence", "download", "--repo", "acme/widget", "--run-id", "12099218311", "--out", out,
			"--verify", "--trust", trust, "--expectations", expect, "--artifacts")
		var res evidence.Result
		if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || !res.Valid || res.Artifacts == nil {
			t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
		}
		if !strings.Contains(stderr, out) {
			t.Fatalf("the directory is not on stderr: %q", stderr)
		}
	})

	t.Run("tampered artifact body fails verification", func(t *testing.T) {
		bad := t.TempDir()
		os.CopyFS(bad, os.DirFS(runDir))
		filepath.WalkDir(filepath.Join(bad, "artifacts"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if b, _ := os.ReadFile(p); len(b) > 0 {
					b[0] ^= 1
					os.WriteFile(p, b, 0o644)
				}
			}
			return err
		})
		f := githubtest.New(t)
		githubEnv(t, f)
		serveArtifact(f, zipDir(t, bad, "run"))
		code, stdout, _ := run(t, "evidence", "download", "--repo", "acme/widget", "--run-id", "12099218311", "--out", filepath.Join(t.TempDir(), "v"),
			"--verify", "--trust", trust, "--expectations", expect, "--artifacts")
		var res evidence.Result
		if code != 1 || json.Unmarshal([]byte(stdout), &res) != nil || res.Valid || res.Reason != evidence.ReasonArtifact {
			t.Fatalf("exit %d stdout %s; want exit 1 reason %s", code, stdout, evidence.ReasonArtifact)
		}
	})

	t.Run("path traversal is refused whole", func(t *testing.T) {
		f := githubtest.New(t)
		githubEnv(t, f)
		serveArtifact(f, zipDir(t, runDir, "run", "../../escape.txt", "pwned"))
		parent := t.TempDir()
		out := filepath.Join(parent, "sub", "v")
		os.MkdirAll(filepath.Dir(out), 0o755)
		code, _, stderr := run(t, "evidence", "download", "--repo", "acme/widget", "--run-id", "12099218311", "--out", out)
		if code != 1 || !strings.Contains(stderr, "RM-GITHUB-004") {
			t.Fatalf("exit %d stderr %s; want 1 and RM-GITHUB-004", code, stderr)
		}
		if _, err := os.Lstat(filepath.Join(parent, "escape.txt")); !os.IsNotExist(err) {
			t.Fatal("a member escaped")
		}
		if _, err := os.Lstat(out); !os.IsNotExist(err) {
			t.Fatal("a half-unpacked directory was left")
		}
		left, _ := os.ReadDir(filepath.Dir(out))
		if len(left) != 0 {
			t.Fatalf("left behind: %v", left)
		}
	})

	t.Run("no artifact of that name", func(t *testing.T) {
		f := githubtest.New(t)
		githubEnv(t, f)
		f.Expect(runsPath, "per_page=100", 200, "artifacts_page1.json", "Link", `<{base}`+runsPath+`?per_page=100&page=2>; rel="next"`)
		f.Expect(runsPath, "per_page=100&page=2", 200, "artifacts_page2.json")
		code, _, stderr := run(t, "evidence", "download", "--repo", "acme/widget", "--run-id", "12099218311", "--name", "other", "--out", filepath.Join(t.TempDir(), "v"))
		if code != 1 || !strings.Contains(stderr, "RM-GITHUB-004") {
			t.Fatalf("exit %d stderr %s", code, stderr)
		}
	})

	t.Run("no token makes no call", func(t *testing.T) {
		f := githubtest.New(t)
		t.Setenv("GITHUB_TOKEN", "")
		t.Setenv("GITHUB_API_URL", f.URL())
		code, _, stderr := run(t, args...)
		if code != 2 || !strings.Contains(stderr, "needs a GitHub token") || f.Requests() != 0 {
			t.Fatalf("exit %d stderr %s, %d requests", code, stderr, f.Requests())
		}
	})
}
