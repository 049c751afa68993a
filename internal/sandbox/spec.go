package sandbox

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/pkg/identifiers"

	"github.com/runmill/verify/internal/fsname"
	"github.com/runmill/verify/internal/taskinit"
	"github.com/runmill/verify/pkg/rmerr"
)

// View is a host directory (Source) bound read-only at Destination, or,
// with Upper set, the read-only lower layer of a copy-on-write overlay
// there.
type View struct {
	Source, Destination string
	// Upper and Work, when set, make the view an overlayfs mount (runc
	// mounts it in the task's mount namespace, as the joined GOCACHE):
	// lowerdir Source, upperdir Upper, workdir Work, all host directories
	// outside the checkout, Upper and Work empty and on one filesystem.
	// What the task writes at Destination lands in Upper; Source is never
	// written. The caller bounds Upper (its own size-limited filesystem)
	// and discards it after the run. The mount's root takes Upper's owner
	// and mode: the prepared-dependency view makes it root's 01777, so a
	// check adds its own entries but renames or removes none of Source's.
	Upper, Work string
}

// Spec is one command to run in a fresh task. Everything not granted here is
// denied: no network beyond loopback, no writable path but ReportFile, TMPDIR,
// /dev/shm and the upper layers of copy-on-write Views, no capability, no
// inherited environment.
type Spec struct {
	// ID names the container; a random one when empty. It must be unique
	// among live runs.
	ID string
	// Command is run by /bin/sh -c.
	Command string
	// Checkout is the host directory of the checkout (absolute). It is
	// bound read-only (same options as ReadOnly) at CheckoutPath, so every
	// run sees its checkout at one path whatever its host path: base and
	// candidate, run after run. Report ids, messages and build caches that
	// name absolute paths then agree between runs. The host path itself is
	// not visible in the task. Optional.
	Checkout string
	// Dir is the working directory inside the task (absolute): CheckoutPath
	// when empty and Checkout is set, else TmpPath. A host path equal to or
	// under Checkout is translated (see InTask).
	Dir string
	// Env is the task's exact environment ("KEY=value"); nothing is
	// inherited from runmill. The caller builds it from an allow-list. The
	// sandbox adds the variables it owns (SandboxEnvKeys) and PATH when absent.
	Env []string
	// ReadOnly are host paths bound read-only at the same path: the
	// checkout's object directories (its .git/objects/info/alternates names
	// them by host path), prepared dependencies. An entry equal to or under
	// Checkout is seen at its place under CheckoutPath instead (equal: it is
	// the checkout's own bind), so callers may list the checkout here too.
	// Submounts are read-only too (rro) where the runtime supports it; the
	// probe measures it. They must be readable by UID/GID.
	ReadOnly []string
	// Views are host directories bound read-only somewhere else: Source
	// appears at Destination (prepared dependencies at
	// <checkout>/node_modules, whose host copy lives outside the
	// checkout). Destination must already exist as a directory in a path
	// bound above it, since nothing can create a mount point in a
	// read-only bind. Same options as ReadOnly. A Destination under
	// Checkout is a host path, translated like ReadOnly.
	Views []View
	// ReportFile is the one host file the task may write: it must exist, be
	// a regular, empty file named by its real path (no symlink anywhere on
	// the way), and is bound read-write at the same path and chowned to the
	// task's user. Under Checkout it is seen at its place under
	// CheckoutPath. Optional.
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
	// GoCacheLayers are further prepared Go build caches (absolute host
	// directories outside the checkout) joined with GoCache into one
	// read-only GOCACHE at GoCachePath, GoCache's entries first (see
	// goCacheMount). Unlike GoCache they need not be listed in ReadOnly.
	// See Sandbox.UnionsGoCaches.
	GoCacheLayers []string
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
	// CheckoutPath is where Spec.Checkout is mounted. It lies under a
	// top-level directory named for runmill, which no distribution, image
	// or DefaultHostPaths entry has: the bind never shadows a toolchain
	// directory of an image's root, and it is apart from TMPDIR and the
	// generated /etc files. Changing it changes every report id that
	// names an absolute path, so it is fixed for good.
	CheckoutPath = "/runmill/checkout"
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

// maxIDLength is containerd's bound on an identifier (pkg/identifiers
// enforces it; the message names it).
const maxIDLength = 76

// plan is a validated Spec with every default applied and every path resolved.
type plan struct {
	Spec
	env       []string
	hostBinds []bind // toolchain binds, symlinks resolved
	// roBinds are the checkout, ReadOnly and Views, each at its place in
	// the task; report is ReportFile's bind (zero without one).
	roBinds  []bind
	overlays []overlay
	report   bind
	uid, gid uint32
}

// bind is one host path mounted at a path inside the task.
type bind struct {
	Source, Destination string
}

// overlay is a copy-on-write View at its path inside the task.
type overlay struct {
	Lower, Upper, Work, Destination string
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
	// containerd's own grammar, so an id it would refuse is refused here,
	// with the Spec's field named, before anything is created.
	if identifiers.Validate(p.ID) != nil {
		bad("id", "%q is not a valid container id (letters, digits, single . _ - separators, at most %d bytes)", p.ID, maxIDLength)
	}
	if strings.TrimSpace(p.Command) == "" {
		bad("command", "command is empty")
	}
	if strings.ContainsRune(p.Command, 0) {
		bad("command", "command contains a NUL byte")
	}
	if p.Checkout != "" {
		if err := checkBindPath(p.Checkout); err != nil {
			bad("checkout", "%v", err)
		} else if fi, err := os.Stat(p.Checkout); err != nil {
			bad("checkout", "checkout: %v", err)
		} else if !fi.IsDir() {
			bad("checkout", "checkout %s is not a directory", p.Checkout)
		} else {
			p.roBinds = append(p.roBinds, bind{Source: p.Checkout, Destination: CheckoutPath})
		}
	}
	switch {
	case p.Dir == "" && p.Checkout != "":
		p.Dir = CheckoutPath
	case p.Dir == "":
		p.Dir = TmpPath
	case !filepath.IsAbs(p.Dir):
		bad("dir", "working directory %q is not absolute", p.Dir)
	default:
		p.Dir = sp.InTask(p.Dir)
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
		} else if !slices.Contains(p.ReadOnly, p.GoCache) && !p.inCheckout(p.GoCache) {
			bad("go_cache", "go build cache %s must be bound read-only (list it in ReadOnly)", p.GoCache)
		}
	}
	if len(p.GoCacheLayers) > 0 {
		errs = append(errs, p.checkGoCacheLayers()...)
	}
	env, envErrs := buildEnv(p.Env, sp.goCacheInTask())
	errs = append(errs, envErrs...)
	p.env = env
	if p.Checkout != "" {
		for i, kv := range p.Env {
			if strings.Contains(kv, p.Checkout) {
				k, _, _ := strings.Cut(kv, "=")
				bad(fmt.Sprintf("env[%d]", i), "%s names the host checkout path %s, which the task does not see; name it as %s (sandbox.Spec.InTask)", k, p.Checkout, CheckoutPath)
			}
		}
	}

	// Everything that is not the checkout keeps its host path inside the
	// task, so it must stay clear of CheckoutPath: a bind over it would
	// hide or mix into the checkout, one around it would leave runc no
	// mount point to create in a read-only bind.
	clash := func(field, what, dst string) bool {
		if p.Checkout == "" || !overlaps(dst, CheckoutPath) {
			return false
		}
		bad(field, "%s %s would be mounted over or around the checkout's fixed path %s; bind it elsewhere", what, dst, CheckoutPath)
		return true
	}
	for i, ro := range p.ReadOnly {
		field := fmt.Sprintf("read_only[%d]", i)
		if err := checkBindPath(ro); err != nil {
			bad(field, "%v", err)
			continue
		}
		inCheckout := p.inCheckout(ro)
		if !inCheckout && clash(field, "read-only path", ro) {
			continue
		}
		if _, err := os.Stat(ro); err != nil {
			bad(field, "read-only path: %v", err)
			continue
		}
		switch {
		case ro == p.Checkout:
			// The checkout's own bind, made above.
		case inCheckout:
			p.roBinds = append(p.roBinds, bind{Source: ro, Destination: sp.InTask(ro)})
		default:
			p.roBinds = append(p.roBinds, bind{Source: ro, Destination: ro})
		}
	}
	for i, v := range p.Views {
		field := fmt.Sprintf("views[%d]", i)
		inCheckout := p.inCheckout(v.Destination)
		if checkBindPath(v.Destination) == nil && !inCheckout && clash(field, "view destination", v.Destination) {
			continue
		}
		ok := true
		for _, path := range []string{v.Source, v.Destination} {
			if err := bindDir("view", path); err != nil {
				bad(field, "%v", err)
				ok = false
			}
		}
		if v.Upper != "" || v.Work != "" {
			ok = p.checkOverlay(field, v, bad) && ok
		}
		dest := v.Destination
		if inCheckout {
			dest = sp.InTask(v.Destination)
		}
		switch {
		case !ok:
		case v.Destination == p.Checkout:
			bad(field, "view %s would replace the whole checkout; mount it at a directory inside it", v.Source)
		case v.Upper != "":
			p.overlays = append(p.overlays, overlay{Lower: v.Source, Upper: v.Upper, Work: v.Work, Destination: dest})
		default:
			p.roBinds = append(p.roBinds, bind{Source: v.Source, Destination: dest})
		}
	}
	if p.ReportFile != "" {
		outside := !p.inCheckout(p.ReportFile)
		if err := checkBindPath(p.ReportFile); err != nil {
			bad("report_file", "%v", err)
		} else if outside && clash("report_file", "report file", p.ReportFile) {
			// Refused by clash.
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
		} else {
			p.report = bind{Source: p.ReportFile, Destination: sp.InTask(p.ReportFile)}
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
			if clash(fmt.Sprintf("host_paths[%d]", i), "host path", hp) {
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

// InTask is where the task sees hostPath: its place under CheckoutPath
// when it is Checkout or lies under it, else hostPath itself (every other
// bind keeps its host path). Paths that are not absolute are returned as
// they are. Callers use it to name a checkout path to the task, in a
// command's environment or a message.
func (sp Spec) InTask(hostPath string) string {
	if sp.Checkout == "" || !filepath.IsAbs(hostPath) {
		return hostPath
	}
	hostPath = filepath.Clean(hostPath)
	rel, ok := under(hostPath, filepath.Clean(sp.Checkout))
	if !ok {
		return hostPath
	}
	return filepath.Join(CheckoutPath, rel)
}

// inCheckout reports whether the host path is Checkout or lies under it.
func (sp Spec) inCheckout(hostPath string) bool {
	if sp.Checkout == "" {
		return false
	}
	_, ok := under(hostPath, sp.Checkout)
	return ok
}

// under returns p relative to dir when p is dir ("") or lies below it.
func under(p, dir string) (string, bool) {
	if p == dir {
		return "", true
	}
	if rest, ok := strings.CutPrefix(p, strings.TrimSuffix(dir, "/")+"/"); ok {
		return rest, true
	}
	return "", false
}

// overlaps reports whether a mount at a would cover b or lie inside it.
func overlaps(a, b string) bool {
	_, in := under(a, b)
	_, around := under(b, a)
	return in || around
}

// checkOverlay refuses a copy-on-write view's upper and work directories
// unless both are usable: absolute, clean, existing directories outside the
// checkout (the task would see its own upper layer otherwise), and, with
// the lower layer, nameable in overlayfs's options.
func (p *plan) checkOverlay(field string, v View, bad func(field, format string, args ...any)) bool {
	ok := true
	for _, path := range []string{v.Upper, v.Work} {
		if checkBindPath(path) == nil && p.inCheckout(path) {
			bad(field, "view overlay directory %s is inside the checkout; make it outside", path)
			ok = false
		} else if err := bindDir("view overlay", path); err != nil {
			bad(field, "%v", err)
			ok = false
		}
	}
	for _, path := range []string{v.Source, v.Upper, v.Work} {
		// overlayfs separates options with ',' and layers with ':'.
		if strings.ContainsAny(path, ",:\\") {
			bad(field, "view overlay path %q holds ',', ':' or '\\', which overlayfs options cannot carry", path)
			ok = false
		}
	}
	return ok
}

// bindDir refuses path unless it is a clean bind path naming an existing
// directory; what names the spec entry in the message.
func bindDir(what, path string) error {
	if err := checkBindPath(path); err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s %s is not a directory", what, path)
	}
	return nil
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

func randomID() string { return "rm-" + fsname.Random(8) }

// SearchPath is the PATH a task gets: the entries of the host's PATH that
// lie under the paths bound into the task (hostPaths, or DefaultHostPaths
// when empty), in the host's order, then the default directories not yet
// listed. The host's order decides which of two toolchains a check runs —
// the Go a workflow's setup-go put first, not the image's /usr/bin/go — as
// it does in the job's own steps. An entry the task cannot see is dropped:
// it would only make a missing tool look present.
func SearchPath(hostPATH string, hostPaths []string) string {
	if len(hostPaths) == 0 {
		hostPaths = DefaultHostPaths
	}
	var out []string
	seen := map[string]bool{}
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
	for _, p := range filepath.SplitList(defaultPath) {
		if !seen[p] {
			out = append(out, p)
		}
	}
	return strings.Join(out, ":")
}
