package sandbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/internal/sandbox/sandboxtest"
)

// TestPruneImages: an imported image whose last use is older than the bound
// is deleted (and the next check that names it imports it again); one used
// recently stays, and so does one a container still names, however old.
func TestPruneImages(t *testing.T) {
	s := needSandbox(t)
	image := sandboxtest.MinimalImage(t)
	ctx := context.Background()
	spec := func() sandbox.Spec {
		dir := checkout(t)
		return sandbox.Spec{Image: image, Dir: dir, ReadOnly: []string{dir}, Command: "cat /usr/share/runmill-image-marker.txt"}
	}
	ranFrom := func(t *testing.T) {
		t.Helper()
		res := run(t, spec())
		if !strings.Contains(string(res.Stdout.Kept), "runmill test image") {
			t.Fatalf("the task did not run from the image: %q %q", res.Stdout.Kept, res.Stderr.Kept)
		}
		if gone, err := s.Gone(ctx, res.ID); !gone || err != nil {
			t.Fatalf("container %s not gone: %v", res.ID, err)
		}
	}
	imported := func(t *testing.T) bool {
		t.Helper()
		ok, err := s.ImageImported(ctx, image)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	const bound = 14 * 24 * time.Hour
	later := time.Now().Add(bound + 24*time.Hour)
	ranFrom(t)

	if pruned, err := s.PruneImages(ctx, bound, time.Now()); err != nil || len(pruned) != 0 || !imported(t) {
		t.Fatalf("an image used just now: pruned %v (%v)", pruned, err)
	}
	task, err := s.Prepare(ctx, spec())
	if err != nil {
		t.Fatal(err)
	}
	pruned, err := s.PruneImages(ctx, bound, later)
	if derr := task.Discard(); derr != nil {
		t.Fatal(derr)
	}
	if err != nil || len(pruned) != 0 || !imported(t) {
		t.Fatalf("an image a container uses: pruned %v (%v)", pruned, err)
	}
	pruned, err = s.PruneImages(ctx, bound, later)
	if err != nil || len(pruned) != 1 || !strings.HasPrefix(pruned[0].Name, "import.runmill.dev/image:sha256-") || imported(t) {
		t.Fatalf("an image unused for longer than the bound: pruned %v (%v), still imported %v", pruned, err, imported(t))
	}
	if time.Since(pruned[0].LastUse) > time.Hour {
		t.Errorf("its last use %v is not the run's", pruned[0].LastUse)
	}
	ranFrom(t) // imported again
	if !imported(t) {
		t.Error("the next use did not import the image again")
	}
}
