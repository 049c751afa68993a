package deps

import "sort"

// InputKeys are the receipt keys a check run of strategy at commit would
// see ("strategy key fingerprint" each, sorted), and false when the run
// would be refused or nothing was prepared for that commit. A verification
// that reuses an earlier run (internal/engine/reuse.go) puts them in the
// run's input key: a different install is a different computation.
func (p *Prepared) InputKeys(strategy, commit string) ([]string, bool) {
	if p == nil || p.errs[strategy] != nil {
		return nil, false
	}
	line := func(r Receipt) string { return r.Strategy + " " + r.Key + " " + r.Fingerprint }
	var out []string
	switch strategy {
	case NPM:
		if p.npm == nil || p.npm.errs[commit] != nil {
			return nil, false
		}
		// A copy-on-write view lets tools write where the read-only one
		// fails them (cow.go): the same install, another computation.
		mode := ""
		if p.cow {
			mode = " copy-on-write"
		}
		for _, s := range p.npm.sides {
			if s.commit == commit {
				out = append(out, line(s.receipt)+mode)
			}
		}
	case GoModules:
		if p.gom == nil || p.gom.errs[commit] != nil {
			return nil, false
		}
		for _, s := range p.gom.sides {
			if s.commit == commit {
				out = append(out, line(s.receipt))
			}
		}
		if p.gom.build != nil {
			out = append(out, "build-cache "+p.gom.build.Key+" "+p.gom.build.Fingerprint)
		}
	case Cargo:
		if p.crg == nil || p.crg.errs[commit] != nil {
			return nil, false
		}
		for _, s := range p.crg.sides {
			if s.commit == commit {
				out = append(out, line(s.receipt))
			}
		}
	}
	if len(out) == 0 {
		return nil, false
	}
	sort.Strings(out)
	return out, true
}
