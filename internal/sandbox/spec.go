package sandbox

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/runmill/verify/internal/taskinit"
	"github.com/runmill/verify/pkg/rmerr"
)

// View is a host directory (Source) bound read-only at Destination.
type View struct {
	Source, Destination string
}

// Spec is one command to run in a fresh task. Everything not granted here is
// denied: no network beyond loopback, no writable path but ReportFile, TMPDIR
// and /dev/shm, no capability, no inherited environment.
type Spec struct {
	// ID names the container; a random one when empty. It must be unique
	// among live runs.
	ID string
	// Command is run by /bin/sh -c.
	Command string
	// Dir is the working directory inside the task (absolute); TmpPath when empty.
	Dir string
	// Env is the task's exact environment ("KEY=value"); nothing is
	// inherited from runmill. The caller builds it from an allow-list. The
	// sandbox adds the variables it owns (SandboxEnvKeys) and PATH when absent.
	Env []string
	// ReadOnly are host paths bound read-only at the same path: the
	// checkout, its git metadata, prepared dependencies. Submounts are
	// read-only too (rro) where the runtime supports it; the probe measures
	// it. They must be readable by UID/GID.
	ReadOnly []string
	// Views are host directories bound read-only somewhere else: Source
	// appears at Destination (prepared dependencies at
	// <checkout>/node_modules, whose host copy lives outside the
	// checkout). Destination must already exist as a directory in a path
	// bound above it, since nothing can create a mount point in a
	// read-only bind. Same options as ReadOnly.
	Views []View
	// ReportFile is the one host file the task may write: it must exist, be
	// a regular, empty file named by its real path (no symlink anywhere on
	// the way), and is bound read-write at the same path and chowned to the
	// task's user. Optional.
	ReportFile string
	// HostPaths are host toolchain paths bound read-only at the same path
	// (symlinks such as /bin → usr/bin are resolved on the host).
	// DefaultHostPaths when empty and no Image is set; ignored with an Image.
	HostPaths []string
	// Image is an OCI image tarball (docker save / oci-layout tar) whose
	// filesystem, read-only, replaces the host toolchain binds.
	Image string
	// Timeout is the wall-clock limit, enforced from outside by killing
	// every process of the task. DefaultTimeout when zero.
	Timeout time.Duration
	// Limits are resource caps; zero fields take DefaultLimits.
	Limits Limits
	// UID and GID of the task's processes; zero means nobody (65534).
	// Root is never used.
	UID, GID uint32
	// MaxOutput caps the bytes kept per stream (all bytes are still hashed
	// and counted). DefaultMaxOutput when zero.
	MaxOutput int64
	// GoCache is a prepared Go build cache (absolute host path) used as
	// GOCACHE instead of the private, empty one in TMPDIR, so a check
	// compiles only what it changes. It must also be listed in ReadOnly:
	// the go command tolerates a cache it cannot write (it builds what it
	// misses and keeps the result in TMPDIR's work directory only).
	GoCache string
	// Observer, when set, sees every byte of stdout and stderr as it
	// arrives (both streams, concurrently: it must be safe for concurrent
	// use). Scanners that must read the whole output, such as zero-test
	// detection, use it instead of the capped Kept bytes. Its errors are
	// ignored: an observer never blocks or fails the task.
	Observer io.Writer
}

// Limits are the resource caps of one task.
type Limits struct {
	Pids        int64   // processes and threads (pids cgroup)
	MemoryBytes int64   // memory cgroup limit; swap is not granted on top. TMPDIR pages count here.
	CPUs        float64 // CFS quota in CPUs
	NoFile      uint64  // RLIMIT_NOFILE
	TmpBytes    int64   // size of the TMPDIR tmpfs
	FileBytes   uint64  // RLIMIT_FSIZE: largest file the task may write (bounds the report file on the host disk)
}

// Defaults. Generous enough for a real test suite (go test and node spawn
// many threads; the pids cgroup counts threads) and small enough to contain
// a fork bomb, a memory hog and a disk filler.
const (
	DefaultTimeout   = 15 * time.Minute
	DefaultMaxOutput = 4 << 20
	// DefaultUID and DefaultGID are Debian's nobody/nogroup.
	DefaultUID = 65534
	DefaultGID = 65534
	// TmpPath is where the private TMPDIR is mounted; HOME and the Go and
	// npm caches live inside it.
	TmpPath = "/tmp"
)

// DefaultLimits apply field by field where a Spec leaves a limit zero.
var DefaultLimits = Limits{
	Pids:        4096,
	MemoryBytes: 4 << 30,
	CPUs:        float64(runtime.NumCPU()),
	NoFile:      4096,
	TmpBytes:    1 << 30,
	FileBytes:   1 << 30,
}

// DefaultHostPaths are the host's toolchain: binaries, libraries and the few
// /etc files they need. Deliberately not /etc as a whole (host secrets,
// resolver configuration, runmill's own configuration), not /home, /root,
// /var, /run (the containerd socket) or /opt. Paths missing on the host are
// skipped. /etc/passwd, /etc/group and /etc/hosts are generated.
var DefaultHostPaths = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl", "/etc/ca-certificates", "/etc/localtime", "/etc/nsswitch.conf",
	"/etc/protocols", "/etc/services",
}

// SandboxEnvKeys are the variables the sandbox sets itself; a Spec that
// sets one is refused rather than silently overridden.
var SandboxEnvKeys = []string{"TMPDIR", "HOME", "GOCACHE", "npm_config_cache", "XDG_CACHE_HOME"}

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// containerd's identifier grammar (pkg/identifiers), with room for a suffix.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*$`)

const maxIDLength = 76

// plan is a validated Spec with every default applied and every path resolved.
type plan struct {
	Spec
	env       []string
	hostBinds []bind // toolchain binds, symlinks resolved
	uid, gid  uint32
}

// bind is one host path mounted at a path inside the task.
type bind struct {
	Source, Destination string
}

// validate applies defaults and refuses what cannot be run safely. It
// collects every finding.
func (sp Spec) validate() (*plan, error) {
	var errs rmerr.List
	bad := func(field, format string, args ...any) {
		errs = append(errs, rmerr.New(rmerr.SandboxSpec, format, args...).InField(field))
	}
	p := &plan{Spec: sp}
	if p.ID == "" {
		p.ID = randomID()
	}
	if len(p.ID) > maxIDLength || !idPattern.MatchString(p.ID) {
		bad("id", "%q is not a valid container id (letters, digits, single . _ - separators, at most %d bytes)", p.ID, maxIDLength)
	}
	if strings.TrimSpace(p.Command) == "" {
		bad("command", "command is empty")
	}
	if strings.ContainsRune(p.Command, 0) {
		bad("command", "command contains a NUL byte")
	}
	if p.Dir == "" {
		p.Dir = TmpPath
	} else if !filepath.IsAbs(p.Dir) {
		bad("dir", "working directory %q is not absolute", p.Dir)
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	} else if p.Timeout < 0 {
		bad("timeout", "timeout %s is negative", p.Timeout)
	}
	if p.MaxOutput == 0 {
		p.MaxOutput = DefaultMaxOutput
	} else if p.MaxOutput < 0 {
		bad("max_output", "output cap %d is negative", p.MaxOutput)
	}
	p.uid, p.gid = p.UID, p.GID
	if p.uid == 0 {
		p.uid = DefaultUID
	}
	if p.gid == 0 {
		p.gid = DefaultGID
	}
	l := &p.Limits
	if l.Pids == 0 {
		l.Pids = DefaultLimits.Pids
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultLimits.MemoryBytes
	}
	if l.CPUs == 0 {
		l.CPUs = DefaultLimits.CPUs
	}
	if l.NoFile == 0 {
		l.NoFile = DefaultLimits.NoFile
	}
	if l.TmpBytes == 0 {
		l.TmpBytes = DefaultLimits.TmpBytes
	}
	if l.FileBytes == 0 {
		l.FileBytes = DefaultLimits.FileBytes
	}
	if l.Pids < 0 || l.MemoryBytes < 0 || l.CPUs < 0 || l.TmpBytes < 0 {
		bad("limits", "limits must not be negative: %+v", *l)
	}
	if l.MemoryBytes > 0 && l.MemoryBytes < 16<<20 {
		bad("limits.memory", "memory limit %d bytes is below 16 MiB; nothing starts in that", l.MemoryBytes)
	}

	if p.GoCache != "" {
		if err := checkBindPath(p.GoCache); err != nil {
			bad("go_cache", "%v", err)
		} else if !slices.Contains(p.ReadOnly, p.GoCache) {
			bad("go_cache", "go build cache %s must be bound read-only (list it in ReadOnly)", p.GoCache)
		}
	}
	env, envErrs := buildEnv(p.Env, p.GoCache)
	errs = append(errs, envErrs...)
	p.env = env

	for i, ro := range p.ReadOnly {
		field := fmt.Sprintf("read_only[%d]", i)
		if err := checkBindPath(ro); err != nil {
			bad(field, "%v", err)
			continue
		}
		if _, err := os.Stat(ro); err != nil {
			bad(field, "read-only path: %v", err)
		}
	}
	for i, v := range p.Views {
		field := fmt.Sprintf("views[%d]", i)
		for _, path := range []string{v.Source, v.Destination} {
			if err := checkBindPath(path); err != nil {
				bad(field, "%v", err)
			} else if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
				bad(field, "view %s: not a directory (%v)", path, err)
			}
		}
	}
	if p.ReportFile != "" {
		if err := checkBindPath(p.ReportFile); err != nil {
			bad("report_file", "%v", err)
		} else if fi, err := os.Lstat(p.ReportFile); err != nil {
			bad("report_file", "report file: %v", err)
		} else if !fi.Mode().IsRegular() {
			bad("report_file", "report file %s is a %s, not a regular file", p.ReportFile, fi.Mode().Type())
		} else if fi.Size() != 0 {
			bad("report_file", "report file %s is not empty (%d bytes); it must be pre-created empty", p.ReportFile, fi.Size())
		} else if real, err := filepath.EvalSymlinks(p.ReportFile); err != nil || real != p.ReportFile {
			// The one writable host file must be exactly the file named:
			// a symlinked parent would hand the task a file elsewhere.
			bad("report_file", "report file %s resolves to %s through a symlink", p.ReportFile, real)
		}
	}

	if p.Image == "" {
		hostPaths, explicit := p.HostPaths, true
		if len(hostPaths) == 0 {
			hostPaths, explicit = DefaultHostPaths, false
		}
		for i, hp := range hostPaths {
			if err := checkBindPath(hp); err != nil {
				bad(fmt.Sprintf("host_paths[%d]", i), "%v", err)
				continue
			}
			src, err := filepath.EvalSymlinks(hp)
			if errors.Is(err, os.ErrNotExist) && !explicit {
				continue
			}
			if err != nil {
				bad(fmt.Sprintf("host_paths[%d]", i), "host path: %v", err)
				continue
			}
			p.hostBinds = append(p.hostBinds, bind{Source: src, Destination: hp})
		}
	} else if !filepath.IsAbs(p.Image) {
		bad("image", "image tarball %q is not an absolute path", p.Image)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

// checkBindPath refuses paths that cannot be a clean bind destination, or
// that would shadow the task's own /proc, /dev, /sys or TMPDIR.
func checkBindPath(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%q is not absolute", p)
	}
	if filepath.Clean(p) != p {
		return fmt.Errorf("%q is not clean (want %q)", p, filepath.Clean(p))
	}
	if p == "/" {
		return fmt.Errorf("the host root cannot be bound")
	}
	if strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("%q contains a control character", p)
	}
	for _, reserved := range []string{"/proc", "/dev", "/sys", taskinit.Dir} {
		if p == reserved || strings.HasPrefix(p, reserved+"/") {
			return fmt.Errorf("%q is reserved inside the sandbox", p)
		}
	}
	// Below TmpPath is fine (the bind lands inside the tmpfs); TmpPath
	// itself would hide the private TMPDIR.
	if p == TmpPath {
		return fmt.Errorf("%q is the sandbox's private TMPDIR", p)
	}
	return nil
}

// buildEnv checks the caller's environment and adds what the sandbox owns.
func buildEnv(in []string, goCache string) ([]string, rmerr.List) {
	var errs rmerr.List
	seen := map[string]bool{}
	out := make([]string, 0, len(in)+len(SandboxEnvKeys)+1)
	for i, kv := range in {
		k, _, ok := strings.Cut(kv, "=")
		field := fmt.Sprintf("env[%d]", i)
		switch {
		case !ok || k == "":
			errs = append(errs, rmerr.New(rmerr.SandboxSpec, "%q is not KEY=value", kv).InField(field))
		case strings.ContainsRune(kv, 0):
			errs = append(errs, rmerr.New(rmerr.SandboxSpec, "%s contains a NUL byte", k).InField(field))
		case seen[k]:
			errs = append(errs, rmerr.New(rmerr.SandboxSpec, "%s is set twice", k).InField(field))
		case slices.Contains(SandboxEnvKeys, k):
			errs = append(errs, rmerr.New(rmerr.SandboxSpec, "%s is set by the sandbox and cannot be passed", k).InField(field))
		default:
			seen[k] = true
			out = append(out, kv)
		}
	}
	if !seen["PATH"] {
		out = append(out, "PATH="+defaultPath)
	}
	out = append(out,
		"TMPDIR="+TmpPath,
		"HOME="+TmpPath,
		"GOCACHE="+cmp.Or(goCache, TmpPath+"/.cache/go-build"),
		"npm_config_cache="+TmpPath+"/.npm",
		"XDG_CACHE_HOME="+TmpPath+"/.cache",
	)
	return out, errs
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return "rm-" + hex.EncodeToString(b[:])
}

// SearchPath is the PATH a task gets: the default directories, then the
// entries of the host's PATH that lie under the paths bound into the task
// (hostPaths, or DefaultHostPaths when empty). An entry the task cannot see
// is dropped: it would only make a missing tool look present.
func SearchPath(hostPATH string, hostPaths []string) string {
	if len(hostPaths) == 0 {
		hostPaths = DefaultHostPaths
	}
	out := filepath.SplitList(defaultPath)
	seen := map[string]bool{}
	for _, p := range out {
		seen[p] = true
	}
	for _, p := range filepath.SplitList(hostPATH) {
		p = filepath.Clean(p)
		if seen[p] || !filepath.IsAbs(p) {
			continue
		}
		for _, root := range hostPaths {
			root = filepath.Clean(root)
			if p == root || strings.HasPrefix(p, root+"/") {
				out = append(out, p)
				seen[p] = true
				break
			}
		}
	}
	return strings.Join(out, ":")
}
