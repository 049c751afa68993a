package sandbox

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var recordProbe = flag.Bool("record-probe", false, "run the canary on this host's containerd and rewrite "+probeFixture)

// probeFixture is a real canary output (runc 1.1.5, containerd 1.6.20,
// cgroup v1, kernel 6.18) with its host paths replaced by placeholders.
const probeFixture = "testdata/probe/runc-1.1.5-cgroup1.out"

// Placeholders of the fixture and the paths the unit tests put back.
const (
	fixtureProbeDir = "/state/sandbox/probe/100-200/300"
	fixtureSocket   = "/state/sandbox/containerd/containerd.sock"
)

// fixtureLimits are the limits the fixture was recorded with.
var fixtureLimits = Limits{Pids: 4096, MemoryBytes: 4 << 30, CPUs: 2, NoFile: 4096, TmpBytes: 1 << 30, FileBytes: 1 << 30}

func TestRecordProbe(t *testing.T) {
	if !*recordProbe {
		t.Skip("pass -record-probe to re-record " + probeFixture)
	}
	dir, err := os.MkdirTemp("", "rmsb-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := Connect(context.Background(), Options{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ps, err := s.prepareProbe(Spec{Limits: fixtureLimits})
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(ps.dir)
	res, err := s.runPlan(s.ctx(context.Background()), ps.plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.NewReplacer(ps.dir, "@PROBEDIR@", s.address, "@SOCKET@", s.workDir, "@WORKDIR@").Replace(string(res.Stdout.Kept))
	os.MkdirAll(filepath.Dir(probeFixture), 0o755)
	if err := os.WriteFile(probeFixture, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixtureProbe returns the recorded canary output and a setup matching it.
func fixtureProbe(t *testing.T) (*probeSetup, string) {
	t.Helper()
	b, err := os.ReadFile(probeFixture)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.NewReplacer("@PROBEDIR@", fixtureProbeDir, "@SOCKET@", fixtureSocket, "@WORKDIR@", "/state/sandbox").Replace(string(b))
	env, errs := buildEnv(nil, "")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	canary := fixtureProbeDir + "/ro"
	p := &plan{
		Spec:    Spec{Checkout: canary, ReportFile: canary + "/report", Limits: fixtureLimits},
		roBinds: []bind{{canary, CheckoutPath}},
		report:  bind{canary + "/report", CheckoutPath + "/report"},
		env:     env, uid: DefaultUID, gid: DefaultGID,
	}
	// Where the host saw the canary's task: its own cgroup under the run's
	// parent, which weighs two cores' worth.
	task := "/" + runCgroupPrefix + "4026531836-100-200-abcdef12/rm-canary"
	cg := cgroupSeen{Task: task, WantTask: task, Weight: "2048", WantWeight: "2048", WeightFile: "cpu.shares"}
	return &probeSetup{plan: p, dir: fixtureProbeDir, canary: canary, absent: []string{fixtureProbeDir + "/outside", canary, fixtureSocket}, cgroup: cg}, out
}

func TestEvaluateProbe(t *testing.T) {
	tests := []struct {
		name       string
		edit       func(string) string
		report     string
		wantFailed []string // check names that must fail; empty: all hold
		cgroup     func(*cgroupSeen)
	}{
		{name: "recorded", edit: func(s string) string { return s }},
		{name: "capabilities kept", edit: replace("CapEff:\t0000000000000000", "CapEff:\t00000000a80425fb"), wantFailed: []string{"capabilities.none"}},
		{name: "root user", edit: replace("Uid:\t65534\t65534\t65534\t65534", "Uid:\t0\t0\t0\t0"), wantFailed: []string{"user.non-root"}},
		{name: "no seccomp", edit: replace("Seccomp:\t2", "Seccomp:\t0"), wantFailed: []string{"seccomp.filter"}},
		{name: "new privileges", edit: replace("NoNewPrivs:\t1", "NoNewPrivs:\t0"), wantFailed: []string{"no-new-privileges"}},
		{name: "writable toolchain", edit: replace(" /usr ro,", " /usr rw,"), wantFailed: []string{"mounts.read-only"}},
		{name: "writable submount", edit: func(s string) string {
			return strings.Replace(s, "\n@@runmill-probe environ", "\n999 65 0:99 / "+CheckoutPath+"/sub rw,relatime - tmpfs tmpfs rw\n@@runmill-probe environ", 1)
		}, wantFailed: []string{"mounts.read-only"}},
		{name: "host network", edit: func(s string) string {
			return strings.Replace(s, "\n@@runmill-probe route\n", "  eth0: 1 2 0 0 0 0 0 0 1 2 0 0 0 0 0 0\n@@runmill-probe route\n", 1)
		}, wantFailed: []string{"network.interfaces"}},
		{name: "default route", edit: func(s string) string {
			return strings.Replace(s, "\n@@runmill-probe route6", "eth0\t00000000\t010011AC\t0003\t0\t0\t0\t00000000\t0\t0\t0\n@@runmill-probe route6", 1)
		}, wantFailed: []string{"network.routes"}},
		{name: "connect in flight", edit: replace("tcp4 errno-101", "tcp4 errno-115"), wantFailed: []string{"network.tcp4-external"}},
		{name: "udp connected", edit: replace("udp4 errno-101", "udp4 connected"), wantFailed: []string{"network.udp4-external"}},
		{name: "no loopback", edit: replace("loopback ok", "loopback connect-errno-111"), wantFailed: []string{"network.loopback"}},
		{name: "no perl", edit: func(s string) string {
			i := strings.Index(s, "\n@@runmill-probe net\n")
			j := strings.Index(s, "\n@@runmill-probe end")
			return s[:i] + s[j:]
		}},
		{name: "canary denied by mode, not mount", edit: replace("checkout/.runmill-probe-write: Read-only file system", "checkout/.runmill-probe-write: Permission denied"), wantFailed: []string{"write.denied " + CheckoutPath}},
		{name: "canary file denied by mode, not mount", edit: replace("checkout/file: Read-only file system", "checkout/file: Permission denied"), wantFailed: []string{"write.denied " + CheckoutPath + "/file"}},
		{name: "canary writable", edit: func(s string) string {
			i := strings.Index(s, "@@runmill-probe write "+CheckoutPath+"\n")
			j := i + strings.Index(s[i:], "RESULT=denied")
			return s[:j] + "RESULT=writable" + s[j+len("RESULT=denied"):]
		}, wantFailed: []string{"write.denied " + CheckoutPath}},
		// A task that sees its checkout elsewhere (or not at all) would
		// name other paths in its ids than the next run does.
		{name: "checkout not the working directory", edit: replace("@@runmill-probe checkout\n"+CheckoutPath+"\n", "@@runmill-probe checkout\n/tmp\n"), wantFailed: []string{"checkout.fixed-path"}},
		{name: "checkout not mounted", edit: replace(" "+CheckoutPath+" ro,", " /elsewhere ro,"), wantFailed: []string{"checkout.fixed-path", "mounts.present"}},
		{name: "checkout content missing", edit: replace(CheckoutPath+"\n"+probeCheckoutText+"\n", CheckoutPath+"\ncat: "+CheckoutPath+"/file: No such file or directory\n"), wantFailed: []string{"checkout.fixed-path"}},
		{name: "host checkout path visible", edit: func(s string) string {
			i := strings.Index(s, "@@runmill-probe absent "+fixtureProbeDir+"/ro\n")
			j := i + strings.Index(s[i:], "RESULT=absent")
			return s[:j] + "RESULT=present" + s[j+len("RESULT=absent"):]
		}, wantFailed: []string{"host.hidden " + fixtureProbeDir + "/ro"}},
		{name: "report not mounted over the checkout", edit: replace(" "+CheckoutPath+"/report rw,", " /report rw,"), wantFailed: []string{"mounts.present", "mounts.read-only"}},
		{name: "socket visible", edit: func(s string) string {
			i := strings.Index(s, "@@runmill-probe absent "+fixtureSocket+"\n")
			j := i + strings.Index(s[i:], "RESULT=absent")
			return s[:j] + "RESULT=present" + s[j+len("RESULT=absent"):]
		}, wantFailed: []string{"host.hidden " + fixtureSocket}},
		{name: "inherited secret", edit: replace("TMPDIR=/tmp\x00", "TMPDIR=/tmp\x00GITHUB_TOKEN=ghp_x\x00"), wantFailed: []string{"environment.exact"}},
		{name: "no pids limit", edit: func(s string) string {
			return strings.Replace(s, "pids.max\n4096", "pids.max\nmax", 1)
		}, wantFailed: []string{"limits.pids"}},
		{name: "report not seen on host", report: "nope", edit: func(s string) string { return s }, wantFailed: []string{"write.report"}},
		// The placement, seen from the host: containerd's shared group,
		// another run's parent, a parent left at one process's weight,
		// nothing seen.
		{name: "shared cgroup", cgroup: func(c *cgroupSeen) { c.Task = "/" + DefaultNamespace + "/rm-canary" }, wantFailed: []string{"cgroup.own"}},
		{name: "another run's cgroup", cgroup: func(c *cgroupSeen) { c.Task = "/" + runCgroupPrefix + "4026531836-100-200-00000000/rm-canary" }, wantFailed: []string{"cgroup.own"}},
		{name: "parent of one process's weight", cgroup: func(c *cgroupSeen) { c.Weight = "1024" }, wantFailed: []string{"cgroup.own"}},
		{name: "placement unseen", cgroup: func(c *cgroupSeen) { *c = cgroupSeen{WantTask: c.WantTask, WantWeight: c.WantWeight} }, wantFailed: []string{"cgroup.own"}},
		{name: "truncated", edit: func(s string) string { return s[:strings.Index(s, "\n@@runmill-probe end")] }, wantFailed: []string{"canary.completed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, out := fixtureProbe(t)
			if tt.edit == nil {
				tt.edit = func(s string) string { return s }
			}
			edited := tt.edit(out)
			if tt.cgroup != nil {
				tt.cgroup(&ps.cgroup)
			} else if edited == out && tt.name != "recorded" && tt.report == "" {
				t.Fatal("edit changed nothing: the fixture no longer has what this case edits")
			}
			report := probeReportText
			if tt.report != "" {
				report = tt.report
			}
			res := Result{Stdout: Capture{Kept: []byte(edited), Size: int64(len(edited))}}
			checks := evaluateProbe(ps, res, []byte(report), true)
			rep := ProbeReport{Checks: checks}
			var failed []string
			for _, c := range rep.Failed() {
				failed = append(failed, c.Name)
			}
			if strings.Join(failed, ",") != strings.Join(tt.wantFailed, ",") {
				for _, c := range checks {
					t.Logf("%v %v %s: %s", c.OK, c.Measured, c.Name, c.Detail)
				}
				t.Errorf("failed checks %q, want %q", failed, tt.wantFailed)
			}
			if rep.OK() != (len(tt.wantFailed) == 0) {
				t.Errorf("OK() = %v", rep.OK())
			}
		})
	}
}

func replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

func TestKernelAtLeast(t *testing.T) {
	for release, want := range map[string]bool{
		"6.18.44-fc-v857": true, "5.12.0": true, "5.11.22": false, "5.15.0-91-generic": true,
		"4.19.0": false, "garbage": false, "5": false, "5.12-rc1": true,
	} {
		if got := kernelAtLeast(release, 5, 12); got != want {
			t.Errorf("kernelAtLeast(%q, 5, 12) = %v", release, got)
		}
	}
}
