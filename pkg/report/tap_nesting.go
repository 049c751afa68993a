package report

import (
	"fmt"

	"github.com/runmill/verify/pkg/report/internal/quote"
	"github.com/runmill/verify/pkg/rmerr"
)

// TAP subtests: moving between depths, and the buffered { … } form.

// preferNesting reports the nesting itself when a structural error happened
// inside subtests of a stream the default identity rule rejects anyway: the
// nesting is the cause, and its error names the declared alternative.
func (p *tapParser) preferNesting(err error) error {
	if p.nestLine > 0 && !p.suite && rmerr.CodeOf(err) != rmerr.ReportLimit {
		return p.nestingError()
	}
	return err
}

// moveTo makes the block at depth the current one: deeper lines open child
// streams, shallower lines close them. A closed child must be followed by
// the test point of its parent (TAP14); closing two levels at once leaves
// the inner one without its point.
func (p *tapParser) moveTo(depth, line int) error {
	cur := len(p.stack) - 1
	if depth == cur {
		return nil
	}
	if depth > cur {
		if p.orphan != nil {
			return tapMalformed(p.orphan.openLine, "a subtest is not followed by its test point (another subtest starts at line %d)", line)
		}
		p.noteNesting(line)
		for d := cur + 1; d <= depth; d++ {
			p.stack = append(p.stack, &tapBlock{depth: d, openLine: line, ordered: true})
		}
		return nil
	}
	if p.orphan != nil {
		return tapMalformed(p.orphan.openLine, "a subtest is not followed by its test point")
	}
	for len(p.stack)-1 > depth {
		b := p.top()
		if b.buffered {
			return tapMalformed(b.openLine, "the buffered subtest opened here is not closed by \"}\" before line %d", line)
		}
		p.stack = p.stack[:len(p.stack)-1]
		if err := p.checkPlan(b, line); err != nil {
			return err
		}
		if b.depth > depth+1 {
			return tapMalformed(b.openLine, "the subtest opened here is not followed by its test point")
		}
		p.orphan = b
	}
	return nil
}

func (p *tapParser) noteNesting(line int) {
	if p.nestLine == 0 {
		p.nestLine = line
	}
}

func (p *tapParser) closesBuffered(depth int) bool {
	for i := len(p.stack) - 1; i > 0; i-- {
		if p.stack[i].buffered {
			return p.stack[i].depth == depth+1
		}
	}
	return false
}

func (p *tapParser) openBuffered(parentDesc string, line int) error {
	if len(p.stack) >= p.lim.MaxDepth {
		return rmerr.New(rmerr.ReportLimit, "TAP line %d opens a subtest %d deep, more than %d (Limits.MaxDepth)", line, len(p.stack), p.lim.MaxDepth-1).
			WithHint("flatten the suite, or split it into several reports")
	}
	p.noteNesting(line)
	p.stack = append(p.stack, &tapBlock{depth: len(p.stack), buffered: true, parentDesc: parentDesc, openLine: line, ordered: true})
	return nil
}

func (p *tapParser) closeBuffered(depth, line int) error {
	if err := p.moveTo(depth+1, line); err != nil {
		return err
	}
	if p.orphan != nil {
		return tapMalformed(p.orphan.openLine, "a subtest is not followed by its test point before the \"}\" at line %d", line)
	}
	b := p.top()
	p.stack = p.stack[:len(p.stack)-1]
	if b.points > 0 || b.planLine > 0 {
		if err := p.checkPlan(b, line); err != nil {
			return err
		}
	}
	parent := p.top()
	return p.adopt(parent, b.parentDesc, b.tests)
}

// adopt moves a child stream's tests into parent, prefixing their ids with
// the description of the point that owns them.
func (p *tapParser) adopt(parent *tapBlock, desc string, children []Test) error {
	for _, t := range children {
		id, err := p.keep.id([]byte(desc + " > " + string(t.ID)))
		if err != nil {
			return err
		}
		t.ID = id
		parent.tests = append(parent.tests, t)
	}
	return nil
}

func (p *tapParser) nestingError() error {
	first := ""
	if p.nestID != "" {
		first = fmt.Sprintf(": first nested test point %s at line %d", quote.String(p.nestID), p.nestIDLine)
	}
	e := rmerr.New(rmerr.ReportIdentity,
		"TAP report nests subtests (line %d)%s; %d of %d test points are inside subtests. Nested plans are rejected rather than guessed (spec § 4)",
		p.nestLine, first, p.nested, p.points)
	e.Line = p.nestLine
	return e.WithHint("declare report.identity: suite-path for this check in .runmill/checks.yaml to accept subtests with ids joined by \" > \" (\"parent > child\"), or make the reporter print flat TAP")
}
