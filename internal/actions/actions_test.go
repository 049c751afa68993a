package actions_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/runmill/verify/internal/actions"
	"github.com/runmill/verify/internal/actions/actionstest"
	"github.com/runmill/verify/internal/golden"
	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/record"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
	"github.com/runmill/verify/pkg/verdict"
)

// step is one workflow step's runtime layout, as the runner prepares it: a
// fresh GITHUB_OUTPUT, GITHUB_STEP_SUMMARY and GITHUB_ENV per step, and the
// job's variables.
type step struct {
	env            map[string]string
	stdout, stderr bytes.Buffer
}

func newStep(t *testing.T) *step {
	dir := t.TempDir()
	s := &step{env: map[string]string{
		"GITHUB_ACTIONS":        "true",
		"GITHUB_OUTPUT":         filepath.Join(dir, "output"),
		"GITHUB_STEP_SUMMARY":   filepath.Join(dir, "summary"),
		"GITHUB_ENV":            filepath.Join(dir, "env"),
		"GITHUB_SERVER_URL":     "https://github.com",
		"GITHUB_REPOSITORY":     "octo-org/shop",
		"GITHUB_RUN_ID":         "12345678901",
		"RUNMILL_ARTIFACT_NAME": "runmill-evidence",
		// What action.yml passes the Summarize step: upload-artifact's
		// artifact-url, github.action_repository and github.action_ref.
		"RUNMILL_ARTIFACT_URL":      "https://github.com/octo-org/shop/actions/runs/12345678901/artifacts/2468013579",
		"RUNMILL_ACTION_REPOSITORY": "runmill/verify",
		"RUNMILL_ACTION_REF":        "v1.4.2",
	}}
	for _, k := range []string{"GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV"} {
		if err := os.WriteFile(s.env[k], nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s *step) runtime() *actions.Runtime {
	return actions.New(&s.stdout, &s.stderr, func(k string) string { return s.env[k] })
}

func (s *step) read(t *testing.T, k string) string {
	b, err := os.ReadFile(s.env[k])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// loadRun reads a recorded run (testdata/<name>: a real statement, bundle,
// stored reports and the candidate's tracked files from the demo's shop).
// Its directory is copied so paths are absolute, as on a runner.
func loadRun(t *testing.T, name string) (*actions.Run, string) {
	src := filepath.Join("testdata", name)
	dir := filepath.Join(t.TempDir(), "runs", name)
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "statement.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st evidence.DeliveryStatement
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	tracked, err := os.ReadFile(filepath.Join(dir, "tracked.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return &actions.Run{
		Dir:           dir,
		StatementPath: filepath.Join(dir, "statement.json"),
		BundlePath:    filepath.Join(dir, "evidence.json"),
		Delivery:      st.Predicate,
		Tracked:       strings.Fields(string(tracked)),
	}, dir
}

// TestPublish drives Publish as the runner would and compares the outputs,
// the summary and the workflow commands with golden files.
func TestPublish(t *testing.T) {
	for _, tc := range []struct {
		name     string
		unsigned bool
		verdict  string
		counts   [4]string // passed, failed, missing, skipped
		commands []string  // workflow command prefixes that must appear
	}{
		{"shop-good", false, "merge-ready", [4]string{"7", "0", "0", "0"}, []string{"::warning title=runmill%3A GitHub not consulted::"}},
		{"shop-bad", false, "not-merge-ready", [4]string{"2", "3", "1", "0"}, []string{
			// The missing test first; each failing test once, titled by
			// its name, at its file, its check's exit code folded in.
			"::error title=runmill%3A RM-VERIFY-003 in check unit::1 test that passed at the base is missing",
			"::error file=migrations/002_note.sql,title=migrations/002_note.sql::failed in check migrations (the check exited with code 1)\n",
			"::error file=cart/cart_test.go,line=18,title=example.com/shop/cart%3A%3ATestPricesFixture::failed in check unit (the check exited with code 1):%0Acart_test.go:18: rewriting the fixture",
			"::error file=cart/cart_test.go,title=gofmt::failed in check vet (the check exited with code 1):%0Anot gofmt-formatted: cart/cart_test.go\n",
			"::error file=web/cart.test.js,line=1,title=runmill%3A outcome.focused::",
			"::warning title=runmill%3A agent proposal ignored::proposed check \"curl-evil-sh\"",
		}},
		{"shop-bad-unsigned", true, "not-merge-ready", [4]string{"2", "3", "1", "0"}, []string{"::warning title=runmill%3A evidence unsigned::"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, dir := loadRun(t, strings.TrimSuffix(tc.name, "-unsigned"))
			if tc.unsigned {
				run.BundlePath = ""
			}
			s := newStep(t)
			if err := s.runtime().Publish(run); err != nil {
				t.Fatal(err)
			}
			outs, err := actionstest.ReadFileCommands(s.env["GITHUB_OUTPUT"])
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"verdict": tc.verdict, "run-id": run.Delivery.RunID, "bundle-path": run.BundlePath,
				"passed": tc.counts[0], "failed": tc.counts[1], "missing": tc.counts[2], "skipped": tc.counts[3]}
			if tc.unsigned {
				want["bundle-path"] = run.StatementPath
			}
			for k, v := range want {
				if outs[k] != v {
					t.Errorf("output %s = %q, want %q", k, outs[k], v)
				}
			}
			stmt, _ := os.ReadFile(run.StatementPath)
			if outs["bundle-digest"] != evidence.Digest(stmt) || len(outs) != len(want)+1 {
				t.Errorf("outputs %q: want exactly %q and bundle-digest %s", outs, want, evidence.Digest(stmt))
			}
			if env := s.read(t, "GITHUB_ENV"); env != "" {
				t.Errorf("GITHUB_ENV written: %q", env)
			}
			for _, c := range tc.commands {
				if !strings.Contains(s.stdout.String(), c) {
					t.Errorf("no workflow command starting %q in:\n%s", c, s.stdout.String())
				}
			}
			norm := func(b string) []byte { return []byte(strings.ReplaceAll(b, dir, "$RUN")) }
			golden.Bytes(t, filepath.Join("testdata", t.Name()+".output.golden"), norm(s.read(t, "GITHUB_OUTPUT")))
			golden.Bytes(t, filepath.Join("testdata", t.Name()+".summary.md"), norm(s.read(t, "GITHUB_STEP_SUMMARY")))
			golden.Bytes(t, filepath.Join("testdata", t.Name()+".stdout.golden"), norm(s.stdout.String()))
		})
	}
}

// TestNoRuntimeFiles: a local run (no GITHUB_OUTPUT, no
// GITHUB_STEP_SUMMARY) does not panic and writes nothing but the
// annotations, saying what it skipped.
func TestNoRuntimeFiles(t *testing.T) {
	run, _ := loadRun(t, "shop-bad")
	var stdout, stderr bytes.Buffer
	rt := actions.New(&stdout, &stderr, func(string) string { return "" })
	if err := rt.Publish(run); err != nil {
		t.Fatal(err)
	}
	if err := rt.PublishNoVerdict(fmt.Errorf("boom")); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"GITHUB_OUTPUT is not set", "GITHUB_STEP_SUMMARY is not set"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr does not say %q:\n%s", w, stderr.String())
		}
	}
	if !strings.HasPrefix(stdout.String(), "::error ") {
		t.Errorf("annotations not written: %q", stdout.String())
	}
}

// TestUnwritableRuntimeFile: a runtime file that cannot be written is an
// RM-ACTIONS-001 error, not a panic, and the other parts are still written.
func TestUnwritableRuntimeFile(t *testing.T) {
	run, _ := loadRun(t, "shop-bad")
	s := newStep(t)
	s.env["GITHUB_OUTPUT"] = t.TempDir() // a directory
	err := s.runtime().Publish(run)
	if rmerr.CodeOf(err) != rmerr.ActionsRuntime || !strings.Contains(err.Error(), "GITHUB_OUTPUT") {
		t.Fatalf("error %v, want RM-ACTIONS-001 naming GITHUB_OUTPUT", err)
	}
	if !strings.Contains(s.read(t, "GITHUB_STEP_SUMMARY"), "not merge-ready") {
		t.Error("the summary was not written")
	}
}

func TestPublishNoVerdict(t *testing.T) {
	s := newStep(t)
	cause := rmerr.New(rmerr.GitRepository, "git failed on <b>|x|</b>\n::error::injected").WithHint("check the repository")
	if err := s.runtime().PublishNoVerdict(cause); err != nil {
		t.Fatal(err)
	}
	outs, err := actionstest.ReadFileCommands(s.env["GITHUB_OUTPUT"])
	if err != nil || len(outs) != 1 || outs["verdict"] != "not-merge-ready" {
		t.Fatalf("outputs %q (%v), want only verdict=not-merge-ready", outs, err)
	}
	if n := strings.Count(s.stdout.String(), "\n"); n != 1 || !strings.HasPrefix(s.stdout.String(), "::error title=runmill%3A no verdict::") {
		t.Errorf("want one error annotation, got:\n%s", s.stdout.String())
	}
	golden.Bytes(t, filepath.Join("testdata", t.Name()+".summary.md"), []byte(s.read(t, "GITHUB_STEP_SUMMARY")))
}

func TestStopCommands(t *testing.T) {
	s := newStep(t)
	resume := s.runtime().StopCommands()
	resume()
	m := regexp.MustCompile(`^::stop-commands::(runmill-[0-9a-f]{32})\n::(runmill-[0-9a-f]{32})::\n$`).FindStringSubmatch(s.stdout.String())
	if m == nil || m[1] != m[2] {
		t.Fatalf("stop/resume commands: %q", s.stdout.String())
	}
}

// hostile is the text a pull request controls, at its worst: Markdown,
// HTML, workflow commands, line breaks and the file-command delimiter.
const hostile = "x|y</td><img src=x onerror=alert(1)>[link](https://evil.example)\n::error::fake\r\n" +
	"_GitHubActionsFileCommandDelimeter_\nverdict=merge-ready\n`code` **b** # h @someone :+1: &amp;"

// TestHostileText puts hostile text everywhere a pull request reaches (test
// names, failure messages, a focused file, agent proposal ids) and checks
// that none of it escapes: the outputs are still exactly runmill's eight, the
// summary's tables keep their shape and carry no live HTML, and every
// annotation stays one workflow command.
func TestHostileText(t *testing.T) {
	run, _ := loadRun(t, "shop-bad")
	d := &run.Delivery
	d.Manifest.IgnoredProposals = append(d.Manifest.IgnoredProposals, struct {
		ID     string `json:"id"`
		Reason string `json:"reason"`
	}{hostile, hostile})
	d.Verdict.Failures = append(d.Verdict.Failures, record.Finding{Rule: "outcome.focused", Check: "unit", File: "web/cart.test.js", Line: 2, Message: hostile, Hint: hostile, IDs: []report.TestID{hostile}})
	d.Verdict.Notes = append(d.Verdict.Notes, hostile)
	for i := range d.Checks {
		if inv := d.Checks[i].Report.Inventory; inv != nil && len(inv.Failed) > 0 {
			inv.Failed = append(inv.Failed, hostile)
		}
	}
	s := newStep(t)
	if err := s.runtime().Publish(run); err != nil {
		t.Fatal(err)
	}
	outs, err := actionstest.ReadFileCommands(s.env["GITHUB_OUTPUT"])
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 8 || outs["verdict"] != "not-merge-ready" {
		t.Fatalf("outputs %q", outs)
	}
	sum := s.read(t, "GITHUB_STEP_SUMMARY")
	prose := withoutCodeSpans(sum)
	for _, bad := range []string{"<img", "</td>", "](https://evil", "\n::error", "**b**", "&amp;", "@someone"} {
		if i := strings.Index(prose, bad); i >= 0 && (i == 0 || prose[i-1] != '\\') {
			t.Errorf("summary contains live %q: %s", bad, prose[max(i-40, 0):min(i+40, len(prose))])
		}
	}
	// Every table row has as many unescaped cell separators as its header.
	cells := regexp.MustCompile(`(^|[^\\])\|`)
	want := 0
	for _, l := range strings.Split(sum, "\n") {
		switch {
		case !strings.HasPrefix(l, "|"):
			want = 0
		case want == 0:
			want = len(cells.FindAllString(l, -1))
		case len(cells.FindAllString(l, -1)) != want:
			t.Errorf("table row with a different cell count (%d, want %d): %s", len(cells.FindAllString(l, -1)), want, l)
		}
	}
	for _, l := range strings.Split(strings.TrimSuffix(s.stdout.String(), "\n"), "\n") {
		if !strings.HasPrefix(l, "::error ") && !strings.HasPrefix(l, "::warning ") {
			t.Errorf("stdout line is not one annotation: %q", l)
		}
	}
}

// TestAnnotationsEscaped: a failing test whose name and failure output hold
// ESC, CR, LF, "::" and "%" (a go test -json report can carry them all)
// reaches its ::error annotation escaped by pkg/printable and encoded for
// the workflow command: one command line, no raw control byte in it or in
// what GitHub decodes from it, no decoded line starting with "::", and a
// "%" that stays the character it was.
func TestAnnotationsEscaped(t *testing.T) {
	run, dir := loadRun(t, "shop-bad")
	const name = "TestEvil\x1b[31m\r\n::error::forged%0A,title=x:y"
	const output = "    cart_test.go:18: boom \x1b[2J\rgone\r\n::warning::fake %25 %0A\n"
	id := report.TestID("example.com/shop/cart::" + name)
	event := func(action, out string) string {
		b, err := json.Marshal(map[string]string{"Action": action, "Package": "example.com/shop/cart", "Test": name, "Output": out})
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	rep := event("run", "") + event("output", "=== RUN   "+name+"\n") + event("output", output) + event("fail", "")
	addr := evidence.ArtifactAddress(digest.Hex([]byte(rep)))
	p, _ := evidence.ArtifactPath(filepath.Join(dir, "artifacts"), addr)
	if err := os.WriteFile(p, []byte(rep), 0o644); err != nil {
		t.Fatal(err)
	}
	hostileCheck := "unit\x1b]0;pwn\x07\r\n::error::x%25"
	found := false
	for i := range run.Delivery.Checks {
		c := &run.Delivery.Checks[i]
		if c.CheckID == "unit" && c.Phase == record.Candidate {
			c.Report.Artifact, c.Report.Inventory.Failed = addr, []report.TestID{id}
			found = true
		}
	}
	if !found {
		t.Fatal("the fixture has no candidate run of unit")
	}
	run.Delivery.Verdict.Failures = append(run.Delivery.Verdict.Failures, record.Finding{Rule: "outcome.tests-failed", Check: hostileCheck,
		Message: "failed:\x1b[1m " + name, IDs: []report.TestID{id}, Hint: "::add-mask::x\rfix"})
	s := newStep(t)
	if err := s.runtime().Publish(run); err != nil {
		t.Fatal(err)
	}
	type command struct {
		props map[string]string
		msg   string
	}
	unescape := regexp.MustCompile(`%(25|0D|0A|3A|2C)`)
	decode := func(v string) string {
		return unescape.ReplaceAllStringFunc(v, func(m string) string {
			return map[string]string{"%25": "%", "%0D": "\r", "%0A": "\n", "%3A": ":", "%2C": ","}[m]
		})
	}
	var cmds []command
	for _, l := range strings.Split(strings.TrimSuffix(s.stdout.String(), "\n"), "\n") {
		if strings.ContainsAny(l, "\x1b\r\x07") {
			t.Errorf("a raw control byte in the command %q", l)
		}
		head, msg, ok := strings.Cut(strings.TrimPrefix(l, "::"), "::")
		if !ok || !strings.HasPrefix(l, "::error ") && !strings.HasPrefix(l, "::warning ") {
			t.Fatalf("stdout line is not one annotation: %q", l)
		}
		c := command{props: map[string]string{}, msg: decode(msg)}
		_, props, _ := strings.Cut(head, " ")
		for _, kv := range strings.Split(props, ",") {
			k, v, _ := strings.Cut(kv, "=")
			c.props[k] = decode(v)
		}
		for k, v := range c.props {
			if strings.ContainsAny(v, "\x1b\r\n\x07") {
				t.Errorf("property %s decodes to %q: a control character", k, v)
			}
		}
		for _, ml := range strings.Split(c.msg, "\n") {
			if strings.ContainsAny(ml, "\x1b\r\x07") || strings.HasPrefix(ml, "::") {
				t.Errorf("message line %q: a control character or a leading ::", ml)
			}
		}
		cmds = append(cmds, c)
	}
	// The test's own annotation: titled by its name on one line, escaped;
	// its output a line of its own, escaped; "%" as written.
	wantTitle := printable.Text(string(id), 0)
	var testMsg, findingTitle string
	for _, c := range cmds {
		if c.props["title"] == wantTitle {
			testMsg = c.msg
		}
		if strings.Contains(c.props["title"], "pwn") {
			findingTitle = c.props["title"]
		}
	}
	if testMsg == "" {
		t.Fatalf("no annotation of the failing test titled %q in:\n%s", wantTitle, s.stdout.String())
	}
	for _, want := range []string{"failed in check unit (the check exited with code 1):\n", `boom \x1b[2J\rgone`, `\x3a:warning::fake %25 %0A`} {
		if !strings.Contains(testMsg, want) {
			t.Errorf("the test's annotation %q does not hold %q", testMsg, want)
		}
	}
	if want := "runmill: outcome.tests-failed in check " + printable.Text(hostileCheck, 0); findingTitle != want {
		t.Errorf("the finding's title decodes to %q, want %q", findingTitle, want)
	}
}

// withoutCodeSpans drops the content of every code span (CommonMark: a run
// of n backticks up to the next run of exactly n), where nothing is live.
func withoutCodeSpans(md string) string {
	var b strings.Builder
	for i := 0; i < len(md); {
		if md[i] != '`' || (i > 0 && md[i-1] == '\\') {
			b.WriteByte(md[i])
			i++
			continue
		}
		n := 0
		for i+n < len(md) && md[i+n] == '`' {
			n++
		}
		fence := strings.Repeat("`", n)
		end := -1
		for j := i + n; j < len(md); {
			k := strings.Index(md[j:], fence)
			if k < 0 {
				break
			}
			k += j
			if (k+n == len(md) || md[k+n] != '`') && (k == 0 || md[k-1] != '`') {
				end = k
				break
			}
			for j = k; j < len(md) && md[j] == '`'; j++ {
			}
		}
		if end < 0 {
			b.WriteString(fence)
			i += n
			continue
		}
		b.WriteString("<code>")
		i = end + n
	}
	return b.String()
}

// TestAnnotationLimits: 10 errors and 10 warnings at most, the missing
// test first, then located ones, and the summary says how many were left
// out.
func TestAnnotationLimits(t *testing.T) {
	run, _ := loadRun(t, "shop-bad")
	d := &run.Delivery
	for i := range 25 {
		d.Verdict.Failures = append(d.Verdict.Failures, record.Finding{Rule: "outcome.focused", File: "web/cart.test.js", Line: i + 1, Message: fmt.Sprint("focus ", i)})
		d.Verdict.Notes = append(d.Verdict.Notes, fmt.Sprint("note ", i))
	}
	s := newStep(t)
	if err := s.runtime().Publish(run); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(s.stdout.String(), "\n"), "\n")
	var errs, warns int
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "::error "):
			errs++
			if i == 0 {
				if !strings.HasPrefix(l, "::error title=runmill%3A RM-VERIFY-003 in check unit::") {
					t.Errorf("the first annotation is not the missing test: %s", l)
				}
			} else if !strings.Contains(l, "file=") {
				t.Errorf("error annotation %d has no file although 29 located ones exist: %s", i, l)
			}
		case strings.HasPrefix(l, "::warning "):
			warns++
		}
	}
	if errs != actions.MaxErrors || warns != actions.MaxWarnings {
		t.Errorf("%d errors, %d warnings; want %d and %d", errs, warns, actions.MaxErrors, actions.MaxWarnings)
	}
	if sum := s.read(t, "GITHUB_STEP_SUMMARY"); !strings.Contains(sum, "Annotations: 10 of 30 errors and 10 of 27 warnings shown") {
		t.Errorf("summary does not count the annotations left out:\n%s", sum[strings.LastIndex(sum, "### Evidence"):])
	}
}

// TestSummaryCap: a run too large for one summary is cut within GitHub's
// 1 MiB (less what the step already wrote), says so, and still ends with
// where the evidence is.
func TestSummaryCap(t *testing.T) {
	run, _ := loadRun(t, "shop-bad")
	d := &run.Delivery
	tmpl := d.Checks[len(d.Checks)-1]
	for i := range 20000 {
		c := tmpl
		c.CheckID = fmt.Sprintf("generated-check-%05d", i)
		d.Checks = append(d.Checks, c)
	}
	s := newStep(t)
	before := bytes.Repeat([]byte("x"), 100<<10)
	if err := os.WriteFile(s.env["GITHUB_STEP_SUMMARY"], before, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.runtime().Publish(run); err != nil {
		t.Fatal(err)
	}
	sum := s.read(t, "GITHUB_STEP_SUMMARY")
	if len(sum) > actions.MaxSummaryBytes {
		t.Fatalf("summary is %d bytes, over %d", len(sum), actions.MaxSummaryBytes)
	}
	if len(sum) < actions.MaxSummaryBytes-64<<10 {
		t.Errorf("summary is %d bytes: cut far below the limit", len(sum))
	}
	for _, w := range []string{"The summary was cut here", "### Evidence", "runmill evidence download --repo octo-org/shop --run-id 12345678901"} {
		if !strings.Contains(sum, w) {
			t.Errorf("cut summary lacks %q", w)
		}
	}
}

func TestOutputGrammar(t *testing.T) {
	run, _ := loadRun(t, "shop-good")
	for _, tc := range []struct {
		name string
		mod  func(r *actions.Run)
	}{
		{"line break in the bundle path", func(r *actions.Run) { r.BundlePath = "/tmp/x\nverdict=merge-ready" }},
		{"delimiter in the bundle path", func(r *actions.Run) { r.BundlePath = "/tmp/_GitHubActionsFileCommandDelimeter_" }},
		{"relative bundle path", func(r *actions.Run) { r.BundlePath = "evidence.json" }},
		{"run id with a line break", func(r *actions.Run) { r.Delivery.RunID = "a\nb" }},
		{"run id with spaces", func(r *actions.Run) { r.Delivery.RunID = "a b" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := *run
			tc.mod(&r)
			s := newStep(t)
			err := s.runtime().Publish(&r)
			if rmerr.CodeOf(err) != rmerr.ActionsRuntime {
				t.Fatalf("error %v, want RM-ACTIONS-001", err)
			}
			if out := s.read(t, "GITHUB_OUTPUT"); out != "" {
				t.Errorf("GITHUB_OUTPUT written: %q", out)
			}
		})
	}
}

// TestQuestions: each reason lands on its question's row.
func TestQuestions(t *testing.T) {
	run, _ := loadRun(t, "shop-good")
	for _, tc := range []struct {
		f record.Finding
		q string
	}{
		{record.Finding{Rule: verdict.RuleEmptyManifest, Message: "m"}, "Discovery"},
		{record.Finding{Rule: verdict.RuleNoResult, Check: "unit", Message: "m"}, "Coverage"},
		{record.Finding{Rule: "ci.never-scheduled", Code: rmerr.CINeverScheduled, Message: "m"}, "Coverage"},
		{record.Finding{Rule: verdict.RuleTreeMoved, Code: rmerr.VerifyTreeMoved, Message: "m"}, "Freshness"},
		{record.Finding{Rule: "outcome.zero-tests", Message: "m"}, "Outcome"},
		{record.Finding{Rule: "report.invalid", Message: "m"}, "Outcome"},
	} {
		t.Run(tc.f.Rule, func(t *testing.T) {
			r := *run
			r.Delivery.Verdict = verdict.Verdict{Failures: []record.Finding{tc.f}}
			s := newStep(t)
			if err := s.runtime().Publish(&r); err != nil {
				t.Fatal(err)
			}
			var failed []string
			for _, l := range strings.Split(s.read(t, "GITHUB_STEP_SUMMARY"), "\n") {
				if m := regexp.MustCompile(`^\| \*\*(\w+)\*\*: .* \| ❌ `).FindStringSubmatch(l); m != nil {
					failed = append(failed, m[1])
				}
			}
			if !slices.Equal(failed, []string{tc.q}) {
				t.Errorf("failed questions %v, want [%s]", failed, tc.q)
			}
		})
	}
}

// TestSummaryListsMovedTests: a candidate run's moved tests (issue 24: found
// under the id git's renames give them) are listed in the job summary, one
// line each saying how the test moved, escaped like every repository text.
func TestSummaryListsMovedTests(t *testing.T) {
	run, _ := loadRun(t, "shop-good")
	d := &run.Delivery
	i := slices.IndexFunc(d.Checks, func(c record.CheckRun) bool { return c.Phase == record.Candidate })
	if i < 0 {
		t.Fatal("the recorded run has no candidate run")
	}
	d.Checks[i].Moved = []record.TestMove{
		{From: "tests.test_cart::test_total", To: "cart.tests.test_cart::test_total", By: record.MovedFile},
		{From: "example.com/shop/cart::TestTotal", To: "example.com/shop/internal/cart::TestTotal", By: record.MovedPackage},
		{From: "t.py::test_add[1-2-3]", To: "t.py::test_add[1-3-4]<img src=x>", By: record.MovedParameters},
	}
	s := newStep(t)
	if err := s.runtime().Publish(run); err != nil {
		t.Fatal(err)
	}
	sum := s.read(t, "GITHUB_STEP_SUMMARY")
	if j := strings.Index(sum, "<img"); j >= 0 && sum[j-1] != '\\' {
		t.Errorf("summary carries a moved id's live HTML:\n%s", sum)
	}
	// The summary escapes Markdown punctuation; the words are read without it.
	plain := regexp.MustCompile(`\\(.)`).ReplaceAllString(sum, "$1")
	check := d.Checks[i].CheckID
	for _, want := range []string{"### Moved tests",
		"- " + check + `: moved, not missing: "tests.test_cart::test_total" → "cart.tests.test_cart::test_total" (its file was renamed)`,
		`"example.com/shop/cart::TestTotal" → "example.com/shop/internal/cart::TestTotal" (its Go package moved)`,
		"(its parametrized case was renamed)",
	} {
		if !strings.Contains(plain, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}

// TestSummaryLanding: a candidate behind its base was tested as the merge,
// and the summary says so under the candidate line, as the console does
// (explain.LandingLine); the base's name is PR text, escaped.
func TestSummaryLanding(t *testing.T) {
	run, _ := loadRun(t, "shop-good")
	run.Delivery.Candidate.Landing = evidence.Landing{BaseRef: "main", Commit: strings.Repeat("d", 40), GitTree: strings.Repeat("e", 40),
		Merged: true, Behind: 3, Conflicts: []string{}}
	s := newStep(t)
	if err := s.runtime().Publish(run); err != nil {
		t.Fatal(err)
	}
	want := `tested the merge with main at 656e49e95d15\: the branch is 3 commits behind`
	if sum := s.read(t, "GITHUB_STEP_SUMMARY"); !strings.Contains(sum, want) {
		t.Errorf("the summary does not say %q:\n%s", want, sum)
	}
}
