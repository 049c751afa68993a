package cli

import (
	"context"

	"github.com/runmill/verify/pkg/rmerr"
)

// Commands of the interface that later issues build. They exist so the
// interface is complete and scripts get a clear, coded answer.
func init() {
	for _, c := range []struct{ name, usage, summary string }{
		{"verify", "--repo DIR --base REV --candidate REV [--policy FILE] [--out DIR] [--signing-key FILE] [--agent-proposals FILE] [--containerd-address ADDR] [--json]", "run the whole pipeline and write the run's evidence"},
		{"report inventory", "--format junit|tap|go-json [--identity suite-path] FILE", "parse one test report and print its canonical inventory"},
		{"evidence verify", "BUNDLE --trust F --expectations F [--artifacts-dir D]", "verify a signed evidence bundle offline"},
		{"evidence keygen", "--key-out F --trust-out F [--valid-for DUR]", "write an Ed25519 key pair and a trust document"},
		{"evidence expect", "--repo DIR --base REV --candidate REV [--policy FILE] [--pr N] [--github-repo O/N] [--terminal]", "write an expectations document from independent observation"},
		{"evidence download", "--repo OWNER/NAME --run-id N [--out DIR] [--verify …]", "fetch the evidence artifact of a workflow run"},
		{"inspect", "RUN-ID|BUNDLE [--json]", "show what a run proved, and by whom"},
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
