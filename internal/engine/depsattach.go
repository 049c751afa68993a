package engine

import (
	"context"
	"strings"

	"github.com/runmill/verify/internal/deps"
	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/discovery"
	"github.com/runmill/verify/pkg/rmerr"
)

// attachDeps waits for the run's preparation and attaches the check's
// strategy to the checkout at dir. A refusal (RM-VERIFY-005) becomes a
// finding and ok=false; anything else is a run error.
func (e *executor) attachDeps(ctx context.Context, c discovery.Check, dir string, finding func(rule, code, format string, args ...any)) (*deps.View, bool, error) {
	select {
	case <-e.depsReady:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	v, err := e.deps.Attach(ctx, c.Dependencies, dir)
	if err == nil {
		return v, true, nil
	}
	if rmerr.CodeOf(err) != rmerr.VerifyDependencies {
		return nil, false, err
	}
	var msgs []string
	for _, x := range flatten(err) {
		msg := x.Error()
		if re, ok := x.(*rmerr.Error); ok && re.Err == nil {
			msg = re.Msg
			if re.Hint != "" {
				msg += "; fix: " + re.Hint
			}
		}
		msgs = append(msgs, msg)
	}
	finding(ruleDependencies, string(rmerr.VerifyDependencies), "%s", strings.Join(msgs, "; "))
	return &deps.View{}, false, nil
}

func sandboxViews(ms []deps.Mount) []sandbox.View {
	out := make([]sandbox.View, len(ms))
	for i, m := range ms {
		out[i] = sandbox.View{Source: m.Source, Destination: m.Destination, Upper: m.Upper, Work: m.Work}
	}
	return out
}

// ruleDependencies is the rule of an RM-VERIFY-005 finding.
const ruleDependencies = "dependencies.unprepared"

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, x := range j.Unwrap() {
			out = append(out, flatten(x)...)
		}
		return out
	}
	return []error{err}
}
