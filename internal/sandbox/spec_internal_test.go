package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/containerd/v2/pkg/namespaces"

	"github.com/runmill/verify/pkg/rmerr"
)

func TestCaptureWriter(t *testing.T) {
	for _, tt := range []struct {
		name   string
		max    int64
		chunks []string
	}{
		{"fits", 10, []string{"abc", "def"}},
		{"exact", 6, []string{"abc", "def"}},
		{"cut inside a write", 4, []string{"abc", "def", "ghi"}},
		{"keeps nothing", 0, []string{"abc"}},
		{"empty", 5, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newCaptureWriter(tt.max)
			for _, c := range tt.chunks {
				if n, err := w.Write([]byte(c)); n != len(c) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			all := strings.Join(tt.chunks, "")
			sum := sha256.Sum256([]byte(all))
			got := w.capture()
			want := all[:min(int64(len(all)), tt.max)]
			if got.SHA256 != hex.EncodeToString(sum[:]) || got.Size != int64(len(all)) || string(got.Kept) != want || got.Truncated != (int64(len(all)) > tt.max) {
				t.Errorf("capture = %+v, want kept %q of %q", got, want, all)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	full := filepath.Join(dir, "full")
	os.WriteFile(full, []byte("x"), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(empty, link)
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	os.WriteFile(filepath.Join(dir, "real", "r.xml"), nil, 0o600)
	os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "linkdir"))

	refused := map[string]struct {
		spec  Spec
		field string
	}{
		"empty command":        {Spec{}, "command"},
		"relative dir":         {Spec{Command: "true", Dir: "src"}, "dir"},
		"relative read-only":   {Spec{Command: "true", ReadOnly: []string{"rel"}}, "read_only[0]"},
		"unclean read-only":    {Spec{Command: "true", ReadOnly: []string{dir + "/../x"}}, "read_only[0]"},
		"missing read-only":    {Spec{Command: "true", ReadOnly: []string{filepath.Join(dir, "nope")}}, "read_only[0]"},
		"host root":            {Spec{Command: "true", ReadOnly: []string{"/"}}, "read_only[0]"},
		"proc":                 {Spec{Command: "true", ReadOnly: []string{"/proc/self"}}, "read_only[0]"},
		"over TMPDIR":          {Spec{Command: "true", ReadOnly: []string{TmpPath}}, "read_only[0]"},
		"newline in path":      {Spec{Command: "true", ReadOnly: []string{dir + "/a\nb"}}, "read_only[0]"},
		"report not empty":     {Spec{Command: "true", ReportFile: full}, "report_file"},
		"report symlink":       {Spec{Command: "true", ReportFile: link}, "report_file"},
		"report directory":     {Spec{Command: "true", ReportFile: dir}, "report_file"},
		"report fifo":          {Spec{Command: "true", ReportFile: fifo}, "report_file"},
		"report missing":       {Spec{Command: "true", ReportFile: filepath.Join(dir, "nope")}, "report_file"},
		"report via symlink":   {Spec{Command: "true", ReportFile: filepath.Join(dir, "linkdir", "r.xml")}, "report_file"},
		"env owned by sandbox": {Spec{Command: "true", Env: []string{"HOME=/root"}}, "env[0]"},
		"env twice":            {Spec{Command: "true", Env: []string{"A=1", "A=2"}}, "env[1]"},
		"env malformed":        {Spec{Command: "true", Env: []string{"NOEQUALS"}}, "env[0]"},
		"bad id":               {Spec{ID: "../x", Command: "true"}, "id"},
		"negative timeout":     {Spec{Command: "true", Timeout: -1}, "timeout"},
		"tiny memory":          {Spec{Command: "true", Limits: Limits{MemoryBytes: 1 << 20}}, "limits.memory"},
		"missing host path":    {Spec{Command: "true", HostPaths: []string{filepath.Join(dir, "nope")}}, "host_paths[0]"},
		"relative image":       {Spec{Command: "true", Image: "img.tar"}, "image"},
		"relative go cache":    {Spec{Command: "true", GoCache: "cache"}, "go_cache"},
		"go cache not bound":   {Spec{Command: "true", GoCache: dir}, "go_cache"},
	}
	for name, tt := range refused {
		_, err := tt.spec.validate()
		var list rmerr.List
		if rmerr.CodeOf(err) != rmerr.SandboxSpec || !asList(err, &list) || !slices.ContainsFunc(list, func(e *rmerr.Error) bool { return e.Field == tt.field }) {
			t.Errorf("%s: want %s in field %s, got %v", name, rmerr.SandboxSpec, tt.field, err)
		}
	}

	// Every finding at once, not just the first.
	_, err := Spec{Dir: "rel", Env: []string{"HOME=x"}}.validate()
	var list rmerr.List
	if !asList(err, &list) || len(list) != 3 {
		t.Errorf("want 3 findings, got %v", err)
	}

	p, err := Spec{Command: "true", Env: []string{"PATH=/custom", "CI=true"}, ReadOnly: []string{dir}, ReportFile: empty}.validate()
	if err != nil {
		t.Fatal(err)
	}
	if p.uid != DefaultUID || p.gid != DefaultGID || p.Timeout != DefaultTimeout || p.MaxOutput != DefaultMaxOutput || p.Limits != DefaultLimits || p.Dir != TmpPath {
		t.Errorf("defaults not applied: %+v", p)
	}
	wantEnv := []string{"PATH=/custom", "CI=true", "TMPDIR=/tmp", "HOME=/tmp", "GOCACHE=/tmp/.cache/go-build", "npm_config_cache=/tmp/.npm", "XDG_CACHE_HOME=/tmp/.cache"}
	if !slices.Equal(p.env, wantEnv) {
		t.Errorf("env = %q, want %q", p.env, wantEnv)
	}
	// A prepared build cache replaces the private GOCACHE.
	p, err = Spec{Command: "true", ReadOnly: []string{dir}, GoCache: dir}.validate()
	if err != nil || !slices.Contains(p.env, "GOCACHE="+dir) || slices.Contains(p.env, "GOCACHE=/tmp/.cache/go-build") {
		t.Errorf("GoCache: %v, env %q", err, p.env)
	}
	for _, b := range p.hostBinds {
		if b.Destination == "/bin" && b.Source != "/bin" {
			if fi, err := os.Lstat("/bin"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("/bin resolved to %s but is not a symlink", b.Source)
			}
		}
	}
}

func asList(err error, l *rmerr.List) bool {
	if v, ok := err.(rmerr.List); ok {
		*l = v
		return true
	}
	return false
}

func TestOCISpecMountOrder(t *testing.T) {
	dir := t.TempDir()
	co := filepath.Join(dir, "checkout")
	os.MkdirAll(filepath.Join(co, ".git"), 0o755)
	report := filepath.Join(co, "report.xml")
	os.WriteFile(report, nil, 0o600)
	p, err := Spec{Command: "true", ReadOnly: []string{filepath.Join(co, ".git"), co}, ReportFile: report}.validate()
	if err != nil {
		t.Fatal(err)
	}
	s, err := ociSpec(testCtx(), p, "rootfs", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	index := map[string]int{}
	for i, m := range s.Mounts {
		index[m.Destination] = i
		if m.Destination == "/run" {
			t.Error("/run tmpfs still mounted")
		}
	}
	if !(index[TmpPath] < index[co] && index[co] < index[filepath.Join(co, ".git")] && index[co] < index[report]) {
		t.Errorf("mount order: %v", index)
	}
	m := s.Mounts[index[co]]
	if !slices.Contains(m.Options, "rro") || !slices.Contains(m.Options, "ro") {
		t.Errorf("checkout mount options %v", m.Options)
	}
	if r := s.Mounts[index[report]]; !slices.Contains(r.Options, "rw") || r.Type != "bind" {
		t.Errorf("report mount %+v", r)
	}
	c := s.Process.Capabilities
	if c == nil || len(c.Bounding)+len(c.Effective)+len(c.Permitted)+len(c.Inheritable)+len(c.Ambient) != 0 {
		t.Errorf("capabilities %+v", c)
	}
	if !s.Process.NoNewPrivileges || s.Linux.Seccomp == nil || !s.Root.Readonly || s.Process.User.UID == 0 {
		t.Errorf("spec not locked down: nnp %v seccomp %v ro-root %v uid %d", s.Process.NoNewPrivileges, s.Linux.Seccomp != nil, s.Root.Readonly, s.Process.User.UID)
	}
	var netns bool
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == "network" {
			netns = ns.Path == ""
		}
	}
	if !netns {
		t.Error("no private network namespace")
	}
	if !bytes.Equal([]byte(strings.Join(s.Process.Env, "\n")), []byte(strings.Join(p.env, "\n"))) {
		t.Errorf("env %q", s.Process.Env)
	}
}

func testCtx() context.Context { return namespaces.WithNamespace(context.Background(), "test") }

func TestSearchPath(t *testing.T) {
	host := "/usr/local/go/bin:/root/.cargo/bin:relative:/opt/node/bin:/usr/bin"
	for _, tc := range []struct {
		binds []string
		want  string
	}{
		// The host's order first (its /usr/local/go before /usr/bin), then
		// the defaults it did not list.
		{nil, "/usr/local/go/bin:/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin"},
		{[]string{"/usr", "/root/.cargo/"}, "/usr/local/go/bin:/root/.cargo/bin:/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin"},
		{[]string{"/opt/node"}, "/opt/node/bin:" + defaultPath},
		{[]string{"/opt/no"}, defaultPath},
	} {
		if got := SearchPath(host, tc.binds); got != tc.want {
			t.Errorf("SearchPath(%v) = %q, want %q", tc.binds, got, tc.want)
		}
	}
}

// TestCheckoutPlan: with Checkout set, the checkout and everything given
// by a host path inside it (ReadOnly entries, view destinations, the
// report file, the working directory) land at the same place under
// CheckoutPath; everything else keeps its host path; no mount names the
// host checkout as a destination.
func TestCheckoutPlan(t *testing.T) {
	dir := t.TempDir()
	co := filepath.Join(dir, "s10195-1", "co")
	objects := filepath.Join(dir, "repo", ".git", "objects")
	view := filepath.Join(dir, "view")
	for _, d := range []string{filepath.Join(co, ".git"), filepath.Join(co, "node_modules"), filepath.Join(co, "reports"), objects, view} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	report := filepath.Join(co, "reports", "x.xml")
	os.WriteFile(report, nil, 0o600)

	for _, tt := range []struct {
		name, dir, wantDir string
	}{
		{"default dir", "", CheckoutPath},
		{"host dir is the checkout", co, CheckoutPath},
		{"host dir inside", filepath.Join(co, "pkg", "a"), CheckoutPath + "/pkg/a"},
		{"unclean host dir", co + "/pkg/../pkg", CheckoutPath + "/pkg"},
		{"task dir", CheckoutPath + "/pkg", CheckoutPath + "/pkg"},
		{"scratch dir", TmpPath, TmpPath},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Spec{
				Command: "true", Checkout: co, Dir: tt.dir,
				// What the engine passes: the checkout's ReadOnlyPaths
				// (the checkout itself first) plus its git metadata.
				ReadOnly:   []string{co, filepath.Join(co, ".git"), objects},
				Views:      []View{{Source: view, Destination: filepath.Join(co, "node_modules")}},
				ReportFile: report,
			}.validate()
			if err != nil {
				t.Fatal(err)
			}
			if p.Dir != tt.wantDir {
				t.Errorf("Dir = %q, want %q", p.Dir, tt.wantDir)
			}
			wantBinds := []bind{
				{co, CheckoutPath},
				{filepath.Join(co, ".git"), CheckoutPath + "/.git"},
				{objects, objects},
				{view, CheckoutPath + "/node_modules"},
			}
			if !slices.Equal(p.roBinds, wantBinds) {
				t.Errorf("read-only binds\n%q\nwant\n%q", p.roBinds, wantBinds)
			}
			if want := (bind{report, CheckoutPath + "/reports/x.xml"}); p.report != want {
				t.Errorf("report bind %q, want %q", p.report, want)
			}
			s, err := ociSpec(testCtx(), p, "rootfs", nil, true)
			if err != nil {
				t.Fatal(err)
			}
			if s.Process.Cwd != tt.wantDir {
				t.Errorf("cwd %q", s.Process.Cwd)
			}
			index := map[string]int{}
			for i, m := range s.Mounts {
				index[m.Destination] = i
				if _, in := under(m.Destination, co); in {
					t.Errorf("mount at the host checkout path: %+v", m)
				}
			}
			if !(index[CheckoutPath] < index[CheckoutPath+"/node_modules"] && index[CheckoutPath] < index[CheckoutPath+"/reports/x.xml"]) {
				t.Errorf("mount order: %v", index)
			}
			if m := s.Mounts[index[CheckoutPath]]; m.Source != co || !slices.Contains(m.Options, "rro") || !slices.Contains(m.Options, "ro") {
				t.Errorf("checkout mount %+v", m)
			}
			if m := s.Mounts[index[CheckoutPath+"/reports/x.xml"]]; m.Source != report || !slices.Contains(m.Options, "rw") {
				t.Errorf("report mount %+v", m)
			}
		})
	}

	// Two checkouts at different host paths plan the same task paths.
	other := filepath.Join(dir, "s20000-7", "co")
	os.MkdirAll(filepath.Join(other, "reports"), 0o755)
	os.WriteFile(filepath.Join(other, "reports", "x.xml"), nil, 0o600)
	var dests [2][]string
	for i, c := range []string{co, other} {
		p, err := Spec{Command: "true", Checkout: c, ReadOnly: []string{c}, ReportFile: filepath.Join(c, "reports", "x.xml")}.validate()
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range append(p.roBinds, p.report) {
			dests[i] = append(dests[i], b.Destination)
		}
		dests[i] = append(dests[i], p.Dir)
	}
	if !slices.Equal(dests[0], dests[1]) {
		t.Errorf("task paths differ between checkouts: %q vs %q", dests[0], dests[1])
	}

	// A prepared build cache inside the checkout is named by its task path.
	os.MkdirAll(filepath.Join(co, ".cache"), 0o755)
	p, err := Spec{Command: "true", Checkout: co, GoCache: filepath.Join(co, ".cache")}.validate()
	if err != nil || !slices.Contains(p.env, "GOCACHE="+CheckoutPath+"/.cache") {
		t.Errorf("GoCache in the checkout: %v, env %q", err, p.env)
	}
}

// TestCopyOnWritePlan: a View with Upper becomes an overlay mount at its
// task path, above the checkout's bind, and no read-only bind.
func TestCopyOnWritePlan(t *testing.T) {
	dir := t.TempDir()
	co, lower, upper, work := filepath.Join(dir, "co"), filepath.Join(dir, "lower"), filepath.Join(dir, "upper"), filepath.Join(dir, "work")
	for _, d := range []string{filepath.Join(co, "node_modules"), lower, upper, work} {
		os.MkdirAll(d, 0o755)
	}
	p, err := Spec{Command: "true", Checkout: co,
		Views: []View{{Source: lower, Destination: filepath.Join(co, "node_modules"), Upper: upper, Work: work}}}.validate()
	if err != nil {
		t.Fatal(err)
	}
	if want := []bind{{co, CheckoutPath}}; !slices.Equal(p.roBinds, want) {
		t.Errorf("read-only binds %q, want %q", p.roBinds, want)
	}
	s, err := ociSpec(testCtx(), p, "rootfs", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	checkoutAt, overlayAt := -1, -1
	for i, m := range s.Mounts {
		switch m.Destination {
		case CheckoutPath:
			checkoutAt = i
		case CheckoutPath + "/node_modules":
			overlayAt = i
			want := []string{"nosuid", "nodev", "lowerdir=" + lower, "upperdir=" + upper, "workdir=" + work}
			if m.Type != "overlay" || !slices.Equal(m.Options, want) {
				t.Errorf("node_modules mount %+v, want overlay with %q", m, want)
			}
		}
	}
	if checkoutAt < 0 || overlayAt < checkoutAt {
		t.Errorf("checkout mount at %d, overlay at %d: the overlay must come after the checkout", checkoutAt, overlayAt)
	}
}

func TestInTask(t *testing.T) {
	sp := Spec{Checkout: "/state/checkouts/s1/abc-1"}
	for in, want := range map[string]string{
		"/state/checkouts/s1/abc-1":                  CheckoutPath,
		"/state/checkouts/s1/abc-1/":                 CheckoutPath,
		"/state/checkouts/s1/abc-1/test/helpers.js":  CheckoutPath + "/test/helpers.js",
		"/state/checkouts/s1/abc-1/a/../b":           CheckoutPath + "/b",
		"/state/checkouts/s1/abc-10/test/helpers.js": "/state/checkouts/s1/abc-10/test/helpers.js", // a sibling, not inside
		"/state/checkouts/s1":                        "/state/checkouts/s1",
		"/repo/.git/objects":                         "/repo/.git/objects",
		"relative/path":                              "relative/path",
		"":                                           "",
	} {
		if got := sp.InTask(in); got != want {
			t.Errorf("InTask(%q) = %q, want %q", in, got, want)
		}
	}
	if got := (Spec{}).InTask("/state/co/x"); got != "/state/co/x" {
		t.Errorf("without Checkout: InTask = %q", got)
	}
}

// TestCheckoutRefused: every way a spec could mix something into the
// checkout's fixed path, or leak its host path, names its field.
func TestCheckoutRefused(t *testing.T) {
	dir := t.TempDir()
	co := filepath.Join(dir, "co")
	os.MkdirAll(filepath.Join(co, "node_modules"), 0o755)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	view := filepath.Join(dir, "view")
	os.Mkdir(view, 0o755)
	upper, work, comma := filepath.Join(dir, "upper"), filepath.Join(dir, "work"), filepath.Join(dir, "a,b")
	for _, d := range []string{upper, work, comma} {
		os.Mkdir(d, 0o755)
	}
	nm := filepath.Join(co, "node_modules")
	cow := func(up, wk string) []View { return []View{{Source: view, Destination: nm, Upper: up, Work: wk}} }
	const fixed = "the checkout's fixed path"
	for name, tt := range map[string]struct {
		spec  Spec
		field string
		msg   string // in the finding's text, when the field alone is not proof
	}{
		"relative checkout":         {Spec{Checkout: "co"}, "checkout", ""},
		"unclean checkout":          {Spec{Checkout: co + "/"}, "checkout", ""},
		"missing checkout":          {Spec{Checkout: filepath.Join(dir, "nope")}, "checkout", ""},
		"checkout is a file":        {Spec{Checkout: file}, "checkout", "not a directory"},
		"checkout over /proc":       {Spec{Checkout: "/proc"}, "checkout", "reserved"},
		"read-only at the path":     {Spec{Checkout: co, ReadOnly: []string{CheckoutPath}}, "read_only[0]", fixed},
		"read-only under the path":  {Spec{Checkout: co, ReadOnly: []string{dir, CheckoutPath + "/x"}}, "read_only[1]", fixed},
		"read-only around it":       {Spec{Checkout: co, ReadOnly: []string{filepath.Dir(CheckoutPath)}}, "read_only[0]", fixed},
		"view over the path":        {Spec{Checkout: co, Views: []View{{Source: view, Destination: CheckoutPath + "/node_modules"}}}, "views[0]", fixed},
		"view replaces checkout":    {Spec{Checkout: co, Views: []View{{Source: view, Destination: co}}}, "views[0]", "replace the whole checkout"},
		"overlay without work":      {Spec{Checkout: co, Views: cow(upper, "")}, "views[0]", "not absolute"},
		"overlay upper missing":     {Spec{Checkout: co, Views: cow(filepath.Join(dir, "nope"), work)}, "views[0]", "no such file"},
		"overlay upper in checkout": {Spec{Checkout: co, Views: cow(nm, work)}, "views[0]", "inside the checkout"},
		"overlay option separator":  {Spec{Checkout: co, Views: cow(comma, work)}, "views[0]", "overlayfs options cannot carry"},
		"report at the path":        {Spec{Checkout: co, ReportFile: CheckoutPath + "/r.xml"}, "report_file", fixed},
		"host path at the path":     {Spec{Checkout: co, HostPaths: []string{"/usr", CheckoutPath}}, "host_paths[1]", fixed},
		"env names host checkout":   {Spec{Checkout: co, Env: []string{"CI=true", "NODE_PATH=" + co + "/node_modules"}}, "env[1]", "host checkout path"},
	} {
		tt.spec.Command = "true"
		_, err := tt.spec.validate()
		var list rmerr.List
		if rmerr.CodeOf(err) != rmerr.SandboxSpec || !asList(err, &list) || !slices.ContainsFunc(list, func(e *rmerr.Error) bool {
			return e.Field == tt.field && strings.Contains(e.Error(), tt.msg)
		}) {
			t.Errorf("%s: want %s in field %s saying %q, got %v", name, rmerr.SandboxSpec, tt.field, tt.msg, err)
		}
	}
	// The same paths are fine without a Checkout, and an env value that
	// names the task path is fine with one: the refusals are about the
	// fixed path, not about those names.
	if _, err := (Spec{Command: "true", ReportFile: filepath.Join(dir, "file"), Env: []string{"NODE_PATH=" + co}}).validate(); err != nil {
		t.Errorf("no Checkout: %v", err)
	}
	if _, err := (Spec{Command: "true", Checkout: co, Env: []string{"NODE_PATH=" + CheckoutPath + "/node_modules"}}).validate(); err != nil {
		t.Errorf("env naming the task path: %v", err)
	}
}
