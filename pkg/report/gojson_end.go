package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runmill/verify/pkg/report/internal/quote"
	"github.com/runmill/verify/pkg/rmerr"
)

// The end of a go test -json stream: unfinished tests, repeated ids and
// package faults, then the Inventory.

func (p *goParser) end(inv *Inventory) error {
	if p.events == 0 {
		if inv.Bytes == 0 {
			return rmerr.New(rmerr.ReportEmpty, "go-json report is empty (0 bytes): zero tests is not a pass").
				WithHint("check that go test -json ran and its output was written to the report file")
		}
		e := rmerr.New(rmerr.ReportMalformed, "no test2json event in %d bytes (%d plain line(s), the first: %s)", inv.Bytes, p.nonJSON, p.nonJSONText)
		return e.WithHint("the go command failed before any test ran (build error, no packages), or this is not go test -json output; fix the run, the report proves nothing")
	}
	finished := p.sortedIDs()
	counted, err := p.unfinished(finished)
	if err != nil {
		return err
	}
	if counted > 0 {
		finished = p.sortedIDs()
	}
	dups := p.duplicates(finished)
	if dups != nil && !p.allowDup {
		return dups
	}
	for _, pkg := range p.order {
		if err := p.pkgFault(pkg); err != nil {
			return err
		}
	}
	for _, bd := range p.builtOrder {
		if bd.failed && !bd.claimed {
			msg, err := p.keep.fromCap(&bd.output, true, func() string { return fmt.Sprintf("build output of %s", bd.importPath) })
			if err != nil {
				return err
			}
			p.faults = append(p.faults, Fault{Scope: bd.importPath, Message: "build failed: " + msg})
		}
	}
	if p.recs.n == 0 && len(p.faults) == 0 {
		return rmerr.New(rmerr.ReportEmpty, "go-json report holds no test: %d package(s) ran zero tests, and zero tests is not a pass", len(p.order)).
			WithHint("check the package pattern and -run filter; \"no test files\" and \"no tests to run\" prove nothing")
	}
	inv.Tests = p.tests()
	p.recs, p.extras = goRecs{}, nil
	inv.Counts = countStatuses(inv.Tests)
	inv.Faults = p.faults
	p.notes(inv, counted)
	p.keep.finish(inv)
	if dups != nil {
		listDuplicates(inv)
	}
	return nil
}

// unfinished records, as failed, the tests that never finished, in the
// order they were first seen, and returns how many. One that only printed
// after its own end (golang/go#29755 misattribution) is not
// a test of its own; one that ran again and never finished is a second
// run of that id.
func (p *goParser) unfinished(finished []int32) (int, error) {
	var unfinished []goUnfinished
	for _, pkg := range p.order {
		for name, t := range pkg.running {
			unfinished = append(unfinished, goUnfinished{pkg, name, t})
		}
	}
	slices.SortFunc(unfinished, func(a, b goUnfinished) int { return a.t.seq - b.t.seq })
	counted := 0
	for _, u := range unfinished {
		if !u.t.ran && p.isFinished(finished, u.pkg.prefix+u.name) {
			continue
		}
		const why = "no pass, fail or skip event: the test never finished (panic, timeout, or the stream was cut)"
		if err := p.record(u.pkg, []byte(u.name), goFailed, u.t, why); err != nil {
			return 0, err
		}
		u.pkg.failed = true
		counted++
	}
	return counted, nil
}

// tests is the inventory's test list, from the records.
func (p *goParser) tests() []Test {
	tests := make([]Test, p.recs.n)
	for i := range tests {
		r := p.recs.at(i)
		t := Test{ID: r.id, Status: goStatuses[r.status]}
		if r.extra > 0 {
			x := p.extras[r.extra-1]
			t.Message, t.File, t.Line = x.message, x.file, x.line
		}
		tests[i] = t
	}
	return tests
}

// notes adds what the inventory should say about the stream: tests
// counted as failed, bare ids, ignored lines, unknown actions.
func (p *goParser) notes(inv *Inventory, counted int) {
	if counted > 0 {
		inv.Notes = append(inv.Notes, fmt.Sprintf("%d test(s) never reached pass, fail or skip and are counted as failed", counted))
	}
	if p.noPkg {
		inv.Notes = append(inv.Notes, "events without a Package field (raw test2json output): those ids are bare test names")
	}
	if p.nonJSON > 0 {
		inv.Notes = append(inv.Notes, fmt.Sprintf("%d non-JSON line(s) ignored, the first at line %d: %s", p.nonJSON, p.nonJSONLine, p.nonJSONText))
	}
	if len(p.unknown) > 0 {
		names := make([]string, 0, len(p.unknown))
		for a := range p.unknown {
			names = append(names, a)
		}
		slices.Sort(names)
		inv.Notes = append(inv.Notes, fmt.Sprintf("unknown test2json actions ignored: %q", names))
	}
}

// sortedIDs returns the indices of recs ordered by id (then position), so
// equal ids sit together without a map as large as the inventory.
func (p *goParser) sortedIDs() []int32 {
	idx := make([]int32, p.recs.n)
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := strings.Compare(string(p.recs.at(int(a)).id), string(p.recs.at(int(b)).id)); c != 0 {
			return c
		}
		return int(a - b)
	})
	return idx
}

func (p *goParser) isFinished(sorted []int32, id string) bool {
	_, found := slices.BinarySearchFunc(sorted, id, func(x int32, id string) int {
		return strings.Compare(string(p.recs.at(int(x)).id), id)
	})
	return found
}

// duplicates rejects a report in which an id has more than one terminal
// event (spec § 4: ids are unique), naming the id whose repeat came first.
func (p *goParser) duplicates(sorted []int32) error {
	var first TestID
	firstAt, count, groups := int32(-1), 0, 0
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && p.recs.at(int(sorted[j])).id == p.recs.at(int(sorted[i])).id {
			j++
		}
		if j-i > 1 {
			groups++
			if second := sorted[i+1]; firstAt < 0 || second < firstAt {
				first, firstAt, count = p.recs.at(int(sorted[i])).id, second, j-i
			}
		}
		i = j
	}
	if groups == 0 {
		return nil
	}
	return rmerr.New(rmerr.ReportIdentity, "test id %s has %d terminal events (%d ids repeat); every id must be unique within a report (spec § 4)",
		quote.String(string(first)), count, groups).
		WithHint("write one report per go test run: -count=N and gotestsum --rerun-fails repeat tests in one stream, and a passing rerun would hide the failure; a test name shared by a package and its _test package also repeats")
}

// pkgFault records a package failure that no test in the inventory shows.
func (p *goParser) pkgFault(pkg *goPkg) error {
	scope := pkg.name
	if scope == "" {
		scope = "report"
	}
	switch {
	case pkg.terminal == "fail" && !pkg.failed:
		what := func() string { return fmt.Sprintf("output of package %s", scope) }
		src := &pkg.output
		prefix := "package failed with no failing test: "
		if pkg.failedBuild != "" {
			prefix = "build failed: "
			if bd := p.builds[pkg.failedBuild]; bd != nil {
				bd.claimed = true
				if bd.output.N > 0 {
					src = &bd.output
					what = func() string { return fmt.Sprintf("build output of %s", pkg.failedBuild) }
				}
			}
		}
		msg, err := p.keep.fromCap(src, true, what)
		if err != nil {
			return err
		}
		p.faults = append(p.faults, Fault{Scope: scope, Message: prefix + msg})
	case pkg.terminal == "":
		p.faults = append(p.faults, Fault{Scope: scope, Message: "the stream ends before the package reported pass or fail: tests that never started are missing"})
	}
	return nil
}
