package cli

import (
	"context"

	"github.com/runmill/verify/pkg/rmerr"
)

// Commands of the interface that later issues build. They exist so the
// interface is complete and scripts get a clear, coded answer.
func init() {
	for _, c := range []struct{ name, usage, summary string }{
		{"doctor", "[--check NAME]", "check the environment (containerd, sandbox probe, dependencies)"},
		{"init", "", "write a starter .runmill/checks.yaml and an operator policy template"},
	} {
		c := &command{name: c.name, usage: c.usage, summary: c.summary + " (not built yet)"}
		c.run = func(ctx context.Context, s IO, args []string) error {
			fs := newFlags(c, s)
			if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
				fs.Usage()
				return nil
			}
			return rmerr.New(rmerr.NotImplemented, "'runmill %s' is not built yet", c.name).
				WithHint("see the open issues; use 'runmill manifest' for Discovery today")
		}
		register(c)
	}
}
