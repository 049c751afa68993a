package cli

import (
	"flag"
	"os"

	"github.com/runmill/verify/internal/engine"
	"github.com/runmill/verify/pkg/evidence"
	"github.com/runmill/verify/pkg/rmerr"
)

// reuseFlags are verify's --reuse, --trust and --no-reuse (baseline reuse,
// docs/benchmarks.md § Baseline reuse).
type reuseFlags struct {
	dirs  []string
	trust string
	off   bool
}

func (f *reuseFlags) register(fs *flag.FlagSet) {
	fs.Func("reuse", "reuse baseline runs of the signed runs under `DIR` (a run, runs/ or state dir; repeatable) whose input keys are equal", func(s string) error {
		f.dirs = append(f.dirs, s)
		return nil
	})
	fs.StringVar(&f.trust, "trust", "", "trust document `FILE` reused runs must verify against (default: the signing key's own public key)")
	fs.BoolVar(&f.off, "no-reuse", false, "execute every run, reusing none (the state dir's runs are reused by default when a signing key is set)")
}

// apply sets o's reuse options; the trust document is parsed here so that a
// bad one is a usage error, not a silent lack of reuse.
func (f *reuseFlags) apply(o *engine.VerifyOptions) error {
	o.Reuse, o.NoReuse = f.dirs, f.off
	if f.trust == "" {
		if len(f.dirs) > 0 && o.SigningKey == nil {
			return rmerr.New(rmerr.Usage, "--reuse needs a trust document").InField("--reuse").
				WithHint("pass --trust FILE (the trust document the earlier runs verify against) or --signing-key")
		}
		return nil
	}
	b, err := os.ReadFile(f.trust)
	if err != nil {
		return rmerr.Wrap(rmerr.Usage, err, "reading --trust").At(f.trust, 0)
	}
	if _, err := evidence.ParseTrust(b); err != nil {
		return rmerr.Wrap(rmerr.Usage, err, "parsing --trust").At(f.trust, 0)
	}
	o.ReuseTrust = b
	return nil
}
