package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/runmill/verify/internal/bounded"
	"github.com/runmill/verify/pkg/rmerr"
)

// daemon is a private containerd that runmill started and will stop. It lives
// entirely under one directory (root, state, sockets, config, log), so it
// neither sees nor disturbs a system containerd.
type daemon struct {
	dir     string
	address string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has been reaped
	waitErr error         // valid after exited is closed
	lock    *os.File      // flock held for the daemon's lifetime
}

// maxSocketPath is sizeof(sockaddr_un.sun_path) minus the NUL on Linux; the
// ttrpc socket adds ".ttrpc" to the gRPC one.
const maxSocketPath = 107

// daemonPath is the PATH containerd and its shims see. The daemon gets this
// and nothing else from runmill's environment: tokens and keys in runmill's
// environment have no business in the runtime's.
const daemonPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ContainerdBinEnv names the containerd executable a private daemon runs
// instead of the first one on daemonPath: how the tests run the sandbox
// against a containerd 2.x built apart from the distribution's, and how
// an operator picks a containerd installed outside /usr. Its directory
// comes first on the daemon's PATH, so the shim (and a runc) beside it
// are the ones that daemon starts, not the distribution's.
const ContainerdBinEnv = "RUNMILL_CONTAINERD_BIN"

// daemonSearchPath is the PATH of a private daemon: daemonPath, after the
// directory of $RUNMILL_CONTAINERD_BIN when that is set.
func daemonSearchPath() (string, error) {
	bin := os.Getenv(ContainerdBinEnv)
	if bin == "" {
		return daemonPath, nil
	}
	if !filepath.IsAbs(bin) {
		return "", rmerr.New(rmerr.SandboxUnavailable, "%s=%s is not an absolute path", ContainerdBinEnv, bin).
			WithHint("set %s to the absolute path of a containerd executable, or unset it", ContainerdBinEnv)
	}
	if fi, err := os.Stat(bin); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", rmerr.New(rmerr.SandboxUnavailable, "%s=%s is not an executable file", ContainerdBinEnv, bin).
			WithHint("set %s to the absolute path of a containerd executable, or unset it", ContainerdBinEnv)
	}
	return filepath.Dir(bin) + string(filepath.ListSeparator) + daemonPath, nil
}

// startDaemon starts a private containerd under dir and waits until it answers.
func startDaemon(ctx context.Context, dir string) (*daemon, error) {
	if os.Geteuid() != 0 {
		return nil, rmerr.New(rmerr.SandboxUnavailable, "no containerd answers and a private one needs root").
			WithHint("run as root, or pass --containerd-address of a running containerd")
	}
	bin, path, err := daemonBinary()
	if err != nil {
		return nil, err
	}
	if _, err := lookDaemonPath("containerd-shim-runc-v2"); err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "containerd is installed but its runc shim is not").
			WithHint("install the package that ships containerd-shim-runc-v2 (Debian: containerd), or put it beside $%s", ContainerdBinEnv)
	}
	if _, err := lookDaemonPath("runc"); err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "containerd is installed but runc is not").
			WithHint("install runc (Debian: apt-get install runc)")
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "resolving the private containerd directory")
	}
	address := filepath.Join(dir, "containerd.sock")
	if len(address)+len(".ttrpc") > maxSocketPath {
		return nil, rmerr.New(rmerr.SandboxUnavailable, "private containerd socket path %s is too long for a unix socket", address).
			WithHint("use a shorter state directory (at most %d bytes for the socket path)", maxSocketPath-len(".ttrpc"))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "creating %s", dir)
	}
	lock, err := lockFile(filepath.Join(dir, "lock"))
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			lock.Close()
		}
	}()

	// Under the lock nothing else owns these: a socket here is a leftover of
	// a daemon that died with its runmill (see Pdeathsig below).
	for _, s := range []string{address, address + ".ttrpc"} {
		if err := os.Remove(s); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "removing stale socket %s", s)
		}
	}
	version, err := keptConfigVersion(ctx, bin, path, filepath.Join(dir, "config-version"))
	if err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "config.toml")
	cf, err := createFresh(config)
	if err == nil {
		_, err = cf.Write(daemonConfig(version, dir, address))
		err = errors.Join(err, cf.Close())
	}
	if err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "writing %s", config)
	}
	logPath := filepath.Join(dir, "containerd.log")
	logFile, err := createFresh(logPath)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "opening %s", logPath)
	}
	defer logFile.Close() // the child has its own descriptor

	d := &daemon{dir: dir, address: address, exited: make(chan struct{}), lock: lock}
	d.cmd = exec.Command(bin, "--config", config)
	d.cmd.Env = []string{"PATH=" + path}
	d.cmd.Dir = dir
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	d.cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C on runmill's terminal must not stop the
		// daemon before runmill has killed and deleted its tasks.
		Setpgid: true,
		// If runmill is killed (-9), the daemon goes with it instead of
		// lingering unowned; the next run's Sweep removes the tasks it left.
		Pdeathsig: syscall.SIGKILL,
	}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the *thread* that forked the child exits, not
		// the process (golang/go#27505), and the Go runtime may retire
		// threads. Keep this goroutine locked to its thread until the daemon
		// has been reaped; a locked goroutine's exit then ends the thread.
		// This is prctl(PR_SET_PDEATHSIG)'s documented semantics, not a bug
		// due for a fix (the issue only asks Go to document it), so the lock
		// stays for as long as the daemon is started with Pdeathsig.
		runtime.LockOSThread()
		if err := d.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		d.waitErr = d.cmd.Wait()
		close(d.exited)
	}()
	if err := <-started; err != nil {
		return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "starting %s", bin)
	}
	if err := d.waitReady(ctx, 15*time.Second); err != nil {
		d.stop()
		return nil, err
	}
	ok = true
	return d, nil
}

// waitReady polls the socket until containerd answers a Version call.
func (d *daemon) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(d.address); err == nil {
			c, err := dial(ctx, d.address, "", 2*time.Second)
			if err == nil {
				c.Close()
				return nil
			}
		}
		select {
		case <-d.exited:
			return rmerr.Wrap(rmerr.SandboxUnavailable, d.waitErr, "private containerd exited during startup: %s", d.logTail()).
				WithHint("see %s", filepath.Join(d.dir, "containerd.log"))
		case <-ctx.Done():
			return rmerr.Wrap(rmerr.SandboxUnavailable, ctx.Err(), "waiting for private containerd")
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return rmerr.New(rmerr.SandboxUnavailable, "private containerd did not answer within %s: %s", limit, d.logTail()).
				WithHint("see %s", filepath.Join(d.dir, "containerd.log"))
		}
	}
}

// stop asks the daemon to exit and kills it if it does not. Shims and their
// tasks are separate processes and survive either way, which is why Close
// deletes every task first and Sweep exists for the case it could not.
func (d *daemon) stop() error {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return nil
	case <-time.After(10 * time.Second):
	}
	_ = d.cmd.Process.Kill()
	<-d.exited
	return rmerr.New(rmerr.SandboxUnavailable, "private containerd ignored SIGTERM for 10s and was killed")
}

func (d *daemon) logTail() string {
	b, err := os.ReadFile(filepath.Join(d.dir, "containerd.log"))
	if err != nil {
		return "(no log)"
	}
	b = bytes.TrimSpace(b)
	if i := len(b) - 2000; i > 0 {
		b = b[i:]
	}
	return string(b)
}

// configVersion is the configuration format bin reads natively: the
// version line of its `containerd config default` (2 for containerd 1.x,
// 3 for 2.0 to 2.3, 4 from 2.4 on). A daemon given an older format
// migrates it at every start and logs a warning; given a newer one it
// refuses to start.
func configVersion(ctx context.Context, bin, path string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "config", "default")
	cmd.Env, cmd.Dir = []string{"PATH=" + path}, "/"
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return 0, rmerr.Wrap(rmerr.SandboxUnavailable, err, "running %s config default", bin).
			WithHint("check that %s is a containerd executable for this machine (containerd 1.6 or later)", bin)
	}
	v, ok := parseConfigVersion(out)
	if !ok {
		return 0, rmerr.New(rmerr.SandboxUnavailable, "%s config default names no configuration version: %q", bin, clip(out)).
			WithHint("point runmill at containerd 1.6 or later ($%s, or the first containerd on %s)", ContainerdBinEnv, daemonPath)
	}
	return v, nil
}

// keptConfigVersion is configVersion of bin, kept in the file kept with
// the identity of the executable it was read from (its path, device,
// inode, size, modification and change times): `containerd config default`
// starts a whole containerd, 70–110 ms before the private daemon itself can
// start, in every verification, for an answer that changes only with the
// binary. A kept answer whose identity differs (containerd upgraded,
// replaced, touched) is asked again; a file that cannot be written only
// costs the next run the question.
func keptConfigVersion(ctx context.Context, bin, path, kept string) (int, error) {
	id, idErr := executableIdentity(bin)
	if idErr == nil {
		// Read as every state-dir file is: a FIFO or link planted there is
		// refused, never waited on or followed.
		if b, err := bounded.ReadFile(kept, 4096); err == nil {
			if key, v, ok := strings.Cut(strings.TrimSpace(string(b)), "\n"); ok && key == id {
				if n, err := strconv.Atoi(v); err == nil && n >= 2 {
					return n, nil
				}
			}
		}
	}
	version, err := configVersion(ctx, bin, path)
	if err != nil {
		return 0, err
	}
	if idErr == nil {
		tmp := kept + ".new"
		if f, err := createFresh(tmp); err == nil {
			_, err = f.WriteString(id + "\n" + strconv.Itoa(version) + "\n")
			if errors.Join(err, f.Close()) == nil {
				_ = os.Rename(tmp, kept)
			} else {
				os.Remove(tmp)
			}
		}
	}
	return version, nil
}

// executableIdentity names the file bin resolves to as the kernel sees it
// now: a changed, replaced or touched binary has another identity (a
// change time cannot be set back).
func executableIdentity(bin string) (string, error) {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "", err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(real, &st); err != nil {
		return "", err
	}
	return fmt.Sprintf("%q dev %d ino %d size %d mtime %d.%09d ctime %d.%09d", real, st.Dev, st.Ino, st.Size,
		st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec), nil
}

// parseConfigVersion reads the top-level "version = N" of a containerd
// configuration.
func parseConfigVersion(toml []byte) (int, bool) {
	for _, line := range strings.Split(string(toml), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != "version" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 2 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// daemonConfig is the configuration of a private daemon in format version
// (configVersion): 2 for containerd 1.x; 3 for 2.0 to 2.3, where plugins
// have 2.x names; 4 from 2.4 on, where the sockets are server plugins' and
// a grpc plugin without an address would take the system socket. A newer
// format than 4 gets a version 4 file, which such a daemon migrates.
// Plugins runmill never uses are disabled: CRI alone would add seconds of
// startup and CNI state; the exotic snapshotters only log noise; NRI
// (enabled by default in 2.x) would listen on the host-wide
// /var/run/nri/nri.sock, which no private daemon may claim.
func daemonConfig(version int, dir, address string) []byte {
	disabled := []string{
		"io.containerd.grpc.v1.cri",
		"io.containerd.snapshotter.v1.aufs",
		"io.containerd.snapshotter.v1.btrfs",
		"io.containerd.snapshotter.v1.devmapper",
		"io.containerd.snapshotter.v1.zfs",
		"io.containerd.tracing.processor.v1.otlp",
		"io.containerd.internal.v1.tracing",
	}
	if version >= 3 {
		disabled = []string{
			"io.containerd.grpc.v1.cri",
			"io.containerd.cri.v1.images",
			"io.containerd.cri.v1.runtime",
			"io.containerd.podsandbox.controller.v1.podsandbox",
			"io.containerd.nri.v1.nri",
			"io.containerd.snapshotter.v1.blockfile",
			"io.containerd.snapshotter.v1.btrfs",
			"io.containerd.snapshotter.v1.devmapper",
			"io.containerd.snapshotter.v1.erofs",
			"io.containerd.snapshotter.v1.zfs",
			"io.containerd.tracing.processor.v1.otlp",
			"io.containerd.internal.v1.tracing",
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "version = %d\nroot = %q\nstate = %q\ndisabled_plugins = [\n", min(version, 4), filepath.Join(dir, "root"), filepath.Join(dir, "state"))
	for _, p := range disabled {
		fmt.Fprintf(&b, "  %q,\n", p)
	}
	b.WriteString("]\n\n[debug]\n  level = \"warn\"\n\n")
	if version >= 4 {
		fmt.Fprintf(&b, "[plugins.\"io.containerd.server.v1.grpc\"]\n  address = %q\n\n", address)
		fmt.Fprintf(&b, "[plugins.\"io.containerd.server.v1.ttrpc\"]\n  address = %q\n\n", address+".ttrpc")
	} else {
		fmt.Fprintf(&b, "[grpc]\n  address = %q\n\n[ttrpc]\n  address = %q\n\n[metrics]\n  address = \"\"\n\n", address, address+".ttrpc")
	}
	fmt.Fprintf(&b, "[plugins.\"io.containerd.internal.v1.opt\"]\n  path = %q\n", filepath.Join(dir, "opt"))
	return []byte(b.String())
}

// lockFile takes an exclusive, non-blocking flock on path. The owner removes
// the file when it is done (tidy), so a lock taken on a file that was
// meanwhile unlinked or replaced is dropped and taken again on the file the
// path now names: two runmills never both hold "the" lock.
func lockFile(path string) (*os.File, error) {
	for range 10 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "opening %s", path)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			return nil, rmerr.Wrap(rmerr.SandboxUnavailable, err, "another runmill owns the private containerd under %s", filepath.Dir(path)).
				WithHint("wait for it to finish, or use a different state directory")
		}
		var held, named syscall.Stat_t
		if syscall.Fstat(int(f.Fd()), &held) == nil && syscall.Stat(path, &named) == nil &&
			held.Dev == named.Dev && held.Ino == named.Ino {
			return f, nil
		}
		f.Close()
	}
	return nil, rmerr.New(rmerr.SandboxUnavailable, "the lock %s keeps being replaced", path).
		WithHint("another runmill is starting and stopping private containerds under %s; use a different state directory", filepath.Dir(path))
}

// createFresh creates path anew (mode 0600) for writing, replacing what a
// dead run left there. An open that truncates in place would follow a
// symlink, and wait forever on a FIFO planted at the path (for a reader
// that never comes, deaf to SIGTERM): whatever is there is removed, and
// the file is created exclusively, never following a link.
func createFresh(path string) (*os.File, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
}

// tidy removes what only a running daemon needs (sockets, config, its
// runc state and plugin directories, the lock) once it has stopped, and
// reports each path observed gone. root/ stays: it is the image store, a
// cache keyed by content digest. state/ goes only when every task bundle
// in it is gone (bundlesGone): a remaining bundle is a leftover the next
// Sweep must still find, not something to erase unreported. The log goes
// only when everything else did; otherwise it is what the operator reads.
func (d *daemon) tidy(bundlesGone bool) []Resource {
	var out []Resource
	rm := func(path, detail string, all bool) {
		var err error
		if all {
			err = os.RemoveAll(path)
		} else {
			err = os.Remove(path)
		}
		r := observePath("tempdir", path, detail)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			r.Detail += ": " + err.Error()
		}
		out = append(out, r)
	}
	rm(d.address, "private containerd socket", false)
	rm(d.address+".ttrpc", "private containerd ttrpc socket", false)
	rm(filepath.Join(d.dir, "config.toml"), "private containerd configuration", false)
	rm(filepath.Join(d.dir, "opt"), "private containerd opt directory", true)
	// runc removes each task's state itself; what is left is empty
	// directories, and anything else is a leftover to report.
	runc := filepath.Join(d.dir, "runc")
	removeEmptyDirs(runc)
	r := observePath("tempdir", runc, "runc state of the private containerd's tasks")
	if !r.Gone {
		r.Detail += ": not empty, a task's runc state remains"
	}
	out = append(out, r)
	if bundlesGone {
		rm(filepath.Join(d.dir, "state"), "private containerd state directory", true)
	}
	clean := true
	for _, r := range out {
		clean = clean && r.Gone
	}
	if clean && bundlesGone {
		// Nothing to diagnose. containerd 1.6 to 2.1.0 logs a warning for
		// every task deleted from a shared shim ("cleaning up after shim
		// disconnected"), so "the log is empty" is no test of that.
		// containerd/containerd#11815 (merged May 2025, backported to
		// 2.1.x, in 2.2) logs it at info: once the oldest containerd runmill
		// supports has it, a clean run's log (level warn) is empty and this
		// removal can become a check that it is.
		_ = os.Remove(filepath.Join(d.dir, "containerd.log"))
	}
	lock := filepath.Join(d.dir, "lock")
	_ = os.Remove(lock) // still held: no one can take it between here and Close
	d.lock.Close()
	out = append(out, observePath("tempdir", lock, "private containerd lock"))
	return out
}

// removeEmptyDirs removes dir and every directory below it that holds
// nothing but empty directories; it never removes a file.
func removeEmptyDirs(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			removeEmptyDirs(filepath.Join(dir, e.Name()))
		}
	}
	_ = os.Remove(dir)
}

// daemonBinary is the containerd a private daemon runs and the PATH it
// runs with: $RUNMILL_CONTAINERD_BIN, else the first containerd on
// daemonPath.
func daemonBinary() (bin, path string, err error) {
	if path, err = daemonSearchPath(); err != nil {
		return "", "", err
	}
	if bin = os.Getenv(ContainerdBinEnv); bin != "" {
		return bin, path, nil
	}
	if bin, err = lookDaemonPath("containerd"); err != nil {
		return "", "", rmerr.Wrap(rmerr.SandboxUnavailable, err, "no containerd answers and none is installed").
			WithHint("install containerd and runc (Debian: apt-get install containerd runc), set $%s, or pass --containerd-address", ContainerdBinEnv)
	}
	return bin, path, nil
}

// lookDaemonPath finds an executable on the PATH a private daemon and its
// shims will use (daemonSearchPath), which is not necessarily runmill's own.
func lookDaemonPath(name string) (string, error) {
	path, err := daemonSearchPath()
	if err != nil {
		return "", err
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}
