package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	v1stats "github.com/containerd/cgroups/v3/cgroup1/stats"
	v2stats "github.com/containerd/cgroups/v3/cgroup2/stats"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	"github.com/containerd/typeurl/v2"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/runmill/verify/internal/taskinit"
	"github.com/runmill/verify/pkg/rmerr"
)

// Result is what one Run observed. It is a record, not a verdict: a non-zero
// exit, a timeout or an OOM kill is a result, not an error.
type Result struct {
	ID        string
	ExitCode  int  // 128+signal when killed by a signal
	TimedOut  bool // the wall-clock limit expired and every process was killed
	OOMKilled bool // the memory cgroup killed at least one process
	// OutputIncomplete: the output streams did not drain within a grace
	// period after exit; the captures cover what arrived.
	OutputIncomplete bool
	Duration         time.Duration // from task start to exit
	// CPU is the CPU time every process of the task used; MemoryPeak the
	// peak memory of its cgroup in bytes (0 where not reported).
	CPU            time.Duration
	MemoryPeak     int64
	Stdout, Stderr Capture
}

// Labels on every container runmill creates.
const (
	labelOwner   = "dev.runmill.sandbox/owner"   // ownerID() of the creating process
	labelCreated = "dev.runmill.sandbox/created" // RFC 3339 creation time
)

// cleanupTimeout bounds killing and deleting one task after a run, even
// when the caller's context is already cancelled. A variable for tests.
var cleanupTimeout = 30 * time.Second

const (
	// drainGrace is how long output may keep arriving after exit. With a
	// private pid namespace every writer is dead once init is, so this only
	// guards against a misbehaving runtime.
	drainGrace = 10 * time.Second
	// initGrace is how much longer than the run's limit the in-task init
	// waits before ending the task itself. While runmill lives, its own
	// timer fires first and records the timeout as it always did; the
	// init's limit is the backstop for a runmill that can no longer kill
	// (killed, OOM-killed, stopped).
	initGrace = time.Second
)

// outerTimerOff disables Run's own wall-clock timer, leaving the limit to
// the in-task init alone. Only a test sets it (DisableOuterTimerUnsafe).
var outerTimerOff atomic.Bool

// sharedCgroup leaves a task where containerd puts it by default
// (/<namespace>/<id>: one group for every task on the machine), the
// placement before the run parents. Only the benchmark that compares the
// two sets it (SharedCgroupUnsafe).
var sharedCgroup atomic.Bool

// Run runs spec.Command in a fresh task and returns what happened. The
// container and task are deleted whatever happened (in the background once
// the result is read; Gone and Close wait for that). An error means no
// trustworthy result exists (invalid spec, runtime failure, ctx cancelled);
// it is never returned for the command's own failure.
func (s *Sandbox) Run(ctx context.Context, spec Spec) (Result, error) {
	t, err := s.Prepare(ctx, spec)
	if err != nil {
		return Result{}, err
	}
	return t.Run(ctx)
}

// Task is a created, not yet started task: its container exists, runc has
// made its namespaces and mounts, and its command has not run. Preparing
// takes most of a run's fixed cost (runc create), so a caller can do other
// work meanwhile — the engine hashes the checkout — and then Run it. Exactly
// one of Run and Discard must be called.
type Task struct {
	s     *Sandbox
	p     *plan
	c     containerd.Container
	task  containerd.Task
	exitC <-chan containerd.ExitStatus
	// stopWait ends the exit watch, which runs on a context the caller
	// cannot cancel.
	stopWait       context.CancelFunc
	stdout, stderr *captureWriter
	once           sync.Once
}

// Prepare validates spec and creates its container and task without
// starting the command.
func (s *Sandbox) Prepare(ctx context.Context, spec Spec) (*Task, error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	p, err := spec.validate()
	if err != nil {
		s.inflight.Done()
		return nil, err
	}
	s.track(p.ID, "check run")
	t, err := s.prepare(s.ctx(ctx), p)
	if err != nil {
		s.inflight.Done()
		return nil, err
	}
	return t, nil
}

// runPlan prepares and runs a validated plan (the probe's) within a Run or
// Probe that already holds its inflight slot; created, when set, sees the
// task once it exists and before it starts.
func (s *Sandbox) runPlan(ctx context.Context, p *plan, created func(containerd.Task)) (Result, error) {
	s.track(p.ID, "sandbox probe")
	t, err := s.prepare(ctx, p)
	if err != nil {
		return Result{ID: p.ID}, err
	}
	if created != nil {
		created(t.task)
	}
	s.inflight.Add(1) // the task's own, released by its Run
	return t.Run(ctx)
}

// cleanupCtx bounds one cleanup step on a context the caller cannot cancel:
// a cancelled verification must still leave no task behind. Its clock
// starts when cleanup does, not when the run does.
func cleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

func (s *Sandbox) prepare(ctx context.Context, p *plan) (_ *Task, retErr error) {
	if p.ReportFile != "" {
		// The sandbox user must own the one file it may write; runc binds
		// it as it is.
		if err := os.Lchown(p.ReportFile, int(p.uid), int(p.gid)); err != nil {
			return nil, rmerr.Wrap(rmerr.SandboxSpec, err, "handing report file %s to uid %d", p.ReportFile, p.uid).InField("report_file")
		}
	}
	rootfs := "rootfs" // the bundle's own, created empty by containerd and removed with the task
	var copts []containerd.NewContainerOpts
	if p.Image != "" {
		img, err := s.importImage(ctx, p.Image)
		if err != nil {
			return nil, err
		}
		// A writable snapshot, not a view: runc must be able to create the
		// mount points of the binds in it. The task still sees a read-only
		// root (spec Root.Readonly), and the snapshot is removed with the
		// container.
		copts = append(copts, containerd.WithImage(img), containerd.WithNewSnapshot(p.ID, img))
	}
	etc, err := s.etcFiles(p.uid, p.gid)
	if err != nil {
		return nil, err
	}
	spec, err := ociSpec(ctx, p, rootfs, etc, s.features.RecursiveReadOnly)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxRuntime, err, "building the task spec")
	}
	initBin, lifeline, err := s.taskInit()
	if err != nil {
		return nil, err
	}
	withInit(spec, p.Timeout+initGrace, initBin, lifeline)
	if !sharedCgroup.Load() {
		spec.Linux.CgroupsPath = s.cgroup.taskPath(p.ID)
	}
	// Share this process's running shim (see keeper.go). Without a keeper
	// the run still works; it only starts and stops a shim of its own.
	s.annotate(spec, s.ensureKeeper(ctx) == nil)
	copts = append(copts,
		containerd.WithSpec(spec),
		containerd.WithRuntime(runtimeName, s.runtimeOptions),
		containerd.WithContainerLabels(map[string]string{
			labelOwner:   s.owner,
			labelCreated: time.Now().UTC().Format(time.RFC3339),
		}),
	)
	c, err := s.client.NewContainer(ctx, p.ID, copts...)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxRuntime, err, "creating container %s", p.ID)
	}
	t := &Task{s: s, p: p, c: c}
	defer func() {
		if retErr != nil {
			cctx, cancel := cleanupCtx(ctx)
			defer cancel()
			if t.stopWait != nil {
				t.stopWait()
			}
			retErr = errors.Join(retErr, s.remove(cctx, c))
		}
	}()
	t.stdout, t.stderr = newCaptureWriter(p.MaxOutput), newCaptureWriter(p.MaxOutput)
	t.stdout.observer, t.stderr.observer = p.Observer, p.Observer
	fifoDir, err := s.fifoDir()
	if err != nil {
		return nil, err
	}
	t.task, err = c.NewTask(ctx, cio.NewCreator(cio.WithStreams(nil, t.stdout, t.stderr), cio.WithFIFODir(fifoDir)), hostRootFS(p)...)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxRuntime, err, "creating task %s", p.ID)
	}
	// Wait on a context the caller cannot cancel, so the exit is observed
	// even after the caller gave up; Run's timer bounds the run.
	waitCtx, stopWait := context.WithCancel(context.WithoutCancel(ctx))
	t.stopWait = stopWait
	if t.exitC, err = t.task.Wait(waitCtx); err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxRuntime, err, "waiting for task %s", p.ID)
	}
	return t, nil
}

// ID is the task's container id (what Result.ID and Gone name).
func (t *Task) ID() string { return t.p.ID }

// Discard deletes a prepared task that will not run.
func (t *Task) Discard() error {
	var err error = rmerr.New(rmerr.SandboxRuntime, "task %s was already run or discarded", t.p.ID)
	t.once.Do(func() {
		defer t.s.inflight.Done()
		t.stopWait()
		cctx, cancel := cleanupCtx(t.s.ctx(context.Background()))
		defer cancel()
		err = t.s.remove(cctx, t.c)
		if err != nil {
			err = rmerr.Wrap(rmerr.SandboxCleanup, err, "removing container %s", t.p.ID)
		}
	})
	return err
}

// Run starts the prepared command and returns what happened (see
// Sandbox.Run).
func (t *Task) Run(ctx context.Context) (Result, error) {
	res := Result{ID: t.p.ID}
	var err error = rmerr.New(rmerr.SandboxRuntime, "task %s was already run or discarded", t.p.ID)
	t.once.Do(func() {
		defer t.s.inflight.Done()
		res, err = t.run(t.s.ctx(ctx))
	})
	return res, err
}

func (t *Task) run(ctx context.Context) (res Result, retErr error) {
	s, p, c, task := t.s, t.p, t.c, t.task
	res.ID = p.ID
	defer t.stopWait()
	taskDeleted, handedOff := false, false
	defer func() {
		if handedOff {
			return
		}
		cctx, cancel := cleanupCtx(ctx)
		defer cancel()
		var err error
		if taskDeleted && p.Image == "" {
			// The task is gone and there is no snapshot, so one call
			// instead of the client's look-ups.
			if err = s.client.ContainerService().Delete(cctx, c.ID()); err != nil && !errdefs.IsNotFound(err) {
				err = rmerr.Wrap(rmerr.SandboxCleanup, err, "removing container %s", c.ID())
			} else {
				err = nil
			}
		} else {
			err = s.remove(cctx, c)
		}
		if err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()

	start := time.Now()
	if err := task.Start(ctx); err != nil {
		return res, rmerr.Wrap(rmerr.SandboxRuntime, err, "starting task %s", p.ID)
	}
	timer := time.NewTimer(p.Timeout)
	defer timer.Stop()
	timeout := timer.C
	if outerTimerOff.Load() {
		timeout = nil
	}

	var status containerd.ExitStatus
	var cancelled error
	select {
	case status = <-t.exitC:
	case <-timeout:
		res.TimedOut = true
	case <-ctx.Done():
		cancelled = ctx.Err()
	}
	cctx, cancel := cleanupCtx(ctx)
	defer cancel()
	if res.TimedOut || cancelled != nil {
		// SIGKILL to every process of the task (runc kill --all walks the
		// cgroup), not just init: a daemonized child must not outlive it.
		if err := task.Kill(cctx, syscall.SIGKILL, containerd.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
			return res, rmerr.Wrap(rmerr.SandboxRuntime, err, "killing task %s", p.ID)
		}
		select {
		case status = <-t.exitC:
		case <-cctx.Done():
			return res, rmerr.New(rmerr.SandboxRuntime, "task %s did not exit after SIGKILL", p.ID)
		}
	}
	res.Duration = time.Since(start)
	if t := status.ExitTime(); t.After(start) {
		res.Duration = t.Sub(start)
	}
	if err := status.Error(); err != nil {
		return res, rmerr.Wrap(rmerr.SandboxRuntime, err, "reading exit status of task %s", p.ID)
	}
	res.ExitCode = int(status.ExitCode())
	// The init ended the task at its own limit (this process's timer was
	// late or off): still a timeout, recorded exactly as one ended here.
	if res.ExitCode == taskinit.ExitKilled && res.Duration >= p.Timeout {
		res.TimedOut = true
	}

	drained := make(chan struct{})
	go func() { task.IO().Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainGrace):
		res.OutputIncomplete = true
	}
	res.Stdout, res.Stderr = t.stdout.capture(), t.stderr.capture()

	// The cgroup still exists until the task is deleted; read what it
	// consumed (OOM kills, CPU, peak memory) now.
	u, err := taskUsage(cctx, task)
	if err != nil {
		return res, rmerr.Wrap(rmerr.SandboxRuntime, err, "reading the cgroup metrics of task %s", p.ID)
	}
	res.OOMKilled, res.CPU, res.MemoryPeak = u.oomKills > 0, u.cpu, int64(u.memoryBytes)
	if cancelled != nil {
		if _, err := task.Delete(cctx); err != nil && !errdefs.IsNotFound(err) {
			return res, rmerr.Wrap(rmerr.SandboxCleanup, err, "deleting task %s", p.ID)
		}
		taskDeleted = true
		return res, rmerr.Wrap(rmerr.SandboxRuntime, cancelled, "run %s cancelled; every process was killed", p.ID)
	}
	// Every process is dead and the result is read: what remains (runc
	// delete, about 20 ms, and the container record) is cleanup that need
	// not delay the caller. It runs in the background; Gone and Close wait
	// for it, so the cleanup observation never races it, and a failure is
	// reported by Close and seen by Gone.
	handedOff = true
	s.cleaning.Add(1)
	// The deadline is taken now, not in the goroutine: cleanup's clock
	// starts when the run ends.
	dctx, cancelDelete := cleanupCtx(ctx)
	go func() {
		defer s.cleaning.Done()
		defer cancelDelete()
		var err error
		if _, err = task.Delete(dctx); err != nil && !errdefs.IsNotFound(err) {
			err = rmerr.Wrap(rmerr.SandboxCleanup, err, "deleting task %s", p.ID)
		} else if err = s.client.ContainerService().Delete(dctx, c.ID()); err != nil && !errdefs.IsNotFound(err) {
			err = rmerr.Wrap(rmerr.SandboxCleanup, err, "removing container %s", c.ID())
		} else {
			err = nil
		}
		if err != nil {
			s.mu.Lock()
			s.cleanupErrs = append(s.cleanupErrs, err)
			s.mu.Unlock()
		}
	}()
	return res, nil
}

// withInit makes the task's process runmill's own binary in the init mode
// (internal/taskinit), which runs the command under limit and ends the task
// when the lifeline reports this process gone. Both are bound read-only at
// a path checkBindPath reserves; the FIFO's mode (0644, runmill's owner)
// lets the task's user read it but never hold it open for writing, which
// would keep a dead runmill's lifeline alive.
func withInit(spec *specs.Spec, limit time.Duration, initBin, lifeline string) {
	spec.Process.Args = taskinit.Args(limit, spec.Process.Args...)
	spec.Mounts = append(spec.Mounts,
		bindMount(initBin, taskinit.Path, []string{"bind", "ro", "nosuid", "nodev"}),
		bindMount(lifeline, taskinit.LifelinePath, []string{"bind", "ro", "nosuid", "nodev", "noexec"}))
}

// taskInit returns the init binary (this process's own executable: runmill
// is built static, so it runs in any root) and the lifeline FIFO, created
// and opened for writing on first use. The descriptor stays open until
// Close; when this process dies the kernel closes it, and every task's init
// reads end-of-file.
func (s *Sandbox) taskInit() (initBin, lifeline string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lifeline != nil {
		return s.initBin, s.lifeline.Name(), nil
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", "", rmerr.Wrap(rmerr.SandboxRuntime, err, "finding runmill's own binary, each task's init")
	}
	if fi, err := os.Stat(exe); err != nil {
		return "", "", rmerr.Wrap(rmerr.SandboxRuntime, err, "reading runmill's own binary")
	} else if fi.Mode()&0o001 == 0 {
		return "", "", rmerr.New(rmerr.SandboxRuntime, "runmill's binary %s is not executable by other users (mode %s); every task runs it as its init, as the task's non-root user", exe, fi.Mode().Perm()).
			WithHint("chmod a+rx %s", exe)
	}
	dir, err := s.fifoDir()
	if err != nil {
		return "", "", err
	}
	path := filepath.Join(dir, "lifeline-"+s.instance)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		return "", "", rmerr.Wrap(rmerr.SandboxRuntime, err, "creating the lifeline FIFO %s", path)
	}
	if err := os.Chmod(path, 0o644); err != nil { // past the umask
		return "", "", rmerr.Wrap(rmerr.SandboxRuntime, err, "creating the lifeline FIFO %s", path)
	}
	// Read-write, so the open never waits for a reader.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return "", "", rmerr.Wrap(rmerr.SandboxRuntime, err, "opening the lifeline FIFO %s", path)
	}
	s.initBin, s.lifeline = exe, f
	return exe, path, nil
}

// closeLifeline closes the lifeline once no task needs it (Close).
func (s *Sandbox) closeLifeline() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lifeline == nil {
		return nil
	}
	err := s.lifeline.Close()
	s.lifeline = nil
	return err
}

// usage is what a task's cgroup says it consumed.
type usage struct {
	oomKills    uint64
	cpu         time.Duration // user + system CPU time of every process
	memoryBytes uint64        // peak memory (0 where the kernel does not report it)
}

// taskUsage reads the task's cgroup; call it before the task is deleted.
func taskUsage(ctx context.Context, task containerd.Task) (usage, error) {
	m, err := task.Metrics(ctx)
	if err != nil {
		return usage{}, err
	}
	data, err := typeurl.UnmarshalAny(m.Data)
	if err != nil {
		return usage{}, err
	}
	switch v := data.(type) {
	case *v1stats.Metrics:
		return usage{oomKills: v.GetMemoryOomControl().GetOomKill(), cpu: time.Duration(v.GetCPU().GetUsage().GetTotal()),
			memoryBytes: v.GetMemory().GetUsage().GetMax()}, nil
	case *v2stats.Metrics:
		return usage{oomKills: v.GetMemoryEvents().GetOomKill(), cpu: time.Duration(v.GetCPU().GetUsageUsec()) * time.Microsecond,
			memoryBytes: v.GetMemory().GetMaxUsage()}, nil
	default:
		return usage{}, fmt.Errorf("unknown metrics type %T", data)
	}
}

// remove kills and deletes a container's task (if any) and the container.
// The container record goes only once its task is known gone: the client's
// Delete drops it whenever the task cannot be looked up, and a record
// dropped while its task lives leaves that task's shim, processes and
// mounted root behind with nothing in containerd naming them (issue #23).
// A task that cannot be removed keeps its record, for Sweep to reap.
func (s *Sandbox) remove(ctx context.Context, c containerd.Container) error {
	var errs []error
	fail := func(err error) error {
		return rmerr.Wrap(rmerr.SandboxCleanup, errors.Join(append(errs, err)...), "removing container %s", c.ID())
	}
	if task, err := c.Task(ctx, nil); err == nil {
		if err := task.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll); err != nil && !errdefs.IsNotFound(err) && !errdefs.IsFailedPrecondition(err) {
			errs = append(errs, err)
		}
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fail(err)
		}
	} else if !errdefs.IsNotFound(err) {
		return fail(err)
	}
	if err := c.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fail(err)
	}
	if len(errs) > 0 {
		return fail(nil)
	}
	return nil
}

// fifoDir is this process's directory for task FIFOs. Per process, so Sweep
// can remove the FIFOs of a dead runmill without touching a live one's.
func (s *Sandbox) fifoDir() (string, error) {
	dir := filepath.Join(s.workDir, "fifo", ownerDirName(s.owner))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", rmerr.Wrap(rmerr.SandboxRuntime, err, "creating %s", dir)
	}
	return dir, nil
}

// etcFiles returns the generated /etc files for a user, writing them once:
// a passwd entry for the task's user (some tools insist on one), and hosts
// resolving localhost without a resolver.
func (s *Sandbox) etcFiles(uid, gid uint32) ([]bind, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]uint32{uid, gid}
	dir, ok := s.etcDirs[key]
	if !ok {
		dir = filepath.Join(s.workDir, "etc", ownerDirName(s.owner), strconv.FormatUint(uint64(uid), 10)+"-"+strconv.FormatUint(uint64(gid), 10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, rmerr.Wrap(rmerr.SandboxRuntime, err, "creating %s", dir)
		}
		user, group := "sandbox", "sandbox"
		if uid == DefaultUID {
			user = "nobody"
		}
		if gid == DefaultGID {
			group = "nogroup"
		}
		files := map[string]string{
			"passwd": fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\n%s:x:%d:%d:runmill sandbox:%s:/bin/sh\n", user, uid, gid, TmpPath),
			"group":  fmt.Sprintf("root:x:0:\n%s:x:%d:\n", group, gid),
			"hosts":  "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\tsandbox\n",
		}
		for name, content := range files {
			if err := writeFileAtomic(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				return nil, rmerr.Wrap(rmerr.SandboxRuntime, err, "writing %s", name)
			}
		}
		s.etcDirs[key] = dir
	}
	return []bind{
		{Source: filepath.Join(dir, "passwd"), Destination: "/etc/passwd"},
		{Source: filepath.Join(dir, "group"), Destination: "/etc/group"},
		{Source: filepath.Join(dir, "hosts"), Destination: "/etc/hosts"},
	}, nil
}

// writeFileAtomic replaces path so a concurrent runmill never binds a
// half-written file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
