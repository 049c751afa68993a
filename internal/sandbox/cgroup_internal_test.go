package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/pkg/rmerr"
)

// TestPlaceRun: where a run's parent cgroup goes and what is written for
// it, decided over a cgroup tree laid out as files in a temp dir (the
// kernel's refusals are the decision's to foresee: the fake accepts every
// write). Real hierarchies: TestTasksInOwnCgroups.
func TestPlaceRun(t *testing.T) {
	const (
		self     = 100
		child    = 101 // a process this one started
		stranger = 200
		owner    = "pid:[4026531836]/100/555"
		instance = "abcdef12"
		runName  = runCgroupPrefix + "4026531836-100-555-" + instance
		selfName = selfCgroupPrefix + "4026531836-100-555"
	)
	// files are relative to the fake /sys/fs/cgroup: "cpu/…" and so on on
	// v1, the hierarchy itself on v2.
	type files map[string]string
	v1 := func(root string) []mountinfo.CgroupMount {
		var ms []mountinfo.CgroupMount
		for _, c := range []string{"cpu", "memory", "pids", "cpuset"} {
			ms = append(ms, mountinfo.CgroupMount{Mountpoint: filepath.Join(root, c), Root: "/", Controllers: []string{c}})
		}
		return ms
	}
	v2 := func(root string) []mountinfo.CgroupMount {
		return []mountinfo.CgroupMount{{Mountpoint: root, Root: "/", V2: true}}
	}
	all := "cpu io memory pids"
	tests := []struct {
		name   string
		v2     bool
		mounts func(root string) []mountinfo.CgroupMount
		self   map[string]string
		files  files
		// want: files that must then hold these contents ("" = exists);
		// wantPath the run parent's cgroup path; wantErr a substring of
		// the RM-SANDBOX-001 refusal.
		want     files
		absent   []string
		wantPath string
		wantMove string
		wantErr  string
	}{
		{
			name: "v1 at the root", mounts: v1, self: map[string]string{"cpu": "/", "memory": "/job/1", "pids": "/"},
			want:     files{"cpu/" + runName + "/cpu.shares": "2048", "memory/" + runName: "", "pids/" + runName: ""},
			absent:   []string{"cpuset/" + runName}, // runc makes it, copying cpuset.cpus and mems
			wantPath: "/" + runName,
		},
		{
			name: "v1 beside runmill's cpu cgroup", mounts: v1, self: map[string]string{"cpu": "/job/runner", "memory": "/job/runner", "pids": "/job/runner"},
			files:    files{"cpu/job/runner/": "", "memory/job/runner/": "", "pids/job/runner/": ""},
			want:     files{"cpu/job/" + runName + "/cpu.shares": "2048", "memory/job/" + runName: "", "pids/job/" + runName: ""},
			wantPath: "/job/" + runName,
		},
		{
			name: "v1 without a pids hierarchy", self: map[string]string{"cpu": "/"},
			mounts: func(root string) []mountinfo.CgroupMount {
				return slices.DeleteFunc(v1(root), func(m mountinfo.CgroupMount) bool { return m.Controllers[0] == "pids" })
			},
			wantErr: "no cgroup v1 hierarchy with the pids controller",
		},
		{
			// A container's bind of its own subtree, without a cgroup
			// namespace (docker --privileged on a v1 host): beside it is
			// outside what the mount shows, so the parent goes under it.
			name: "v1 subtree bound", self: map[string]string{"cpu": "/docker/c1", "memory": "/docker/c1", "pids": "/docker/c1"},
			mounts: func(root string) []mountinfo.CgroupMount {
				ms := v1(root)
				for i := range ms {
					ms[i].Root = "/docker/c1"
				}
				return ms
			},
			want:     files{"cpu/" + runName + "/cpu.shares": "2048", "memory/" + runName: "", "pids/" + runName: ""},
			wantPath: "/docker/c1/" + runName,
		},
		{
			// Not even runmill's own cgroup is in the mount.
			name: "v1 own cgroup not mounted", self: map[string]string{"cpu": "/elsewhere", "memory": "/elsewhere", "pids": "/elsewhere"},
			mounts: func(root string) []mountinfo.CgroupMount {
				ms := v1(root)
				for i := range ms {
					ms[i].Root = "/docker/c1"
				}
				return ms
			},
			wantErr: "lies outside the cpu hierarchy",
		},
		{
			name: "v2 beside runmill's cgroup, controllers given", v2: true, mounts: v2, self: map[string]string{"": "/system.slice/runner.service"},
			files: files{"system.slice/cgroup.controllers": all, "system.slice/cgroup.subtree_control": "cpu io memory pids", "system.slice/cgroup.type": "domain",
				"system.slice/runner.service/cgroup.procs": "100\n"},
			want:     files{"system.slice/" + runName + "/cpu.weight": "200", "system.slice/" + runName + "/cgroup.subtree_control": "+cpu +memory +pids", "system.slice/cgroup.subtree_control": "cpu io memory pids"},
			wantPath: "/system.slice/" + runName,
		},
		{
			name: "v2 controllers enabled in the empty parent", v2: true, mounts: v2, self: map[string]string{"": "/job/runmill"},
			files:    files{"job/cgroup.controllers": all, "job/cgroup.subtree_control": "io", "job/cgroup.type": "domain", "job/cgroup.procs": ""},
			want:     files{"job/cgroup.subtree_control": "+cpu +memory +pids", "job/" + runName + "/cpu.weight": "200"},
			wantPath: "/job/" + runName,
		},
		{
			name: "v2 parent lacks a controller", v2: true, mounts: v2, self: map[string]string{"": "/job/runmill"},
			files:   files{"job/cgroup.controllers": "cpu memory", "job/cgroup.subtree_control": "", "job/cgroup.type": "domain"},
			wantErr: "does not offer the pids controller",
		},
		{
			// No internal processes: the parent holds processes of its own
			// beside runmill's cgroup, which are not runmill's to move.
			name: "v2 parent holds processes", v2: true, mounts: v2, self: map[string]string{"": "/job/runmill"},
			files:   files{"job/cgroup.controllers": all, "job/cgroup.subtree_control": "", "job/cgroup.type": "domain", "job/cgroup.procs": "300\n"},
			wantErr: "holds processes [300]",
		},
		{
			// runmill at the root of its cgroup namespace (a container):
			// it and its child move to a leaf of their own, then the
			// controllers go to the children.
			name: "v2 own cgroup, only runmill's processes", v2: true, mounts: v2, self: map[string]string{"": "/"},
			files:    files{"cgroup.controllers": all, "cgroup.subtree_control": "", "cgroup.type": "domain", "cgroup.procs": "100\n101\n"},
			want:     files{selfName + "/cgroup.procs": "101", "cgroup.subtree_control": "+cpu +memory +pids", runName + "/cpu.weight": "200"},
			wantPath: "/" + runName, wantMove: "/" + selfName,
		},
		{
			// The same where the mount is a bind of runmill's own subtree
			// (no cgroup namespace): the parent goes under it, and
			// runmill moves out of the way.
			name: "v2 subtree bound, only runmill's processes", v2: true, self: map[string]string{"": "/docker/c1"},
			mounts: func(root string) []mountinfo.CgroupMount {
				return []mountinfo.CgroupMount{{Mountpoint: root, Root: "/docker/c1", V2: true}}
			},
			files:    files{"cgroup.controllers": all, "cgroup.subtree_control": "", "cgroup.type": "domain", "cgroup.procs": "100\n"},
			want:     files{selfName + "/cgroup.procs": "100", "cgroup.subtree_control": "+cpu +memory +pids", runName + "/cpu.weight": "200"},
			wantPath: "/docker/c1/" + runName, wantMove: "/docker/c1/" + selfName,
		},
		{
			name: "v2 own cgroup shared with another process", v2: true, mounts: v2, self: map[string]string{"": "/"},
			files:   files{"cgroup.controllers": all, "cgroup.subtree_control": "", "cgroup.type": "domain", "cgroup.procs": "100\n200\n"},
			wantErr: "holds processes [200]",
			absent:  []string{selfName},
		},
		{
			// The real root is exempt from the rule (it has no
			// cgroup.type): nothing moves.
			name: "v2 at the real root", v2: true, mounts: v2, self: map[string]string{"": "/"},
			files:    files{"cgroup.controllers": all, "cgroup.subtree_control": "", "cgroup.procs": "1\n100\n200\n"},
			want:     files{"cgroup.subtree_control": "+cpu +memory +pids", runName + "/cpu.weight": "200"},
			absent:   []string{selfName},
			wantPath: "/" + runName,
		},
		{
			// A second Sandbox of a runmill that moved already: its cgroup
			// is the leaf, whose parent gives the controllers.
			name: "v2 after moving", v2: true, mounts: v2, self: map[string]string{"": "/" + selfName},
			files:    files{"cgroup.controllers": all, "cgroup.subtree_control": "cpu memory pids", "cgroup.type": "domain", selfName + "/cgroup.procs": "100\n"},
			want:     files{runName + "/cpu.weight": "200"},
			wantPath: "/" + runName,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, m := range tt.mounts(root) {
				if err := os.MkdirAll(m.Mountpoint, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for name, body := range tt.files {
				p := filepath.Join(root, name)
				if strings.HasSuffix(name, "/") {
					if err := os.MkdirAll(p, 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			h := cgroupHost{v2: tt.v2, mounts: tt.mounts(root), self: tt.self, pid: self, owner: owner,
				ours: func(pid int) bool { return pid == self || pid == child }}
			r, err := placeRun(h, instance, 2)
			for _, a := range tt.absent {
				if exists(filepath.Join(root, a)) {
					t.Errorf("%s was made", a)
				}
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || rmerr.CodeOf(err) != rmerr.SandboxUnavailable {
					t.Fatalf("err = %v, want RM-SANDBOX-001 saying %q", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), "fix:") {
					t.Errorf("the refusal says no fix: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.path != tt.wantPath || r.moved != tt.wantMove {
				t.Errorf("parent %q, moved to %q; want %q, %q", r.path, r.moved, tt.wantPath, tt.wantMove)
			}
			if got, want := r.taskPath("rm-1"), tt.wantPath+"/rm-1"; got != want {
				t.Errorf("task path %q, want %q", got, want)
			}
			for name, body := range tt.want {
				b, err := os.ReadFile(filepath.Join(root, name))
				if body == "" {
					if !exists(filepath.Join(root, name)) {
						t.Errorf("%s not made", name)
					}
					continue
				}
				if err != nil || strings.TrimSpace(string(b)) != body {
					t.Errorf("%s = %q (%v), want %q", name, b, err, body)
				}
			}
		})
	}
}

// TestCgroupNames: the names the sweep judges say whose they are, and a
// task's cgroup names its container.
func TestCgroupNames(t *testing.T) {
	owner := "pid:[4026531836]/4242/987654"
	run := runCgroupPrefix + ownerCgroupName(owner) + "-abcdef12"
	leaf := selfCgroupPrefix + ownerCgroupName(owner)
	for _, name := range []string{run, leaf} {
		if got, ok := cgroupOwner(name); !ok || got != owner {
			t.Errorf("cgroupOwner(%q) = %q, %v; want %q", name, got, ok, owner)
		}
	}
	for _, name := range []string{"runmill", "runmill-run-", "runmill-run-1-2-3", "runmill-run-x-2-3-abc", "runmill-self-1-2-3-4", "system.slice"} {
		if got, ok := cgroupOwner(name); ok {
			t.Errorf("cgroupOwner(%q) = %q: not a run's", name, got)
		}
	}
	for cg, want := range map[string]string{
		"/" + run + "/rm-1":            "rm-1",
		"/job/" + run + "/rm-2":        "rm-2",
		"/runmill/rm-3":                "rm-3", // containerd's default group, before the run parents
		"/" + run:                      "",
		"/" + leaf + "/rm-4":           "",
		"/" + run + "/rm-5/sub":        "",
		"/system.slice/docker.service": "",
	} {
		if got, ok := CgroupTask(cg); got != want || ok != (want != "") {
			t.Errorf("CgroupTask(%q) = %q, %v; want %q", cg, got, ok, want)
		}
	}
}

// FuzzCgroupOwner: a name in the cgroup tree, anyone's, is judged only when
// it names an owner this process could have written: numbers in place, and
// the name rebuilt from it.
func FuzzCgroupOwner(f *testing.F) {
	for _, s := range []string{runCgroupPrefix + "4026531836-100-555-abcdef12", selfCgroupPrefix + "4026531836-100-555", "runmill", runCgroupPrefix + "1--2-x", selfCgroupPrefix + "a-b-c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		owner, ok := cgroupOwner(name)
		if !ok {
			return
		}
		rebuilt := selfCgroupPrefix + ownerCgroupName(owner)
		if strings.HasPrefix(name, runCgroupPrefix) {
			rebuilt = runCgroupPrefix + ownerCgroupName(owner) + name[strings.LastIndex(name, "-"):]
		}
		if rebuilt != name {
			t.Fatalf("%q names owner %q, which names %q", name, owner, rebuilt)
		}
		if id, ok := CgroupTask("/" + name + "/rm-1"); ok != strings.HasPrefix(name, runCgroupPrefix) || ok && id != "rm-1" {
			t.Fatalf("CgroupTask under %q = %q, %v", name, id, ok)
		}
	})
}
