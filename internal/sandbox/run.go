package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	v1stats "github.com/containerd/cgroups/v3/cgroup1/stats"
	v2stats "github.com/containerd/cgroups/v3/cgroup2/stats"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	"github.com/containerd/typeurl/v2"

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
)

// Run runs spec.Command in a fresh task and returns what happened. The
// container and task are deleted before Run returns, whatever happened. An
// error means no trustworthy result exists (invalid spec, runtime failure,
// ctx cancelled); it is never returned for the command's own failure.
func (s *Sandbox) Run(ctx context.Context, spec Spec) (Result, error) {
	if err := s.begin(); err != nil {
		return Result{}, err
	}
	defer s.inflight.Done()
	p, err := spec.validate()
	if err != nil {
		return Result{}, err
	}
	return s.run(s.ctx(ctx), p)
}

func (s *Sandbox) run(ctx context.Context, p *plan) (res Result, retErr error) {
	res.ID = p.ID
	if p.ReportFile != "" {
		// The sandbox user must own the one file it may write; runc binds
		// it as it is.
		if err := os.Lchown(p.ReportFile, int(p.uid), int(p.gid)); err != nil {
			return res, rmerr.Wrap(rmerr.SandboxSpec, err, "handing report file %s to uid %d", p.ReportFile, p.uid).InField("report_file")
		}
	}
	rootfs := "rootfs" // the bundle's own, created empty by containerd and removed with the task
	var copts []containerd.NewContainerOpts
	if p.Image != "" {
		img, err := s.importImage(ctx, p.Image)
		if err != nil {
			return res, err
		}
		// A writable snapshot, not a view: runc must be able to create the
		// mount points of the binds in it. The task still sees a read-only
		// root (spec Root.Readonly), and the snapshot is removed with the
		// container.
		copts = append(copts, containerd.WithImage(img), containerd.WithNewSnapshot(p.ID, img))
	}
	etc, err := s.etcFiles(p.uid, p.gid)
	if err != nil {
		return res, err
	}
	spec, err := ociSpec(ctx, p, rootfs, etc, s.features.RecursiveReadOnly)
	if err != nil {
		return res, rmerr.Wrap(rmerr.SandboxRuntime, err, "building the task spec")
	}
	// Share this process's running shim (see keeper.go). Without a keeper
	// the run still works; it only starts and stops a shim of its own.
	if s.ensureKeeper(ctx) == nil {
		spec.Annotations = map[string]string{shimGroupAnnotation: s.shimGroup()}
	}
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
		return res, rmerr.Wrap(rmerr.SandboxRuntime, err, "creating container %s", p.ID)
	}
	// Cleanup runs on a context the caller cannot cancel: a cancelled
	// verification must still leave no task behind. Its clock starts when
	// cleanup does, not when the run does.
	detached := context.WithoutCancel(ctx)
	cleanupCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(detached, cleanupTimeout)
	}
	taskDeleted := false
	defer func() {
		cctx, cancel := cleanupCtx()
		defer cancel()
		var err error
		if taskDeleted && p.Image == "" {
			// The common path: the task is gone and there is no snapshot,
			// so one call instead of the client's look-ups.
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

	stdout, stderr := newCaptureWriter(p.MaxOutput), newCaptureWriter(p.MaxOutput)
	stdout.observer, stderr.observer = p.Observer, p.Observer
	fifoDir, err := s.fifoDir()
	if err != nil {
		return res, err
	}
	task, err := c.NewTask(ctx, cio.NewCreator(cio.WithStreams(nil, stdout, stderr), cio.WithFIFODir(fifoDir)))
	if err != nil {
		return res, rmerr.Wrap(rmerr.SandboxRuntime, err, "creating task %s", p.ID)
	}
	// Wait on a context the caller cannot cancel, so the exit is observed
	// even after the caller gave up; the timer below bounds the run.
	waitCtx, cancelWait := context.WithCancel(detached)
	defer cancelWait()
	exitC, err := task.Wait(waitCtx)
	if err != nil {
		return res, rmerr.Wrap(rmerr.SandboxRuntime, err, "waiting for task %s", p.ID)
	}
	start := time.Now()
	if err := task.Start(ctx); err != nil {
		return res, rmerr.Wrap(rmerr.SandboxRuntime, err, "starting task %s", p.ID)
	}
	timer := time.NewTimer(p.Timeout)
	defer timer.Stop()

	var status containerd.ExitStatus
	var cancelled error
	select {
	case status = <-exitC:
	case <-timer.C:
		res.TimedOut = true
	case <-ctx.Done():
		cancelled = ctx.Err()
	}
	cctx, cancel := cleanupCtx()
	defer cancel()
	if res.TimedOut || cancelled != nil {
		// SIGKILL to every process of the task (runc kill --all walks the
		// cgroup), not just init: a daemonized child must not outlive it.
		if err := task.Kill(cctx, syscall.SIGKILL, containerd.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
			return res, rmerr.Wrap(rmerr.SandboxRuntime, err, "killing task %s", p.ID)
		}
		select {
		case status = <-exitC:
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

	drained := make(chan struct{})
	go func() { task.IO().Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainGrace):
		res.OutputIncomplete = true
	}
	res.Stdout, res.Stderr = stdout.capture(), stderr.capture()

	// The cgroup still exists until the task is deleted; read what it
	// consumed (OOM kills, CPU, peak memory) now.
	u, err := taskUsage(cctx, task)
	if err != nil {
		return res, rmerr.Wrap(rmerr.SandboxRuntime, err, "reading the cgroup metrics of task %s", p.ID)
	}
	res.OOMKilled, res.CPU, res.MemoryPeak = u.oomKills > 0, u.cpu, int64(u.memoryBytes)
	if _, err := task.Delete(cctx); err != nil && !errdefs.IsNotFound(err) {
		return res, rmerr.Wrap(rmerr.SandboxCleanup, err, "deleting task %s", p.ID)
	}
	taskDeleted = true
	if cancelled != nil {
		return res, rmerr.Wrap(rmerr.SandboxRuntime, cancelled, "run %s cancelled; every process was killed", p.ID)
	}
	return res, nil
}

// oomKills returns how many processes the task's memory cgroup OOM-killed.
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
func (s *Sandbox) remove(ctx context.Context, c containerd.Container) error {
	var errs []error
	if task, err := c.Task(ctx, nil); err == nil {
		if err := task.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll); err != nil && !errdefs.IsNotFound(err) && !errdefs.IsFailedPrecondition(err) {
			errs = append(errs, err)
		}
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, err)
		}
	} else if !errdefs.IsNotFound(err) {
		errs = append(errs, err)
	}
	if err := c.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return rmerr.Wrap(rmerr.SandboxCleanup, err, "removing container %s", c.ID())
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
		dir = filepath.Join(s.workDir, "etc", strconv.FormatUint(uint64(uid), 10)+"-"+strconv.FormatUint(uint64(gid), 10))
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
