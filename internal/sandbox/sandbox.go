package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	runcoptions "github.com/containerd/containerd/api/types/runc/options"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"

	"github.com/runmill/verify/internal/procfs"
	"github.com/runmill/verify/pkg/rmerr"
)

// DefaultAddress is the system containerd's socket.
const DefaultAddress = "/run/containerd/containerd.sock"

// DefaultNamespace is the containerd namespace every runmill object lives in.
const DefaultNamespace = "runmill"

// runtimeName is the only runtime runmill drives: the runc shim, whose
// behaviour (rro, cgroup limits, kill-all) the probe knows how to measure.
const runtimeName = "io.containerd.runc.v2"

// Options say where containerd is and where runmill keeps sandbox state.
type Options struct {
	// Address of containerd's gRPC socket. Empty means the system socket
	// (DefaultAddress) and, when nothing answers there, a private containerd
	// under StateDir — at once when $RUNMILL_CONTAINERD_BIN chooses its
	// binary (ContainerdBinEnv). An explicit address that does not answer is an error:
	// the operator asked for that daemon.
	Address string
	// StateDir holds the sandbox's working files (FIFOs, generated /etc
	// files) and, when needed, the private containerd. Required.
	StateDir string
	// Namespace is the containerd namespace; DefaultNamespace when empty.
	Namespace string
}

// Sandbox runs commands in locked-down containerd tasks. It is safe for
// concurrent use; each Run is one container and one task.
type Sandbox struct {
	client    *containerd.Client
	namespace string
	address   string
	private   *daemon // nil when runmill did not start the daemon
	workDir   string
	owner     string // value of labelOwner on every container this process creates
	instance  string // distinguishes Sandboxes within one process
	features  runtimeFeatures
	// cgroup is the run's parent cgroup; every task is one below it.
	cgroup *runCgroup
	// runtimeOptions are the runc shim's options (nil: the daemon's defaults).
	runtimeOptions any

	mu       sync.Mutex
	etcDirs  map[[2]uint32]string // (uid, gid) → generated /etc files
	closed   bool
	inflight sync.WaitGroup
	// cleaning counts background task deletions (run.go); cleanupErrs
	// holds their failures until Close reports them.
	cleaning    sync.WaitGroup
	cleanupErrs []error
	imageMu     sync.Mutex      // serializes image imports
	stamped     map[string]bool // images whose use this Sandbox recorded (imageprune.go), under imageMu

	keeperMu sync.Mutex
	keeper   containerd.Container // holds the shim group open; see keeper.go

	// The task init (run.go): runmill's binary and the lifeline FIFO,
	// held open for writing while this Sandbox lives.
	initBin  string
	lifeline *os.File

	// created is every container id this Sandbox asked containerd for, in
	// order, with what it was for: CloseObserved looks for each again.
	created []createdContainer
}

type createdContainer struct{ id, role string }

// Connect reaches containerd (or starts a private one) and returns a Sandbox
// using it. It never falls back to anything weaker than a containerd task.
func Connect(ctx context.Context, o Options) (_ *Sandbox, retErr error) {
	if o.StateDir == "" {
		return nil, rmerr.New(rmerr.SandboxSpec, "sandbox state directory is empty").
			WithHint("pass the run's state directory (--out or $RUNMILL_STATE_DIR)")
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	stateDir, err := filepath.Abs(o.StateDir)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxSpec, err, "resolving state directory %s", o.StateDir)
	}
	workDir := filepath.Join(stateDir, "sandbox")
	if err := os.MkdirAll(workDir, 0o711); err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "creating %s", workDir)
	}
	owner, err := ownerID()
	if err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "identifying this process")
	}

	s := &Sandbox{
		namespace: o.Namespace,
		workDir:   workDir,
		owner:     owner,
		instance:  randomID()[len("rm-"):][:8],
		etcDirs:   map[[2]uint32]string{},
	}
	// Before any private containerd starts: on cgroup v2 runmill may have
	// to move into a leaf cgroup, which the daemon then starts in too.
	host, err := readCgroupHost(owner)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "reading this process's cgroups").
			WithHint("mount /proc and the cgroup hierarchies")
	}
	if s.cgroup, err = placeRun(host, s.instance, runtime.NumCPU()); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			s.cgroup.remove()
		}
	}()
	// What the kernel and runc support needs no daemon: asked (two runc
	// processes) while the daemon is reached or started, not after.
	features := make(chan runtimeFeatures, 1)
	go func() { features <- detectFeatures(ctx) }()
	defer func() {
		if retErr != nil {
			<-features // no runc of this call outlives it
		}
	}()
	address := o.Address
	if address == "" {
		address = DefaultAddress
	}
	// containerd's dialer keeps retrying a missing socket until its timeout;
	// a socket file that is not there is an answer already.
	c, err := (*containerd.Client)(nil), error(nil)
	if o.Address == "" && os.Getenv(ContainerdBinEnv) != "" {
		// A containerd was chosen by its binary: a system daemon answering
		// is not the one asked for.
		err = fmt.Errorf("$%s is set: %w", ContainerdBinEnv, os.ErrNotExist)
	} else if _, err = os.Stat(strings.TrimPrefix(address, "unix://")); err == nil {
		c, err = dial(ctx, address, o.Namespace, 2*time.Second)
	}
	switch {
	case err == nil:
		s.client, s.address = c, address
	case o.Address != "":
		return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "containerd at %s does not answer", address).
			WithHint("start containerd there, or omit --containerd-address to let runmill start a private one")
	default:
		systemErr := err
		d, err := startDaemon(ctx, filepath.Join(workDir, "containerd"))
		if err != nil {
			var e *rmerr.Error
			if !errors.Is(systemErr, os.ErrNotExist) && errors.As(err, &e) {
				// Say why the system containerd was passed over too.
				e.Msg += fmt.Sprintf(" (%s: %v)", address, systemErr)
			}
			return nil, err
		}
		c, err := dial(ctx, d.address, o.Namespace, 5*time.Second)
		if err != nil {
			d.stop()
			d.lock.Close()
			return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "connecting to private containerd")
		}
		s.client, s.address, s.private = c, d.address, d
		// runc's state defaults to /run/containerd/runc/<namespace> whatever
		// the daemon's own state directory: every private daemon would share
		// it. Keep it under the daemon's directory, as everything else is.
		s.runtimeOptions = &runcoptions.Options{Root: filepath.Join(d.dir, "runc")}
	}
	s.features = <-features
	return s, nil
}

// dial connects and proves the daemon answers: grpc connects lazily, so a
// client alone says nothing.
func dial(ctx context.Context, address, namespace string, timeout time.Duration) (*containerd.Client, error) {
	opts := []containerd.Opt{
		containerd.WithTimeout(timeout),
		containerd.WithDefaultRuntime(runtimeName),
	}
	if namespace != "" {
		opts = append(opts, containerd.WithDefaultNamespace(namespace))
	}
	c, err := containerd.New(address, opts...)
	if err != nil {
		return nil, err
	}
	vctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := c.Version(vctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Address is the socket of the containerd in use (the private one's when
// runmill started it).
func (s *Sandbox) Address() string { return s.address }

// Private reports whether runmill started the containerd in use.
func (s *Sandbox) Private() bool { return s.private != nil }

// Close waits for running Runs, closes the connection and stops a private
// containerd. It is idempotent.
func (s *Sandbox) Close() error {
	_, err := s.CloseObserved()
	return err
}

// Resource is one thing a Sandbox created, looked for again after its
// removal: a container (check run, sandbox probe, shim keeper), the task
// bundle containerd made for it, this process's working directories, the
// private containerd.
type Resource struct {
	// Kind is in the terminal statement's vocabulary: "container", "task"
	// (the task's bundle directories), "tempdir" (a working directory),
	// "cgroup" (the run's parent cgroup).
	Kind   string
	ID     string // container id or path
	Gone   bool
	Detail string
}

// ownedSubdirs are this process's working directories under workDir, one
// per owner (ownerDirName), removed by Close and, for a dead owner, Sweep.
var ownedSubdirs = []string{"fifo", "probe", "etc"}

// CloseObserved closes the Sandbox as Close does and reports every
// resource it created, each looked for again once removed: a container is
// gone when containerd no longer knows it, its bundle when neither of
// containerd's per-task directories exists (the symptom of issue #13 S7:
// containerd deletes the task but cannot remove a bundle rootfs that is
// not empty). The first call does the work; later calls return nothing.
func (s *Sandbox) CloseObserved() ([]Resource, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil
	}
	s.closed = true
	s.mu.Unlock()
	s.inflight.Wait()
	s.cleaning.Wait()
	s.mu.Lock()
	err := errors.Join(s.cleanupErrs...)
	created := append([]createdContainer(nil), s.created...)
	s.mu.Unlock()
	err = errors.Join(err, s.dropKeeper())
	err = errors.Join(err, s.closeLifeline())
	var out []Resource
	// This process's working directories are not leftovers: remove them
	// now, so the next run's sweep reports only what a crash left.
	for _, sub := range ownedSubdirs {
		dir := filepath.Join(s.workDir, sub, ownerDirName(s.owner))
		rerr := os.RemoveAll(dir)
		err = errors.Join(err, rerr)
		// The parent stays (empty): another live runmill may be creating
		// its own directory in it right now.
		out = append(out, observePath("tempdir", dir, "this process's sandbox "+sub+" directory"))
	}
	ctx, cancel := context.WithTimeout(s.ctx(context.Background()), cleanupTimeout)
	defer cancel()
	for _, c := range created {
		gone, gerr := s.containerGone(ctx, c.id)
		detail := c.role
		if gerr != nil {
			detail += ": " + gerr.Error()
		}
		out = append(out, Resource{Kind: "container", ID: c.id, Gone: gone, Detail: detail})
	}
	roots := s.bundleRoots(ctx)
	err = errors.Join(err, s.client.Close())
	if s.private != nil {
		err = errors.Join(err, s.private.stop())
	}
	// Bundles are looked for once the daemon is stopped: nothing it does
	// later can then still be pending.
	bundlesGone := true
	for _, c := range created {
		r := observeBundle(roots, s.namespace, c)
		bundlesGone = bundlesGone && r.Gone
		out = append(out, r)
	}
	if s.private != nil {
		out = append(out, s.private.tidy(bundlesGone)...)
	}
	// Every task and the keeper are deleted (runc removed their cgroups).
	r, cerr := s.cgroup.remove()
	out = append(out, r)
	return out, errors.Join(err, cerr)
}

// track records a container id before containerd is asked for it, so one
// whose creation fails halfway is looked for too.
func (s *Sandbox) track(id, role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created = append(s.created, createdContainer{id, role})
}

// containerGone is Gone without waiting for this process's deletions
// (CloseObserved has already waited for them).
func (s *Sandbox) containerGone(ctx context.Context, id string) (bool, error) {
	_, err := s.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, rmerr.Wrap(rmerr.SandboxRuntime, err, "looking up container %s", id)
	}
	return false, nil
}

// runtimeV2 is the directory containerd's runtime v2 keeps task bundles
// in, under both its state and its root directory.
const runtimeV2 = "io.containerd.runtime.v2.task"

// bundleRoots are the directories a task's bundle lives under: exactly the
// private daemon's; for another daemon its state directory is taken to be
// the socket's directory (containerd's default layout: /run/containerd) or
// its state/ (the layout of a private daemon of another runmill), and its
// root is read from the metadata plugin's exported database path.
// Roots that cannot be found are left out; observeBundle then says so.
func (s *Sandbox) bundleRoots(ctx context.Context) []string {
	if s.private != nil {
		return []string{filepath.Join(s.private.dir, "state", runtimeV2), filepath.Join(s.private.dir, "root", runtimeV2)}
	}
	var roots []string
	// The socket's directory is the state directory in containerd's
	// default layout, and holds it as state/ in a private daemon's.
	sock := filepath.Dir(strings.TrimPrefix(s.address, "unix://"))
	for _, d := range []string{filepath.Join(sock, runtimeV2), filepath.Join(sock, "state", runtimeV2)} {
		if isDir(d) {
			roots = append(roots, d)
		}
	}
	if ps, err := s.client.IntrospectionService().Plugins(ctx); err == nil {
		for _, p := range ps.Plugins {
			if path := p.Exports["path"]; p.Type == "io.containerd.metadata.v1" && path != "" {
				if d := filepath.Join(filepath.Dir(filepath.Dir(path)), runtimeV2); isDir(d) {
					roots = append(roots, d)
				}
			}
		}
	}
	return roots
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func observeBundle(roots []string, namespace string, c createdContainer) Resource {
	r := Resource{Kind: "task", ID: c.id, Gone: true, Detail: "task bundle of the " + c.role}
	if len(roots) == 0 {
		r.Gone, r.Detail = false, r.Detail+": containerd's bundle directories could not be located, so it was not observed gone"
		return r
	}
	for _, root := range roots {
		dir := filepath.Join(root, namespace, c.id)
		if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
			r.Gone = false
			r.Detail += ": still present at " + dir
			if err != nil {
				r.Detail += " (" + err.Error() + ")"
			}
			return r
		}
	}
	r.Detail += ", looked for under " + strings.Join(roots, " and ")
	return r
}

func observePath(kind, path, detail string) Resource {
	_, err := os.Lstat(path)
	gone := errors.Is(err, os.ErrNotExist)
	if !gone && err != nil {
		detail += ": " + err.Error()
	}
	return Resource{Kind: kind, ID: path, Gone: gone, Detail: detail}
}

// hostRootFS is the root of a task without an image: an empty tmpfs the
// shim mounts on the bundle's rootfs directory and unmounts when the task
// is deleted. runc creates the mount points of the binds (etc, usr,
// .runmill, …) in the root; were that the bundle's plain directory, they
// would stay in it, and containerd, which removes the rootfs with rmdir,
// would leave every bundle behind ("failed to remove bundle rootfs:
// directory not empty", issue #13 S7). The task still sees it read-only
// (spec Root.Readonly).
func hostRootFS(p *plan) []containerd.NewTaskOpts {
	if p.Image != "" {
		return nil // the snapshot's mounts are the root, and go with it
	}
	return []containerd.NewTaskOpts{containerd.WithRootFS([]mount.Mount{{
		Type: "tmpfs", Source: "tmpfs",
		Options: []string{"nosuid", "nodev", "mode=0755", "size=1m", "nr_inodes=4096"},
	}})}
}

// begin registers a Run so Close waits for its cleanup.
func (s *Sandbox) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return rmerr.New(rmerr.SandboxRuntime, "sandbox is closed")
	}
	s.inflight.Add(1)
	return nil
}

func (s *Sandbox) ctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, s.namespace)
}

// ownerID names this process in a way that survives PID reuse and PID
// namespaces: a container labelled with it belongs to a live runmill only if
// a process with that PID and start time exists in the same PID namespace.
func ownerID() (string, error) {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "", err
	}
	start, err := procfs.Start(os.Getpid())
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s/%d/%s", ns, os.Getpid(), start), nil
}

// Gone reports whether the container id no longer exists in containerd: a
// fresh look, so a run's cleanup observation is observed, not assumed from
// a successful delete call.
func (s *Sandbox) Gone(ctx context.Context, id string) (bool, error) {
	s.cleaning.Wait() // this process's own deletions first: observe, do not race
	_, err := s.client.LoadContainer(s.ctx(ctx), id)
	if errdefs.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, rmerr.Wrap(rmerr.SandboxRuntime, err, "looking up container %s", id)
	}
	return false, nil
}

// SeesHostMounts reports whether the containerd in use (and so the shims and
// runc it starts) lives in this process's mount namespace: only then does a
// mount runmill makes on the host (a layered checkout) appear in a task that
// binds its path, instead of the empty directory beneath it. A daemon whose
// process cannot be identified counts as not sharing.
func (s *Sandbox) SeesHostMounts() (bool, error) {
	pid := 0
	if s.private != nil {
		pid = s.private.cmd.Process.Pid
	} else {
		var err error
		if pid, err = socketPeer(strings.TrimPrefix(s.address, "unix://")); err != nil {
			return false, err
		}
	}
	own, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return false, err
	}
	theirs, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/mnt")
	if err != nil {
		return false, fmt.Errorf("reading the mount namespace of containerd (pid %d): %w", pid, err)
	}
	return own == theirs, nil
}

// socketPeer returns the pid of the process listening on a unix socket, as
// the kernel reports it (SO_PEERCRED); 0 from another pid namespace.
func socketPeer(path string) (int, error) {
	conn, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	raw, err := conn.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, credErr
	}
	if cred.Pid <= 0 {
		return 0, fmt.Errorf("the process behind %s is in another pid namespace", path)
	}
	return int(cred.Pid), nil
}
