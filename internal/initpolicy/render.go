package initpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/runmill/verify/internal/sandbox"
	"github.com/runmill/verify/pkg/policy"
)

// Files are the two documents init writes.
type Files struct {
	Checks   []byte // .runmill/checks.yaml
	Operator []byte // the operator policy template
	// Toolchains are the tools the checks need, located on this host.
	Toolchains []Toolchain
	// Omitted are the planned checks not written because the tool the
	// sandbox sees cannot run them (Toolchain.Unusable): checks.yaml holds
	// them commented out, with the fix.
	Omitted []Check
}

// Written are the planned checks checks.yaml declares.
func (f Files) Written(p Plan) []Check {
	var out []Check
	for _, c := range p.Checks {
		if !containsCheck(f.Omitted, c.Spec.ID) {
			out = append(out, c)
		}
	}
	return out
}

func containsCheck(cs []Check, id string) bool {
	for _, c := range cs {
		if c.Spec.ID == id {
			return true
		}
	}
	return false
}

// Render writes the plan as the repository's checks.yaml and an operator
// policy template binding the toolchains host says the sandbox needs. Both
// are hand-formatted YAML with comments; the tests load them with
// pkg/policy's strict parsers.
func Render(p Plan, host Host) Files {
	var f Files
	var binds []string
	var missing []string
	env := map[string][]string{} // check id → environment its command needs
	seen := map[string]bool{}
	for _, c := range p.Checks {
		if seen[c.Tool] {
			continue
		}
		seen[c.Tool] = true
		t := host.Locate(c.Tool)
		f.Toolchains = append(f.Toolchains, t)
		if !t.Found() {
			missing = append(missing, c.Tool)
		}
		if t.Unusable != "" {
			continue // no written check needs its binds
		}
		for _, b := range t.Binds {
			binds = appendNew(binds, b)
		}
	}
	unusable := map[string]Toolchain{}
	for _, t := range f.Toolchains {
		if t.Unusable != "" {
			unusable[t.Tool] = t
		}
	}
	for _, c := range p.Checks {
		if _, bad := unusable[c.Tool]; bad {
			f.Omitted = append(f.Omitted, c)
		}
	}
	p.Checks = f.Written(p)
	for _, c := range p.Checks {
		for _, t := range f.Toolchains {
			if t.Tool == c.Tool && len(t.Env) > 0 {
				env[c.Spec.ID] = t.Env
			}
		}
	}

	var b bytes.Buffer
	b.WriteString(`# .runmill/checks.yaml, written by ` + "`runmill init`" + `: review it, then commit it.
# runmill reads this file from the BASE commit of every change, so an edit to it
# takes effect once it has merged. Reference: docs/policy.md, docs/reports.md.
#
# Every check runs in a fresh read-only checkout in the sandbox (no network; a
# private writable $TMPDIR). The declared report is the one file a check may
# write; runmill parses it, which makes the check's coverage proven, and compares
# its test ids with the base's.
`)
	for _, n := range p.Notes {
		b.WriteString("#\n")
		comment(&b, "", "NOTE: "+n)
	}
	b.WriteString("checks:\n")
	for i, c := range p.Checks {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, l := range c.Comment {
			comment(&b, "  ", l)
		}
		writeCheck(&b, "  ", c.Spec)
	}
	for _, c := range f.Omitted {
		t := unusable[c.Tool]
		b.WriteString("\n")
		comment(&b, "  ", fmt.Sprintf("NOT WRITTEN: the %s check cannot pass on this machine: %s.", c.Spec.ID, t.Unusable))
		comment(&b, "  ", "Fix: "+t.Fix+".")
		comment(&b, "  ", "Then uncomment it:")
		for _, l := range c.Comment {
			comment(&b, "  ", "# "+l)
		}
		var cb bytes.Buffer
		writeCheck(&cb, "", c.Spec)
		for _, l := range strings.Split(strings.TrimSuffix(cb.String(), "\n"), "\n") {
			comment(&b, "  ", l)
		}
	}
	f.Checks = b.Bytes()

	b = bytes.Buffer{}
	b.WriteString(`# Operator policy for runmill verify, written by ` + "`runmill init`" + `.
# Keep it OUTSIDE the repository and pass it with --policy: a pull request must
# not be able to edit the policy that judges it. Reference: docs/policy.md.
autonomy: pr-only
verification:
  # A freshly generated pr-only policy does not block on unproven coverage
  # (spec § 4): a person still owns the merge. Before moving to guarded-merge or
  # continuous, make every required check declare a report (its coverage is then
  # proven) and set this to true: runmill refuses those modes without it. false
  # never turns a zero-test, focused, skipped-test or baseline failure into a pass.
  fail_on_skipped_check: false
`)
	var overrides []Check
	for _, c := range p.Checks {
		if e := env[c.Spec.ID]; len(e) > 0 {
			o := c
			o.Spec.Run = exportLines(e) + c.Spec.Run
			overrides = append(overrides, o)
		}
	}
	if len(overrides) > 0 {
		b.WriteString("  commands:\n")
		for _, o := range overrides {
			comment(&b, "    ", fmt.Sprintf("The %s check as in checks.yaml, plus the environment its toolchain needs on this", o.Spec.ID))
			comment(&b, "    ", "host (the sandbox passes no host variable). The operator's definition wins;")
			comment(&b, "    ", "keep it in step with the repository's.")
			writeCheck(&b, "    ", o.Spec)
		}
	}
	if len(binds) > 0 {
		b.WriteString("sandbox:\n")
		comment(&b, "  ", "Toolchains the checks need live outside the default binds ("+strings.Join(bindOwners(f.Toolchains), ", ")+").")
		comment(&b, "  ", "host_paths replaces the default list, so it repeats the defaults this host has.")
		b.WriteString("  host_paths:\n")
		for _, h := range sandbox.DefaultHostPaths {
			if host.Present(h) {
				fmt.Fprintf(&b, "    - %s\n", scalar(h))
			}
		}
		for _, h := range binds {
			fmt.Fprintf(&b, "    - %s\n", scalar(h))
		}
	}
	for _, t := range f.Toolchains {
		if t.Unusable != "" {
			comment(&b, "", "NOT WRITTEN: the checks that need "+t.Tool+" ("+t.Unusable+"). Fix: "+t.Fix+".")
		}
	}
	if len(missing) > 0 {
		comment(&b, "", "NOT FOUND on this host: "+strings.Join(missing, ", ")+". Install it where the sandbox sees it")
		comment(&b, "", "(under /usr) or add its directory under sandbox.host_paths; until then those checks fail.")
	}
	f.Operator = b.Bytes()
	return f
}

func bindOwners(ts []Toolchain) []string {
	var out []string
	for _, t := range ts {
		if len(t.Binds) > 0 {
			out = append(out, t.Tool+": "+strings.Join(t.Binds, ", "))
		}
	}
	return out
}

func exportLines(env []string) string {
	var b strings.Builder
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(v))
	}
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func comment(b *bytes.Buffer, indent, line string) {
	fmt.Fprintf(b, "%s# %s\n", indent, line)
}

func writeCheck(b *bytes.Buffer, indent string, c policy.CheckSpec) {
	fmt.Fprintf(b, "%s- id: %s\n", indent, scalar(c.ID))
	in := indent + "  "
	writeRun(b, in, c.Run)
	if r := c.Report; r != nil {
		fmt.Fprintf(b, "%sreport: {path: %s, format: %s", in, scalar(r.Path), r.Format)
		if r.Identity != "" {
			fmt.Fprintf(b, ", identity: %s", r.Identity)
		}
		b.WriteString("}\n")
	}
	if c.Timeout != 0 {
		d := c.Timeout.D()
		ts := d.String()
		if d%time.Minute == 0 {
			ts = fmt.Sprintf("%dm", d/time.Minute)
		}
		fmt.Fprintf(b, "%stimeout: %s\n", in, ts)
	}
	if c.Dependencies != "" {
		fmt.Fprintf(b, "%sdependencies: %s\n", in, c.Dependencies)
	}
	if len(c.Harness) > 0 {
		fmt.Fprintf(b, "%sharness: # taken from the base, like this file (docs/policy.md)\n", in)
		for _, h := range c.Harness {
			fmt.Fprintf(b, "%s  - %s\n", in, scalar(h))
		}
	}
}

// writeRun writes a command: multi-line ones as a literal block, which YAML
// keeps byte for byte, single lines plain when that is unambiguous, else
// double-quoted.
func writeRun(b *bytes.Buffer, indent, run string) {
	if strings.Contains(run, "\n") {
		ind := ""
		if strings.HasPrefix(run, " ") {
			ind = "2"
		}
		fmt.Fprintf(b, "%srun: |%s-\n", indent, ind)
		for _, l := range strings.Split(run, "\n") {
			if l == "" {
				b.WriteString("\n")
				continue
			}
			fmt.Fprintf(b, "%s  %s\n", indent, l)
		}
		return
	}
	fmt.Fprintf(b, "%srun: %s\n", indent, scalar(run))
}

// scalar writes s plain when YAML reads it back as the same string, else
// as a double-quoted string (JSON's escapes are valid YAML).
func scalar(s string) string {
	plain := s != "" && s == strings.TrimSpace(s) &&
		!strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@`") &&
		!strings.Contains(s, ": ") && !strings.Contains(s, " #") && !strings.ContainsAny(s, "\t\n\"'") &&
		!strings.HasSuffix(s, ":")
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "~":
		plain = false
	}
	if plain {
		return s
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}
