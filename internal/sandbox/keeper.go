package sandbox

import (
	"context"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"

	"github.com/runmill/verify/pkg/rmerr"
)

// shimGroupAnnotation makes the runc shim serve every container carrying
// the same value from one shim process (containerd's
// cmd/containerd-shim-runc-v2/manager groupLabels, in 1.6 and 2.x alike).
const shimGroupAnnotation = "io.containerd.runc.v2.group"

// A runc shim exits when its last container is deleted, so each run would
// pay for starting and stopping one. The keeper is a container whose task
// is created but never started: it holds this process's shim group open,
// and every run then reuses the running shim. It runs nothing (runc init
// waits on its exec FIFO) under the same spec as a check.
//
// Both names carry the Sandbox's instance nonce: two Sandboxes in one
// process must not share (and close) each other's keeper.
func (s *Sandbox) shimGroup() string { return "runmill-" + ownerDirName(s.owner) + "-" + s.instance }

func (s *Sandbox) keeperID() string {
	return "runmill-keeper-" + ownerDirName(s.owner) + "-" + s.instance
}

// ensureKeeper creates the keeper once. A failure is not fatal to runs (they
// start their own shim, only slower), so it is reported to the caller to
// decide; Run ignores it.
func (s *Sandbox) ensureKeeper(ctx context.Context) error {
	s.keeperMu.Lock()
	defer s.keeperMu.Unlock()
	if s.keeper != nil {
		return nil
	}
	p, err := Spec{ID: s.keeperID(), Command: "exit 0"}.validate()
	if err != nil {
		return err
	}
	etc, err := s.etcFiles(p.uid, p.gid)
	if err != nil {
		return err
	}
	spec, err := ociSpec(ctx, p, "rootfs", etc, s.features.RecursiveReadOnly)
	if err != nil {
		return err
	}
	s.annotate(spec, true)
	spec.Linux.CgroupsPath = s.cgroup.taskPath(p.ID)
	s.track(p.ID, "shim keeper")
	c, err := s.client.NewContainer(ctx, p.ID,
		containerd.WithSpec(spec),
		containerd.WithRuntime(runtimeName, s.runtimeOptions),
		containerd.WithContainerLabels(map[string]string{labelOwner: s.owner, labelCreated: time.Now().UTC().Format(time.RFC3339)}),
	)
	if err != nil {
		return rmerr.Wrap(rmerr.SandboxRuntime, err, "creating shim keeper")
	}
	if _, err := c.NewTask(ctx, cio.NullIO, hostRootFS(p)...); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_ = s.remove(cctx, c)
		return rmerr.Wrap(rmerr.SandboxRuntime, err, "creating shim keeper task")
	}
	s.keeper = c
	return nil
}

// dropKeeper deletes the keeper; the shim exits with it.
func (s *Sandbox) dropKeeper() error {
	s.keeperMu.Lock()
	defer s.keeperMu.Unlock()
	if s.keeper == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.ctx(context.Background()), cleanupTimeout)
	defer cancel()
	err := s.remove(ctx, s.keeper)
	s.keeper = nil
	return err
}

// Warm starts the shared shim now (creating its keeper), so the first Run
// or Probe does not pay for it; call it while doing other work. An error
// only means runs will each start a shim of their own.
func (s *Sandbox) Warm(ctx context.Context) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.inflight.Done()
	return s.ensureKeeper(s.ctx(ctx))
}

// Idle releases the shared shim when no run is expected for now (the end
// of a verification's check runs), off the path of what follows; a later
// Run starts it again.
func (s *Sandbox) Idle() error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.inflight.Done()
	return s.dropKeeper()
}
