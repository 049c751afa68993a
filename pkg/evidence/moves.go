// Issue 24's facts of the change — git's renames between the compared
// commits, the declared skips the change makes, the approval that lets them
// count — as the statement records them, the expectations bind them, and
// pkg/outcome's comparison takes them.

package evidence

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/runmill/verify/pkg/budget"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/outcome"
	"github.com/runmill/verify/pkg/record"
)

// ChangeOf is the one mapping from a delivery's facts to the outcome
// comparison's inputs for check c: the engine compares through it and
// Verify recomputes through it.
func ChangeOf(m *discovery.Manifest, c discovery.Check, renames *record.Renames, approver string) outcome.Change {
	return outcome.Change{
		Declared: c.DeclaredSkips, Added: c.ChangeDeclaredSkips, Removed: c.ChangeRemovedSkips,
		Mode: m.ChangeDeclarations, Approver: approver, Renames: renames,
	}
}

// ChangeApprover is who lets the change's own declared skips count: a
// reviewer other than the pull request's author whose latest deciding
// review (approved, changes requested or dismissed; a comment decides
// nothing) approves head. The first such reviewer by name; "" for none —
// also outside a pull request (no author). reviews are in the order GitHub
// lists them, oldest first.
func ChangeApprover(reviews []Review, author, head string) string {
	if author == "" {
		return ""
	}
	latest := map[string]Review{}
	for _, r := range reviews {
		if r.State != "commented" {
			latest[r.Reviewer] = r
		}
	}
	var approvers []string
	for who, r := range latest {
		if who != author && r.State == "approved" && r.Commit == head {
			approvers = append(approvers, who)
		}
	}
	if len(approvers) == 0 {
		return ""
	}
	slices.Sort(approvers)
	return approvers[0]
}

// approverOf is ChangeApprover of a delivery's records.
func approverOf(p *Delivery) string {
	return ChangeApprover(p.Reviews, p.Candidate.Author, p.Candidate.Head)
}

// SortRenames puts renames in their one recorded order.
func SortRenames(r *record.Renames) {
	slices.SortFunc(r.Files, func(a, b record.FileRename) int {
		return cmp.Or(strings.Compare(a.From, b.From), strings.Compare(a.To, b.To))
	})
	slices.SortFunc(r.GoPackages, func(a, b record.PackageMove) int {
		return cmp.Or(strings.Compare(a.From, b.From), strings.Compare(a.To, b.To))
	})
}

func sameRenames(a, b *record.Renames) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.From == b.From && a.To == b.To && a.Truncated == b.Truncated &&
		slices.Equal(a.Files, b.Files) && slices.Equal(a.GoPackages, b.GoPackages)
}

// noRenames: nothing moves with r.
func noRenames(r *record.Renames) bool {
	return r == nil || len(r.Files) == 0 && len(r.GoPackages) == 0
}

// checkRenames is the grammar of recorded renames: two commits, sorted
// unique entries with paths, similarities of git's range, within the
// budget.
func checkRenames(r *record.Renames) *failure {
	if r == nil {
		return nil
	}
	bad := func(format string, args ...any) *failure {
		return fail(ReasonStatement, "predicate.renames: %s", fmt.Sprintf(format, args...))
	}
	if !isCommit(r.From) || !isCommit(r.To) {
		return bad("from and to must be commit ids")
	}
	if len(r.Files) > budget.Renames {
		return bad("%d file renames, more than the %d a statement records", len(r.Files), budget.Renames)
	}
	var size int64
	for i, f := range r.Files {
		size += int64(len(f.From) + len(f.To))
		switch {
		case f.From == "" || f.To == "" || f.From == f.To:
			return bad("files[%d] needs two different paths", i)
		case f.Similarity < 0 || f.Similarity > 100:
			return bad("files[%d].similarity %d is not 0 to 100", i, f.Similarity)
		case i > 0 && cmp.Or(strings.Compare(r.Files[i-1].From, f.From), strings.Compare(r.Files[i-1].To, f.To)) >= 0:
			return bad("files must be sorted and unique")
		}
	}
	if size > budget.RenameBytes {
		return bad("the renamed paths take %d bytes, more than %d", size, budget.RenameBytes)
	}
	for i, p := range r.GoPackages {
		switch {
		case p.From == "" || p.To == "" || p.From == p.To:
			return bad("go_packages[%d] needs two different import paths", i)
		case i > 0 && cmp.Or(strings.Compare(r.GoPackages[i-1].From, p.From), strings.Compare(r.GoPackages[i-1].To, p.To)) >= 0:
			return bad("go_packages must be sorted and unique")
		}
	}
	return nil
}

var moveKinds = []record.MoveKind{record.MovedFile, record.MovedPackage, record.MovedParameters}

// checkMoved is the grammar of a run's moved tests: only a candidate run
// has them, each with two ids and a known kind, sorted and unique.
func checkMoved(r *record.CheckRun) string {
	if len(r.Moved) > 0 && (r.Phase != record.Candidate || r.Report == nil || r.Report.Inventory == nil) {
		return "only a candidate run with an inventory records moved tests"
	}
	for i, m := range r.Moved {
		switch {
		case m.From == "" || m.To == "" || m.From == m.To || !slices.Contains(moveKinds, m.By):
			return fmt.Sprintf("moved[%d] needs two different ids and a kind of %v", i, moveKinds)
		case i > 0 && cmp.Or(strings.Compare(string(r.Moved[i-1].From), string(m.From)), strings.Compare(string(r.Moved[i-1].To), string(m.To))) >= 0:
			return "moved must be sorted and unique"
		}
	}
	return ""
}

// ChangeDeclarations is, per check, the test ids of the declared skips the
// change adds and removes, as the expectations list them (from the
// manifest Discovery resolves).
func ChangeDeclarations(m *discovery.Manifest) []ChangeDeclarationExpectation {
	out := []ChangeDeclarationExpectation{}
	for _, c := range m.Checks {
		if len(c.ChangeDeclaredSkips) == 0 && len(c.ChangeRemovedSkips) == 0 {
			continue
		}
		e := ChangeDeclarationExpectation{CheckID: c.ID, Added: []string{}, Removed: slices.Clone(c.ChangeRemovedSkips)}
		for _, d := range c.ChangeDeclaredSkips {
			e.Added = append(e.Added, d.TestID)
		}
		if e.Removed == nil {
			e.Removed = []string{}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b ChangeDeclarationExpectation) int { return strings.Compare(a.CheckID, b.CheckID) })
	return out
}

// bindChange holds the statement's issue 24 facts to the expectations: the
// pull request's author, the renames git shows between the compared
// commits, the change's own declared skips and the policy that says
// whether they count. An expectations document that predates them binds
// only a statement that moved nothing and declares nothing itself.
func (v *verification) bindChange() *failure {
	e, p := v.delivery, &v.dst.Predicate
	bad := func(format string, args ...any) *failure { return fail(ReasonBinding, format, args...) }
	if p.Candidate.Author != e.Author {
		return bad("predicate.candidate.author is %q, the expectations say %q", p.Candidate.Author, e.Author)
	}
	if e.Renames == nil {
		if !noRenames(p.Renames) {
			return bad("the statement records renames between the compared commits and the expectations observed none (regenerate them with evidence expect)")
		}
	} else if !sameRenames(p.Renames, e.Renames) {
		return bad("predicate.renames differ from the renames git shows between %s and %s", e.Renames.From, e.Renames.To)
	}
	want := e.ChangeDeclarations
	if want == nil {
		want = []ChangeDeclarationExpectation{}
	}
	got := ChangeDeclarations(&p.Manifest)
	if !slices.EqualFunc(got, want, func(a, b ChangeDeclarationExpectation) bool {
		return a.CheckID == b.CheckID && slices.Equal(a.Added, b.Added) && slices.Equal(a.Removed, b.Removed)
	}) {
		return bad("the declared skips the manifest says the change adds or removes (%v) are not those the candidate's policy shows (%v)", got, want)
	}
	if mode := e.Policy.ChangeDeclarations; mode != "" && mode != p.Manifest.ChangeDeclarations {
		return bad("predicate.manifest.change_declarations is %q, the expectations say %q", p.Manifest.ChangeDeclarations, mode)
	}
	if who := approverOf(p); who != "" && !slices.Contains(e.Reviews.Approvals, Approval{Reviewer: who, Commit: e.Head}) {
		return bad("the change's own declared skips count on an approval by %q on %s that the expectations did not observe", who, e.Head)
	}
	return nil
}
