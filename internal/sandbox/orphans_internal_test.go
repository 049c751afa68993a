package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/runmill/verify/internal/testreq"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runmill/verify/internal/fsname"
	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/internal/procfs"
)

// TestRemoveRemains: what of a reaped task containerd did not remove
// itself — its root still mounted in its bundle, its cgroup in every
// hierarchy, runc's state under the root its options name, the bundle and
// containerd's work directory — is removed, each listed, with real mounts
// and cgroups (as root); the shared cgroup parent stays.
func TestRemoveRemains(t *testing.T) {
	testreq.Root(t, "mounts and cgroups")
	roots, err := mountinfo.CgroupRoots()
	testreq.Need(t, err == nil && len(roots) > 0, "no cgroup hierarchy: %v", err)
	s := &Sandbox{namespace: DefaultNamespace}
	id := "rm-remains-" + fsname.Random(4)
	dir := t.TempDir()
	bundle := filepath.Join(dir, "state", DefaultNamespace, id)
	work := filepath.Join(dir, "root", DefaultNamespace, id)
	runc := filepath.Join(dir, "runc")
	for _, d := range []string{filepath.Join(bundle, "rootfs"), work, filepath.Join(runc, DefaultNamespace, id)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(runc, DefaultNamespace, id, "state.json"), []byte("{}"), 0o600)
	os.WriteFile(filepath.Join(bundle, "options.json"), []byte(`{"root":"`+runc+`"}`), 0o600)
	os.Symlink(work, filepath.Join(bundle, "work"))
	if err := syscall.Mount("tmpfs", filepath.Join(bundle, "rootfs"), "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mountinfo.UnmountUnder(bundle) })
	os.Mkdir(filepath.Join(bundle, "rootfs", "etc"), 0o755) // runc's mount points
	cgroup := "/" + DefaultNamespace + "/" + id
	var made []string
	for _, r := range roots {
		d := filepath.Join(r, cgroup)
		if err := os.MkdirAll(d, 0o755); err == nil {
			made = append(made, d)
			t.Cleanup(func() { os.Remove(d) })
		}
	}
	testreq.Need(t, len(made) > 0, "no cgroup could be made under %q", roots)

	removed, errs := s.removeRemains(leftover{id: id, bundle: bundle, cgroup: cgroup}, roots)
	if len(errs) > 0 {
		t.Fatalf("errors: %v (removed %q)", errs, removed)
	}
	want := []string{"mount " + filepath.Join(bundle, "rootfs"), "runc state " + filepath.Join(runc, DefaultNamespace, id),
		"task bundle " + bundle, "orphaned task " + id}
	for _, d := range made {
		want = append(want, "cgroup "+d)
	}
	for _, w := range want {
		if !slices.Contains(removed, w) {
			t.Errorf("removed %q does not list %q", removed, w)
		}
	}
	for _, p := range append([]string{bundle, work, filepath.Join(runc, DefaultNamespace, id)}, made...) {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s remains", p)
		}
	}
	if points, _ := mountinfo.Under(dir); len(points) > 0 {
		t.Errorf("still mounted: %q", points)
	}
	for _, d := range made {
		if _, err := os.Stat(filepath.Dir(d)); err != nil && strings.HasSuffix(filepath.Dir(d), "/"+DefaultNamespace) {
			t.Errorf("the shared parent %s went too: %v", filepath.Dir(d), err)
		}
	}
}

// TestSpecOwner: a spec names its runmill and whether it was made for this
// state directory — by its annotations, or, made before them, by the
// generated /etc files it binds from this state directory's per-owner
// directory; another state directory's, or no runmill's, is not here.
func TestSpecOwner(t *testing.T) {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	s := &Sandbox{workDir: "/state/sandbox/sandbox", owner: ns + "/1/1"}
	etc := func(dir string) []specs.Mount {
		return []specs.Mount{{Source: "/usr", Destination: "/usr"}, {Source: dir + "/65534-65534/passwd", Destination: "/etc/passwd"}}
	}
	for name, tc := range map[string]struct {
		spec  specs.Spec
		owner string
		here  bool
	}{
		"annotated here": {specs.Spec{Annotations: map[string]string{labelOwner: ns + "/42/777", annotationState: s.workDir}}, ns + "/42/777", true},
		"annotated elsewhere": {specs.Spec{Annotations: map[string]string{labelOwner: ns + "/42/777", annotationState: "/other/sandbox/sandbox"},
			Mounts: etc("/state/sandbox/sandbox/etc/42-777")}, ns + "/42/777", false},
		"before the annotations":      {specs.Spec{Mounts: etc("/state/sandbox/sandbox/etc/42-777")}, ns + "/42/777", true},
		"another state dir's, before": {specs.Spec{Mounts: etc("/other/sandbox/sandbox/etc/42-777")}, "", false},
		"no runmill's":                {specs.Spec{Annotations: map[string]string{"io.containerd.runc.v2.group": "x"}}, "", false},
	} {
		t.Run(name, func(t *testing.T) {
			if owner, here := s.specOwner(&tc.spec); owner != tc.owner || here != tc.here {
				t.Errorf("specOwner = %q, %v; want %q, %v", owner, here, tc.owner, tc.here)
			}
		})
	}
}

// TestIsShim: a serving shim is one; containerd's own brief runs of the
// shim binary with an action (`start`, `delete` — the clean-up after a lost
// shim, seen by a sweep racing it) are not, nor another namespace's shim,
// a zombie or another program. The arguments are those containerd 1.6 and
// 2.x pass.
func TestIsShim(t *testing.T) {
	shim := func(args ...string) proc {
		return proc{procfs.Process{PID: 7, State: 'S', Args: append([]string{"/usr/bin/containerd-shim-runc-v2"}, args...)}}
	}
	zombie := shim("-namespace", "runmill", "-id", "rm-1", "-address", "/run/c.sock")
	zombie.State = 'Z'
	for _, c := range []struct {
		name string
		p    proc
		want bool
	}{
		{"serving", shim("-namespace", "runmill", "-id", "rm-1", "-address", "/run/c.sock"), true},
		{"serving, = form", shim("-namespace=runmill", "-id=rm-1"), true},
		{"containerd's delete", shim("-namespace", "runmill", "-address", "/run/c.sock", "-publish-binary", "/usr/bin/containerd", "-id", "rm-1", "-bundle", "/state/runmill/rm-1", "delete"), false},
		{"containerd's start", shim("-namespace", "runmill", "-id", "rm-1", "-address", "/run/c.sock", "start"), false},
		{"another namespace", shim("-namespace", "moby", "-id", "rm-1"), false},
		{"a zombie", zombie, false},
		{"another program", proc{procfs.Process{PID: 8, State: 'S', Args: []string{"/usr/sbin/runc", "-namespace", "runmill"}}}, false},
	} {
		if got := c.p.isShim("runmill"); got != c.want {
			t.Errorf("%s: isShim = %v, want %v", c.name, got, c.want)
		}
	}
}
