package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runmill/verify/pkg/rmerr"
)

// GoCachePath is where a task sees its GOCACHE when Spec.GoCacheLayers
// joins several prepared build caches into one. Like CheckoutPath it lies
// under /runmill, which no image or host path has, and apart from the
// checkout's own path.
const GoCachePath = "/runmill/gocache"

// UnionsGoCaches reports whether tasks can be given several Go build caches
// as one GOCACHE (Spec.GoCacheLayers): the kernel has overlayfs. A caller
// without it offers one cache only.
func (s *Sandbox) UnionsGoCaches() bool { return overlaySupported() }

// overlaySupported: overlayfs is registered, or is a module the kernel
// loads on the first mount (runc mounts as root, so the request loads it).
var overlaySupported = sync.OnceValue(func() bool {
	if b, err := os.ReadFile("/proc/filesystems"); err == nil && bytes.Contains(b, []byte("\toverlay\n")) {
		return true
	}
	rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return false
	}
	dir := filepath.Join("/lib/modules", strings.TrimSpace(string(rel)), "kernel/fs/overlayfs")
	for _, ext := range []string{"", ".xz", ".zst", ".gz"} {
		if _, err := os.Stat(filepath.Join(dir, "overlay.ko"+ext)); err == nil {
			return true
		}
	}
	return false
})

// checkGoCacheLayers validates GoCacheLayers: each is a directory outside
// the checkout that overlayfs can name in its lowerdir option (which splits
// on ':' and ',' and treats '\' as an escape), distinct from GoCache.
func (p *plan) checkGoCacheLayers() rmerr.List {
	var errs rmerr.List
	bad := func(field, format string, args ...any) {
		errs = append(errs, rmerr.New(rmerr.SandboxSpec, format, args...).InField(field))
	}
	if p.GoCache == "" {
		bad("go_cache_layers", "go build cache layers need GoCache, the first layer")
		return errs
	}
	seen := map[string]bool{}
	for i, l := range append([]string{p.GoCache}, p.GoCacheLayers...) {
		field := "go_cache"
		if i > 0 {
			field = fmt.Sprintf("go_cache_layers[%d]", i-1)
		}
		switch fi, err := os.Stat(l); {
		case checkBindPath(l) != nil:
			bad(field, "%v", checkBindPath(l))
		case strings.ContainsAny(l, ":,\\"):
			bad(field, "go build cache %s contains ':', ',' or '\\', which overlayfs cannot name as a layer", l)
		case p.inCheckout(l):
			bad(field, "go build cache %s lies in the checkout; a layered GOCACHE must come from outside it", l)
		case seen[l]:
			bad(field, "go build cache %s is listed twice", l)
		case err != nil:
			bad(field, "go build cache: %v", err)
		case !fi.IsDir():
			bad(field, "go build cache %s is not a directory", l)
		}
		seen[l] = true
	}
	return errs
}

// goCacheInTask is the GOCACHE the task sees ("" for its private one).
func (sp Spec) goCacheInTask() string {
	if len(sp.GoCacheLayers) > 0 {
		return GoCachePath
	}
	return sp.InTask(sp.GoCache)
}

// goCacheMount joins GoCache and GoCacheLayers at GoCachePath: a read-only
// overlay with lower layers only (no upper directory, so nothing can be
// written), GoCache's entries first. runc mounts it inside the task's mount
// namespace before pivot_root, so the host paths resolve as binds do and
// nothing is mounted on the host, whatever the checkout mode.
func (p *plan) goCacheMount() (specs.Mount, bool) {
	if len(p.GoCacheLayers) == 0 {
		return specs.Mount{}, false
	}
	lower := strings.Join(append([]string{p.GoCache}, p.GoCacheLayers...), ":")
	return specs.Mount{Destination: GoCachePath, Type: "overlay", Source: "overlay",
		Options: []string{"ro", "nosuid", "nodev", "lowerdir=" + lower}}, true
}
