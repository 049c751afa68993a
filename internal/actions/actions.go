// Package actions is runmill's GitHub Actions runtime (DESIGN.md
// § Packaging): the step outputs, the job summary and the annotations of a
// `runmill verify` run inside a workflow step, written through
// github.com/sethvargo/go-githubactions.
//
// What a pull request controls (check ids, test names, file paths, messages
// quoting them) reaches the summary only escaped for Markdown and HTML, and
// the annotations only escaped by pkg/printable (no control character, no
// line starting with "::") and then encoded for the workflow command by
// go-githubactions; it never reaches GITHUB_OUTPUT or GITHUB_ENV, whose
// values go-githubactions writes with a fixed heredoc delimiter. Every runtime file is optional: a local run
// without GITHUB_OUTPUT or GITHUB_STEP_SUMMARY skips that part and says so.
package actions

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	githubactions "github.com/sethvargo/go-githubactions"

	"github.com/runmill/verify/internal/fsname"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/rmerr"
)

// Run is a finished `runmill verify` run as the summary needs it.
type Run struct {
	// Dir is the run directory (statement, bundles, artifacts/).
	Dir string
	// StatementPath is the delivery statement; BundlePath the signed
	// bundle, "" when the run was not signed.
	StatementPath string
	BundlePath    string
	Delivery      evidence.Delivery
	// Tracked are the candidate commit's tracked files: an annotation names
	// a file only when it is one of them.
	Tracked []string
}

// Runtime writes to one step's runtime files and log.
type Runtime struct {
	gha    *githubactions.Action
	getenv func(string) string
	log    io.Writer
	// NoSummary: Publish leaves the job summary to a later step (the
	// action's, which knows the uploaded artifact: WriteSummary).
	NoSummary bool
}

// New returns the runtime of the current step: workflow commands go to
// stdout, diagnostics to log, and getenv names the runtime files.
func New(stdout, log io.Writer, getenv func(string) string) *Runtime {
	return &Runtime{
		gha:    githubactions.New(githubactions.WithWriter(stdout), githubactions.WithGetenv(getenv)),
		getenv: getenv,
		log:    log,
	}
}

// StopCommands stops the runner from reading workflow commands in the log
// until the returned function is called: everything runmill prints while a
// check runs (check ids, test names, messages) could otherwise contain
// "::error::" or "::add-mask::" lines the runner would obey. The token is
// random, so the printed text cannot end the pause itself.
func (rt *Runtime) StopCommands() (resume func()) {
	token := "runmill-" + fsname.Random(16)
	if err := rt.issue(&githubactions.Command{Name: "stop-commands", Message: token}); err != nil {
		fmt.Fprintln(rt.log, "runmill:", err)
		return func() {}
	}
	return func() {
		if err := rt.issue(&githubactions.Command{Name: token}); err != nil {
			fmt.Fprintln(rt.log, "runmill:", err)
		}
	}
}

// Publish writes a finished run's outputs, job summary and annotations.
// It returns every failure joined; each part is attempted regardless.
func (rt *Runtime) Publish(run *Run) error {
	payload, err := os.ReadFile(run.StatementPath)
	if err != nil {
		return rmerr.Wrap(rmerr.ActionsRuntime, err, "reading the statement for its digest").At(run.StatementPath, 0)
	}
	digest := evidence.Digest(payload)
	var errs []error
	if outs, err := outputs(run, digest); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, rt.setOutputs(outs))
	}
	files := newFileIndex(run.Tracked)
	failing := failingTests(run, files)
	all := annotations(run, failing, files)
	kept, nErr, nWarn := limit(all)
	if !rt.NoSummary {
		errs = append(errs, rt.addSummary(func(budget int) string {
			return summary(run, digest, rt.where(), failing, nErr, nWarn, budget)
		}))
	}
	for _, a := range kept {
		errs = append(errs, rt.annotate(a))
	}
	return errors.Join(errs...)
}

// PublishNoVerdict reports a run that reached no verdict: the verdict output
// is not-merge-ready (the gate fails), the summary says why, and one error
// annotation carries the error.
func (rt *Runtime) PublishNoVerdict(cause error) error {
	msg := cause.Error()
	var errs []error
	errs = append(errs, rt.setOutputs([]Output{{"verdict", NotMergeReady}}))
	errs = append(errs, rt.addSummary(func(budget int) string { return noVerdictSummary(msg, rt.where().ErrorsDoc, budget) }))
	errs = append(errs, rt.annotate(Annotation{Level: "error", Title: "runmill: no verdict", Message: msg}))
	return errors.Join(errs...)
}

func noVerdictSummary(msg, errorsDoc string, limit int) string {
	return fit([]string{
		"## ❌ runmill: no verdict", "",
		"runmill could not decide whether this change is merge-ready, so it is not:", "",
		"> " + text(clip(msg, 8000)), "",
		"The code names the cause and the fix in [docs/errors.md](" + errorsDoc + ").", "",
	}, nil, limit)
}

// where reads where the action uploads the evidence from the step's
// environment (RUNMILL_ARTIFACT_NAME is set by action.yml).
func (rt *Runtime) where() Where {
	w := Where{
		Artifact:   rt.getenv("RUNMILL_ARTIFACT_NAME"),
		Repository: rt.getenv("GITHUB_REPOSITORY"),
		RunID:      rt.getenv("GITHUB_RUN_ID"),
	}
	if s := rt.getenv("GITHUB_SERVER_URL"); s != "" && w.Repository != "" && w.RunID != "" {
		w.RunURL = strings.TrimSuffix(s, "/") + "/" + w.Repository + "/actions/runs/" + w.RunID
	}
	// Only a URL built from plain parts becomes a link.
	if !safeURL(w.RunURL) {
		w.RunURL = ""
	}
	if w.ArtifactURL = rt.getenv("RUNMILL_ARTIFACT_URL"); !safeURL(w.ArtifactURL) {
		w.ArtifactURL = ""
	}
	w.ErrorsDoc = canonicalErrorsDoc
	// The action's own repository and ref (github.action_repository and
	// github.action_ref, which action.yml passes on): the docs of the
	// runmill that ran, not of whatever main says today.
	repo, ref := rt.getenv("RUNMILL_ACTION_REPOSITORY"), rt.getenv("RUNMILL_ACTION_REF")
	server := strings.TrimSuffix(rt.getenv("GITHUB_SERVER_URL"), "/")
	if server == "" {
		server = "https://github.com"
	}
	if u := server + "/" + repo + "/blob/" + ref + "/docs/errors.md"; repo != "" && ref != "" && strings.Count(repo, "/") == 1 && !strings.Contains(ref, "..") && safeURL(u) {
		w.ErrorsDoc = u
	}
	return w
}

func safeURL(u string) bool {
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return false
	}
	for _, r := range u {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~:/", r)) {
			return false
		}
	}
	return true
}

// setOutputs writes validated outputs to GITHUB_OUTPUT.
func (rt *Runtime) setOutputs(outs []Output) error {
	if rt.getenv("GITHUB_OUTPUT") == "" {
		fmt.Fprintln(rt.log, "runmill: GITHUB_OUTPUT is not set (not a GitHub Actions step?): outputs not written")
		return nil
	}
	for _, o := range outs {
		if err := checkOutput(o); err != nil {
			return err
		}
	}
	return rt.fileCommand(func() {
		for _, o := range outs {
			rt.gha.SetOutput(o.Name, o.Value)
		}
	}, "GITHUB_OUTPUT")
}

// addSummary appends to GITHUB_STEP_SUMMARY what render makes of the bytes
// left of the step's 1 MiB.
func (rt *Runtime) addSummary(render func(budget int) string) error {
	path := rt.getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		fmt.Fprintln(rt.log, "runmill: GITHUB_STEP_SUMMARY is not set (not a GitHub Actions step?): job summary not written")
		return nil
	}
	budget := MaxSummaryBytes
	if st, err := os.Stat(path); err == nil {
		budget -= int(st.Size())
	}
	// go-githubactions appends a line break.
	md := render(max(budget-1, 0))
	return rt.fileCommand(func() { rt.gha.AddStepSummary(md) }, "GITHUB_STEP_SUMMARY")
}

// annotate issues one annotation as a workflow command: escaped (title
// and message by pkg/printable), then encoded by go-githubactions.
func (rt *Runtime) annotate(a Annotation) error {
	a = escaped(a)
	props := githubactions.CommandProperties{"title": a.Title}
	if a.File != "" {
		props["file"] = a.File
		if a.Line > 0 {
			props["line"] = fmt.Sprint(a.Line)
		}
	}
	name := "error"
	if a.Level == "warning" {
		name = "warning"
	}
	return rt.issue(&githubactions.Command{Name: name, Message: a.Message, Properties: props})
}

// issue writes one workflow command; go-githubactions panics when its
// writer fails, which becomes an error here.
func (rt *Runtime) issue(c *githubactions.Command) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = rmerr.New(rmerr.ActionsRuntime, "writing a workflow command: %v", r)
		}
	}()
	rt.gha.IssueCommand(c)
	return nil
}

// fileCommand runs f, turning go-githubactions' panic on a file it cannot
// write into an error naming the variable.
func (rt *Runtime) fileCommand(f func(), env string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = rmerr.New(rmerr.ActionsRuntime, "writing %s (%s): %v", env, rt.getenv(env), r).
				WithHint("the file %s names must be writable by the user runmill runs as", env)
		}
	}()
	f()
	return nil
}

// WriteSummary writes the job summary of a finished run, which Publish
// with NoSummary left to a later step (the action's, run once the
// evidence is uploaded and its artifact-url known): to path, a file that
// outlives the step, then appended to GITHUB_STEP_SUMMARY; the step output
// summary-path names the file.
func (rt *Runtime) WriteSummary(run *Run, path string) error {
	md, err := rt.SummaryMarkdown(run)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		return rmerr.Wrap(rmerr.ActionsRuntime, err, "writing the job summary").At(path, 0)
	}
	return errors.Join(
		rt.addSummary(func(int) string { return md }),
		rt.setOutputs([]Output{{"summary-path", path}}),
	)
}

// Where is where the evidence of this step's run is, and where its error
// codes are documented, as the step's environment says.
func (rt *Runtime) Where() Where { return rt.where() }

// SummaryMarkdown renders the job summary of a finished run, within what
// is left of the step's GITHUB_STEP_SUMMARY budget.
func (rt *Runtime) SummaryMarkdown(run *Run) (string, error) {
	payload, err := os.ReadFile(run.StatementPath)
	if err != nil {
		return "", rmerr.Wrap(rmerr.ActionsRuntime, err, "reading the statement for its digest").At(run.StatementPath, 0)
	}
	files := newFileIndex(run.Tracked)
	failing := failingTests(run, files)
	_, nErr, nWarn := limit(annotations(run, failing, files))
	budget := MaxSummaryBytes
	if p := rt.getenv("GITHUB_STEP_SUMMARY"); p != "" {
		if st, err := os.Stat(p); err == nil {
			budget -= int(st.Size())
		}
	}
	return summary(run, evidence.Digest(payload), rt.Where(), failing, nErr, nWarn, max(budget-1, 0)), nil
}
