package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"

	"github.com/runmill/verify/internal/mountinfo"
	"github.com/runmill/verify/pkg/rmerr"
)

// ProbeReport is what a canary task measured about the isolation actually
// enforced. It is evidence: the run's record keeps it next to the results
// it vouches for.
type ProbeReport struct {
	Runtime  RuntimeInfo   `json:"runtime"`
	Checks   []ProbeCheck  `json:"checks"`
	Duration time.Duration `json:"duration_ns"` // of the canary task
	// Image is the OCI image tarball the canary ran in; empty for the host
	// toolchain root.
	Image string `json:"image,omitempty"`
	// Images are the probes of the image roots some checks run in (the
	// engine probes each configuration it uses, not only the default).
	Images []ProbeReport `json:"images,omitempty"`
}

// RuntimeInfo describes the containerd, runc and kernel the probe ran on.
type RuntimeInfo struct {
	Containerd        string `json:"containerd"` // server version
	Address           string `json:"address"`
	Private           bool   `json:"private"` // runmill started this containerd
	Runc              string `json:"runc"`
	Kernel            string `json:"kernel"`
	CgroupV2          bool   `json:"cgroup_v2"`
	RecursiveReadOnly bool   `json:"recursive_read_only"` // rro was requested for read-only binds
}

// ProbeCheck is one measured guarantee.
type ProbeCheck struct {
	Name string `json:"name"` // stable identifier, e.g. "network.tcp4-external"
	OK   bool   `json:"ok"`
	// Measured is false when the canary lacked the tool to measure this
	// check actively (perl for socket tests); a structural check then
	// stands for it, and OK says nothing more.
	Measured bool   `json:"measured"`
	Detail   string `json:"detail"`
}

// OK reports whether every measured check held.
func (r ProbeReport) OK() bool {
	for _, c := range r.Checks {
		if c.Measured && !c.OK {
			return false
		}
	}
	return true
}

// Failed lists the checks that did not hold.
func (r ProbeReport) Failed() []ProbeCheck {
	var out []ProbeCheck
	for _, c := range r.Checks {
		if c.Measured && !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// probeTimeout bounds the canary; it runs a few cats and one perl.
const probeTimeout = 30 * time.Second

const (
	probeReportText   = "runmill-probe-report"
	probeCheckoutText = "runmill-probe-checkout"
)

// Probe runs a canary task with spec's settings (paths, image, limits,
// user, environment; Command, Checkout, Dir and ReportFile must be empty:
// the probe brings its own checkout, mounted at CheckoutPath as a check's
// is, with the report file inside it) and measures what is enforced. It returns the report and, when a
// guarantee is missing, an RM-SANDBOX-002 error: the caller must then not
// run checks, rather than run them with weaker isolation.
func (s *Sandbox) Probe(ctx context.Context, spec Spec) (ProbeReport, error) {
	if err := s.begin(); err != nil {
		return ProbeReport{}, err
	}
	defer s.inflight.Done()
	ctx = s.ctx(ctx)
	rep := ProbeReport{Image: spec.Image, Runtime: RuntimeInfo{
		Address: s.address, Private: s.private != nil,
		Runc: s.features.Runc, Kernel: s.features.Kernel,
		CgroupV2: s.features.CgroupV2, RecursiveReadOnly: s.features.RecursiveReadOnly,
	}}
	if v, err := s.client.Version(ctx); err == nil {
		rep.Runtime.Containerd = v.Version
	}
	ps, err := s.prepareProbe(spec)
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(ps.dir)
	// Where the task is placed is seen from the host, while runc init
	// waits in the task's cgroup for the start.
	res, err := s.runPlan(ctx, ps.plan, func(t containerd.Task) { ps.cgroup = s.cgroup.observe(t.Pid(), ps.plan.ID) })
	if err != nil {
		return rep, err
	}
	rep.Duration = res.Duration
	hostReport, _ := os.ReadFile(ps.plan.ReportFile)
	rep.Checks = evaluateProbe(ps, res, hostReport, s.features.RecursiveReadOnly)
	if failed := rep.Failed(); len(failed) > 0 {
		names := make([]string, len(failed))
		for i, c := range failed {
			names[i] = c.Name + " (" + c.Detail + ")"
		}
		return rep, rmerr.New(rmerr.SandboxGuarantee, "sandbox probe: not enforced: %s", strings.Join(names, "; ")).
			WithHint("fix the container runtime (runc ≥ 1.1, kernel ≥ 5.12, cgroups with pids and memory controllers) rather than running checks with weaker isolation")
	}
	return rep, nil
}

// probeSetup is a canary run ready to go: its plan and the host paths the
// evaluation compares against.
type probeSetup struct {
	plan   *plan
	dir    string   // the probe's own host directory, removed afterwards
	canary string   // the canary checkout on the host: world-writable, bound read-only at CheckoutPath
	absent []string // host paths that must not exist in the task
	cgroup cgroupSeen
}

// prepareProbe creates the probe's host files and the canary plan.
func (s *Sandbox) prepareProbe(spec Spec) (_ *probeSetup, retErr error) {
	if spec.Command != "" || spec.ReportFile != "" || spec.Checkout != "" || spec.Dir != "" {
		return nil, rmerr.New(rmerr.SandboxSpec, "the probe sets its own command, checkout, working directory and report file; leave them empty")
	}
	base := filepath.Join(s.workDir, "probe", ownerDirName(s.owner))
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxRuntime, err, "creating %s", base)
	}
	dir, err := os.MkdirTemp(base, "")
	if err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxRuntime, err, "creating probe directory")
	}
	defer func() {
		if retErr != nil {
			os.RemoveAll(dir)
		}
	}()
	// The canary checkout is world-writable on the host, so only the mount
	// can stop the write: a denial then proves the mount, not the file
	// mode. Its report file lies inside it, bound over the read-only
	// checkout exactly as a check's is.
	canary := filepath.Join(dir, "ro")
	report := filepath.Join(canary, "report")
	outside := filepath.Join(dir, "outside") // exists on the host, never bound
	for _, f := range []struct {
		path    string
		mode    os.FileMode
		dir     bool
		content string
	}{
		{canary, 0o777, true, ""},
		{filepath.Join(canary, "file"), 0o666, false, probeCheckoutText},
		{report, 0o600, false, ""},
		{outside, 0o644, false, "runmill-probe-outside"},
	} {
		var err error
		if f.dir {
			err = os.Mkdir(f.path, f.mode)
		} else {
			err = os.WriteFile(f.path, []byte(f.content), f.mode)
		}
		if err == nil {
			err = os.Chmod(f.path, f.mode) // past the umask
		}
		if err != nil {
			return nil, rmerr.Wrap(rmerr.SandboxRuntime, err, "preparing probe files")
		}
	}
	if err := writeProbeMarkers(filepath.Join(canary, probeMarkers)); err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxRuntime, err, "preparing probe files")
	}
	spec.Checkout = canary
	spec.ReportFile = report
	spec.Timeout = probeTimeout
	spec.ID = ""
	spec.Command = "true" // replaced below, once paths are resolved
	p, err := spec.validate()
	if err != nil {
		return nil, err
	}
	// The host path of the checkout must be as invisible as any other.
	ps := &probeSetup{plan: p, dir: dir, canary: canary, absent: []string{outside, canary, s.address}}
	p.Command = probeScript(p, ps.absent)
	return ps, nil
}

// probeSection is the canary's shell function that starts a section.
const probeSection = `section() { printf '\n@@runmill-probe %s\n' "$1"; }
`

// probeCgroupFiles is the canary's part that reads the task's limits from
// its cgroup, mounted at /sys/fs/cgroup in its cgroup namespace: per
// controller directories on cgroup v1, the cgroup's own files on v2. It
// needs probeSection.
const probeCgroupFiles = `for f in /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/pids.max /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us /sys/fs/cgroup/cpu.max; do
  if [ -r "$f" ]; then section "file $f"; cat "$f"; fi
done
`

// probeMarker starts each section of the canary's output.
const probeMarker = "\n@@runmill-probe "

// probeRead is a file the canary reads whole as one section of its output.
type probeRead struct {
	section, path string
	optional      bool // read only when readable (a kernel without IPv6)
}

// probeReads are the files the canary reads with one cat. /proc/self is
// that cat: a process the task's command started, as a test is.
var probeReads = []probeRead{
	{"status", "/proc/self/status", false},
	{"limits", "/proc/self/limits", false},
	{"mountinfo", "/proc/self/mountinfo", false},
	{"environ", "/proc/1/environ", false},
	{"netdev", "/proc/net/dev", false},
	{"route", "/proc/net/route", false},
	{"route6", "/proc/net/ipv6_route", true},
	{"lo-flags", "/sys/class/net/lo/flags", false},
}

// probeMarkers is the directory of the canary checkout holding one file per
// entry of probeReads, named by its index, whose content is the section's
// marker: cat prints it before the file it precedes.
const probeMarkers = ".probe-sections"

// writeProbeMarkers writes the marker files into dir.
func writeProbeMarkers(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	for i, r := range probeReads {
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), []byte(probeMarker+r.section+"\n"), 0o644); err != nil {
			return err
		}
	}
	return os.Chmod(dir, 0o755) // past the umask
}

// probeScript is the canary: POSIX sh and cat only for every structural
// fact, perl (Debian's essential perl-base) for the socket tests when it
// exists. It prints raw facts; all judgement happens in evaluateProbe, in
// Go, where it can be tested.
func probeScript(p *plan, absent []string) string {
	var b strings.Builder
	b.WriteString(probeSection)
	// The checkout at its fixed path: the working directory, and the
	// canary file read through it; then every file of probeReads, all by
	// one cat (a process per file cost more than the files), each after
	// its section's marker file.
	fmt.Fprintf(&b, "section checkout\npwd\nset -- %s\n", shQuote(CheckoutPath+"/file"))
	for i, r := range probeReads {
		marker := shQuote(CheckoutPath + "/" + probeMarkers + "/" + strconv.Itoa(i))
		if r.optional {
			fmt.Fprintf(&b, "if [ -r %s ]; then set -- \"$@\" %s %s; fi\n", shQuote(r.path), marker, shQuote(r.path))
		} else {
			fmt.Fprintf(&b, "set -- \"$@\" %s %s\n", marker, shQuote(r.path))
		}
	}
	b.WriteString("cat \"$@\"\n")
	b.WriteString(probeCgroupFiles)
	// Write attempts: the canary checkout and its file (world-writable, so
	// only the mount refuses), every read-only bind, the root and each
	// toolchain bind, at their paths in the task. The shell's error text
	// says why it was refused.
	targets := []bind{{"", "/"}}
	targets = append(targets, p.roBinds...)
	targets = append(targets, p.hostBinds...)
	if len(p.roBinds) > 0 && p.roBinds[0].Destination == CheckoutPath {
		src := filepath.Join(p.roBinds[0].Source, "file")
		targets = slices.Insert(targets, 1, bind{src, CheckoutPath + "/file"})
	}
	seen := map[string]bool{}
	for _, t := range targets {
		if seen[t.Destination] {
			continue
		}
		seen[t.Destination] = true
		fmt.Fprintf(&b, "section %s\n", shQuote("write "+t.Destination))
		if fi, err := os.Stat(t.Source); t.Source != "" && err == nil && !fi.IsDir() {
			fmt.Fprintf(&b, "if (: >> %s) 2>&1; then echo RESULT=writable; else echo RESULT=denied; fi\n", shQuote(t.Destination))
		} else {
			fmt.Fprintf(&b, "if (: > %s) 2>&1; then echo RESULT=writable; else echo RESULT=denied; fi\n", shQuote(filepath.Join(t.Destination, ".runmill-probe-write")))
		}
	}
	for _, a := range absent {
		fmt.Fprintf(&b, "section %s\nif [ -e %s ] || [ -L %s ]; then echo RESULT=present; cat %s 2>&1; else echo RESULT=absent; fi\n",
			shQuote("absent "+a), shQuote(a), shQuote(a), shQuote(a))
	}
	fmt.Fprintf(&b, "section report\nif printf %%s %s > %s; then echo RESULT=ok; else echo RESULT=failed; fi\n", probeReportText, shQuote(p.report.Destination))
	b.WriteString(`section tmpdir
if printf x > "$TMPDIR/.runmill-probe" && [ -s "$TMPDIR/.runmill-probe" ]; then echo RESULT=ok; else echo RESULT=failed; fi
if command -v perl >/dev/null 2>&1; then section net; perl -e '` + probePerl + `' 2>&1; fi
section end
`)
	return b.String()
}

// probePerl tries external connects without ever waiting on the network:
// sockets are non-blocking, so a connect that could leave the host reports
// EINPROGRESS at once instead of reaching anything. 192.0.2.1 and
// 2001:db8::1 are documentation addresses (RFC 5737, RFC 3849).
const probePerl = `use strict; use Socket qw(:all); use Fcntl;
sub try { my ($f, $t, $addr) = @_; my $s; socket($s, $f, $t, 0) or return "socket-errno-" . ($!+0);
  fcntl($s, F_SETFL, fcntl($s, F_GETFL, 0) | O_NONBLOCK); return connect($s, $addr) ? "connected" : "errno-" . ($!+0); }
sub loopback { my ($l, $c, $acc, $buf);
  socket($l, AF_INET, SOCK_STREAM, 0) or return "socket-errno-" . ($!+0);
  bind($l, pack_sockaddr_in(0, inet_aton("127.0.0.1"))) or return "bind-errno-" . ($!+0);
  listen($l, 1) or return "listen-errno-" . ($!+0);
  my ($port) = unpack_sockaddr_in(getsockname($l));
  socket($c, AF_INET, SOCK_STREAM, 0) or return "socket-errno-" . ($!+0);
  connect($c, pack_sockaddr_in($port, inet_aton("127.0.0.1"))) or return "connect-errno-" . ($!+0);
  accept($acc, $l) or return "accept-errno-" . ($!+0);
  syswrite($c, "x"); sysread($acc, $buf, 1); return $buf eq "x" ? "ok" : "no-data"; }
print "tcp4 ", try(AF_INET, SOCK_STREAM, pack_sockaddr_in(9, inet_aton("192.0.2.1"))), "\n";
print "udp4 ", try(AF_INET, SOCK_DGRAM, pack_sockaddr_in(53, inet_aton("192.0.2.1"))), "\n";
print "tcp6 ", try(AF_INET6, SOCK_STREAM, pack_sockaddr_in6(9, inet_pton(AF_INET6, "2001:db8::1"))), "\n";
print "loopback ", loopback(), "\n";`

// Linux errno values the probe interprets.
const (
	errnoENETUNREACH  = 101
	errnoEAFNOSUPPORT = 97
	errnoEINPROGRESS  = 115
)

// evaluateProbe turns the canary's raw facts into checks.
func evaluateProbe(ps *probeSetup, res Result, hostReport []byte, rro bool) []ProbeCheck {
	p, absent := ps.plan, ps.absent
	sec := parseSections(res.Stdout.Kept)
	var checks []ProbeCheck
	add := func(name string, ok bool, format string, args ...any) {
		checks = append(checks, ProbeCheck{Name: name, OK: ok, Measured: true, Detail: fmt.Sprintf(format, args...)})
	}
	if _, ok := sec["end"]; !ok || res.ExitCode != 0 || res.Stdout.Truncated {
		add("canary.completed", false, "exit %d, timed out %v, stdout %d bytes, stderr %q", res.ExitCode, res.TimedOut, res.Stdout.Size, clip(res.Stderr.Kept))
		return checks
	}
	add("canary.completed", true, "exit 0 in %s", res.Duration.Round(time.Millisecond))

	status := keyValues(sec["status"], ":")
	uids, gids := strings.Fields(status["Uid"]), strings.Fields(status["Gid"])
	wantU, wantG := strconv.FormatUint(uint64(p.uid), 10), strconv.FormatUint(uint64(p.gid), 10)
	add("user.non-root", p.uid != 0 && allEqual(uids, wantU) && len(uids) == 4 && allEqual(gids, wantG) && len(gids) == 4 &&
		!slices.Contains(strings.Fields(status["Groups"]), "0"),
		"Uid %q Gid %q Groups %q, want uid %s gid %s", status["Uid"], status["Gid"], status["Groups"], wantU, wantG)
	capsOK := true
	var capDetail []string
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		v := status[k]
		capDetail = append(capDetail, k+"="+v)
		if n, err := strconv.ParseUint(v, 16, 64); err != nil || n != 0 {
			capsOK = false
		}
	}
	add("capabilities.none", capsOK, "%s", strings.Join(capDetail, " "))
	add("no-new-privileges", status["NoNewPrivs"] == "1", "NoNewPrivs=%s", status["NoNewPrivs"])
	add("seccomp.filter", status["Seccomp"] == "2", "Seccomp=%s (2 = filter)", status["Seccomp"])

	// Network, structurally: an empty network namespace has exactly one
	// interface, lo, and no route off it.
	var ifaces []string
	for _, line := range strings.Split(sec["netdev"], "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, "|") {
			ifaces = append(ifaces, strings.TrimSpace(name))
		}
	}
	add("network.interfaces", slices.Equal(ifaces, []string{"lo"}), "interfaces %v, want [lo]", ifaces)
	var routes []string
	for i, line := range strings.Split(strings.TrimSpace(sec["route"]), "\n") {
		if i > 0 && strings.TrimSpace(line) != "" { // line 0 is the header
			routes = append(routes, strings.Fields(line)[0])
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(sec["route6"]), "\n") {
		if fs := strings.Fields(line); len(fs) == 10 && fs[9] != "lo" {
			routes = append(routes, fs[9]+"(v6)")
		}
	}
	add("network.routes", len(routes) == 0, "non-loopback routes via %v", routes)
	loFlags, _ := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(sec["lo-flags"]), "0x"), 16, 64)

	// Network, actively, when perl is there.
	net := keyValues(sec["net"], " ")
	if _, ok := sec["net"]; ok {
		for _, k := range []string{"tcp4", "udp4", "tcp6"} {
			v := net[k]
			ok := v == "errno-"+strconv.Itoa(errnoENETUNREACH) ||
				k == "tcp6" && v == "socket-errno-"+strconv.Itoa(errnoEAFNOSUPPORT)
			detail := v
			if v == "errno-"+strconv.Itoa(errnoEINPROGRESS) || v == "connected" {
				detail += ": a route off the host exists"
			}
			add("network."+k+"-external", ok, "connect to a documentation address: %s (want ENETUNREACH)", detail)
		}
		add("network.loopback", net["loopback"] == "ok", "listen+connect on 127.0.0.1: %s", net["loopback"])
	} else {
		for _, k := range []string{"tcp4", "udp4", "tcp6"} {
			checks = append(checks, ProbeCheck{Name: "network." + k + "-external", Detail: "not measured: no perl in the task; network.interfaces and network.routes stand for it"})
		}
		add("network.loopback", loFlags&1 == 1, "lo flags %#x (not measured actively: no perl)", loFlags)
	}

	// Mounts: everything read-only except the few places a task may write.
	writable := func(mp string) bool {
		return mp == "/proc" || strings.HasPrefix(mp, "/proc/") || mp == "/dev" || strings.HasPrefix(mp, "/dev/") ||
			mp == "/sys/fs/cgroup" || mp == TmpPath || mp == p.report.Destination
	}
	var rw []string
	mounted := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(sec["mountinfo"]), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 6 {
			continue
		}
		mp := mountinfo.Unescape(fs[4])
		mounted[mp] = true
		if !slices.Contains(strings.Split(fs[5], ","), "ro") && !writable(mp) {
			rw = append(rw, mp)
		}
	}
	rroNote := "rro requested"
	if !rro {
		rroNote = "rro not supported; plain ro, every submount checked"
	}
	add("mounts.read-only", len(rw) == 0 && mounted["/"], "writable mounts outside /proc, /dev, TMPDIR and the report: %v (%s)", rw, rroNote)
	var unmounted []string
	want := []string{p.report.Destination, TmpPath}
	for _, b := range p.roBinds {
		want = append(want, b.Destination)
	}
	for _, mp := range want {
		if !mounted[mp] {
			unmounted = append(unmounted, mp)
		}
	}
	add("mounts.present", len(unmounted) == 0, "missing mounts: %v", unmounted)
	co := strings.Split(strings.TrimSpace(sec["checkout"]), "\n")
	add("checkout.fixed-path", mounted[CheckoutPath] && len(co) == 2 && co[0] == CheckoutPath && co[1] == probeCheckoutText,
		"working directory and %s/file read %q, want %s and %q", CheckoutPath, co, CheckoutPath, probeCheckoutText)

	for name, body := range sec {
		t, ok := strings.CutPrefix(name, "write ")
		if !ok {
			continue
		}
		r := resultOf(body)
		ok = r == "denied"
		detail := strings.TrimSpace(strings.TrimSuffix(body, "RESULT="+r+"\n"))
		if _, canary := under(t, CheckoutPath); canary {
			// World-writable on the host: only a read-only mount explains a denial.
			ok = ok && strings.Contains(body, "Read-only file system")
		}
		add("write.denied "+t, ok, "%s: %s", r, detail)
	}
	for _, a := range absent {
		r := resultOf(sec["absent "+a])
		add("host.hidden "+a, r == "absent", "%s", r)
	}
	add("write.report", resultOf(sec["report"]) == "ok" && string(hostReport) == probeReportText,
		"in task %s, host sees %q", resultOf(sec["report"]), clip(hostReport))
	add("write.tmpdir", resultOf(sec["tmpdir"]) == "ok", "%s", resultOf(sec["tmpdir"]))

	env := strings.Split(strings.TrimRight(sec["environ"], "\x00\n"), "\x00")
	add("environment.exact", sameSet(env, p.env), "task has %d variables, want exactly the %d given", len(env), len(p.env))

	limits := parseLimits(sec["limits"])
	add("limits.nofile", limits["Max open files"] == [2]string{u(p.Limits.NoFile), u(p.Limits.NoFile)}, "soft/hard %v, want %d", limits["Max open files"], p.Limits.NoFile)
	add("limits.fsize", limits["Max file size"] == [2]string{u(p.Limits.FileBytes), u(p.Limits.FileBytes)}, "soft/hard %v, want %d", limits["Max file size"], p.Limits.FileBytes)

	pids := first(sec, "file /sys/fs/cgroup/pids/pids.max", "file /sys/fs/cgroup/pids.max")
	add("limits.pids", pids == strconv.FormatInt(p.Limits.Pids, 10), "pids.max %q, want %d", pids, p.Limits.Pids)
	mem := first(sec, "file /sys/fs/cgroup/memory/memory.limit_in_bytes", "file /sys/fs/cgroup/memory.max")
	// The kernel rounds the limit down to whole pages.
	memN, _ := strconv.ParseInt(mem, 10, 64)
	add("limits.memory", memN > 0 && memN <= p.Limits.MemoryBytes && p.Limits.MemoryBytes-memN < 1<<16, "memory limit %q, want %d", mem, p.Limits.MemoryBytes)
	var quota string
	if v, ok := sec["file /sys/fs/cgroup/cpu.max"]; ok {
		quota, _, _ = strings.Cut(strings.TrimSpace(v), " ")
	} else {
		quota = strings.TrimSpace(sec["file /sys/fs/cgroup/cpu/cpu.cfs_quota_us"])
	}
	wantQuota := strconv.FormatInt(int64(p.Limits.CPUs*cfsPeriod+0.999999), 10)
	add("limits.cpu", quota == wantQuota, "CFS quota %q per %dµs, want %s", quota, cfsPeriod, wantQuota)

	cg := ps.cgroup
	add("cgroup.own", cg.Task != "" && cg.Task == cg.WantTask && cg.Weight != "" && cg.Weight == cg.WantWeight,
		"task in cgroup %q, want %q (its own, under the run's parent); the parent's %s %q, want %q", cg.Task, cg.WantTask, cg.WeightFile, cg.Weight, cg.WantWeight)

	slices.SortStableFunc(checks, func(a, b ProbeCheck) int { return strings.Compare(a.Name, b.Name) })
	return checks
}

func parseSections(out []byte) map[string]string {
	sec := map[string]string{}
	parts := strings.Split(string(out), probeMarker)
	for _, part := range parts[1:] {
		name, body, _ := strings.Cut(part, "\n")
		sec[name] = body
	}
	return sec
}

func keyValues(body, sep string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(body, "\n") {
		if k, v, ok := strings.Cut(line, sep); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// parseLimits reads /proc/PID/limits into name → (soft, hard).
func parseLimits(body string) map[string][2]string {
	m := map[string][2]string{}
	for _, line := range strings.Split(body, "\n") {
		if len(line) < 26 || strings.HasPrefix(line, "Limit") {
			continue
		}
		fs := strings.Fields(line[25:])
		if len(fs) >= 2 {
			m[strings.TrimSpace(line[:25])] = [2]string{fs[0], fs[1]}
		}
	}
	return m
}

func resultOf(body string) string {
	for _, line := range strings.Split(body, "\n") {
		if r, ok := strings.CutPrefix(line, "RESULT="); ok {
			return r
		}
	}
	return "missing"
}

func first(sec map[string]string, names ...string) string {
	for _, n := range names {
		if v, ok := sec[n]; ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func allEqual(vs []string, want string) bool {
	for _, v := range vs {
		if v != want {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

func clip(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

// shQuote quotes s for POSIX sh.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
