package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/internal/explain"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/rmerr"
)

// inspectOptions are inspect's flags.
type inspectOptions struct {
	run  string // RUN-ID or PATH
	out  string
	json bool
}

func newInspectCmd(runF func(context.Context, IO, *inspectOptions) error) *command {
	if runF == nil {
		runF = runInspect
	}
	c := &command{
		name:    "inspect",
		usage:   "RUN-ID|PATH [--out DIR] [--json]",
		summary: "show what a run proved, and by whom",
		long: `Renders a run's record: per check run the command, commit, tree hash before and
after, executor, exit code, duration and stdout hash. PATH is a run directory, its
statement.json, or a signed bundle (evidence.json). inspect reads; it does not verify
signatures: use 'runmill evidence verify' for that.

Exit: 0 · 1 not found or unreadable.`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		o := &inspectOptions{}
		fs := newFlags(c, s)
		fs.StringVar(&o.out, "out", "", "state `DIR` where runs/RUN-ID lives")
		fs.BoolVar(&o.json, "json", false, "print the raw delivery record")
		if err := fs.parse(args); err != nil {
			return err
		}
		if len(fs.pos) != 1 {
			return rmerr.New(rmerr.Usage, "inspect takes one RUN-ID or PATH").WithHint("run 'runmill inspect --help'")
		}
		o.run = fs.pos[0]
		return runF(ctx, s, o)
	}
	return c
}

// runInspect renders a run's record. A run not found or unreadable is a
// negative answer (exit 1).
func runInspect(_ context.Context, s IO, o *inspectOptions) error {
	st, src, err := loadStatement(o.run, engine.StateDir(o.out, os.Getenv))
	if err != nil {
		return negative{err}
	}
	d := &st.Predicate
	// The stored outputs sit beside the statement (a run directory, or
	// a downloaded artifact); elsewhere the causes lack their tails.
	why := explain.Checks(filepath.Dir(src), d)
	if o.json {
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		// The delivery record as signed, plus why each run did not pass:
		// the full failed-test and missing-id lists are in the record.
		return enc.Encode(struct {
			*evidence.Delivery
			Why []explain.Explanation `json:"why"`
		}{d, nonNil(why)})
	}
	if err := printInspect(s.Out, d, src); err != nil {
		return err
	}
	writeReused(s.Out, d)
	writeWhy(s.Out, d, why, d.RunID)
	writeHarness(s.Out, d)
	return nil
}

// printInspect renders the run's header and one row per check run.
func printInspect(w io.Writer, d *evidence.Delivery, src string) error {
	word := "NOT MERGE-READY"
	if d.Verdict.MergeReady {
		word = "MERGE-READY"
	}
	fmt.Fprintf(w, "run %s: %s\nsource: %s\nrepository %s, candidate %s, base %s, tree %s\nrunmill %s, issued %s\n\n",
		printable.Text(d.RunID, maxIDBytes), word, printable.Text(src, 0), printable.Text(d.Candidate.Repository.Name, maxIDBytes),
		printable.Text(d.Candidate.Head, maxIDBytes), printable.Text(d.Candidate.Base, maxIDBytes), printable.Text(d.Candidate.Tree, maxIDBytes),
		printable.Text(d.RunmillVersion, maxIDBytes), printable.Text(d.IssuedAt, maxIDBytes))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tPHASE\tEXECUTOR\tCOMMIT\tSTATUS\tEXIT\tMS\tTREE BEFORE\tTREE AFTER\tSTDOUT SHA-256\tCOMMAND")
	for _, r := range d.Checks {
		// The command is one line here, escaped: a multi-line script
		// would otherwise break the table (and could print anything).
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", printable.Text(r.CheckID, maxIDBytes),
			printable.Text(string(r.Phase), maxIDBytes), printable.Text(r.Executor, maxIDBytes), printable.Text(objectid.Short(r.Commit), maxIDBytes),
			printable.Text(string(r.Status), maxIDBytes), r.ExitCode, r.DurationMS, printable.Text(shortDigest(r.TreeBefore), maxIDBytes),
			printable.Text(shortDigest(r.TreeAfter), maxIDBytes), printable.Text(objectid.Short(r.Stdout.SHA256), maxIDBytes), printable.Text(r.Command, maxMessageBytes))
	}
	return tw.Flush()
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

// loadStatement finds a delivery statement by run id, run directory,
// statement file or signed bundle. A bundle's payload is decoded, not
// verified.
func loadStatement(arg, stateDir string) (*evidence.DeliveryStatement, string, error) {
	path := arg
	if st, err := os.Stat(arg); err != nil {
		path = filepath.Join(stateDir, "runs", arg)
		if _, err := os.Stat(path); err != nil {
			return nil, "", rmerr.New(rmerr.Usage, "no run %q (looked for a path and for %s)", arg, path).
				WithHint("pass a run id printed by 'runmill verify', or a path")
		}
	} else if st.IsDir() {
		path = arg
	}
	if st, _ := os.Stat(path); st != nil && st.IsDir() {
		path = filepath.Join(path, "statement.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	if bytes.Contains(b, []byte(`"dsseEnvelope"`)) {
		// A signed bundle: show its statement. Nothing here is verified.
		p, err := evidence.PayloadUnverifiedUnsafe(b)
		if err != nil {
			return nil, "", fmt.Errorf("reading the bundle %s: %w", path, err)
		}
		b = p
	}
	var st evidence.DeliveryStatement
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", path, err)
	}
	if st.PredicateType != evidence.DeliveryPredicateType {
		return nil, "", fmt.Errorf("%s is not a delivery statement (%s)", path, st.PredicateType)
	}
	return &st, path, nil
}
