package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/pathglob"
	"github.com/runmill/verify/pkg/rmerr"
)

// Bounds on what a policy document may be. A policy is a short hand-written
// file; anything past these is an attack or an accident, never a policy.
const (
	MaxBytes         = 1 << 20 // bytes read from a policy file
	MaxExpandedNodes = 200_000 // YAML nodes after following aliases (billion laughs)
	MaxChecks        = 5_000
	MaxCommandBytes  = 64 << 10
)

// idPattern is the grammar of a check id: safe in file names, logs, shell
// words and GitHub summaries, so an id can never smuggle a command.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidID reports whether s is a well-formed check id.
func ValidID(s string) bool { return idPattern.MatchString(s) }

// Document is a parsed policy file with the exact bytes' digest.
type Document[T any] struct {
	Value  T
	Digest string // "sha256:<hex>" of the exact bytes parsed
}

// Digest returns "sha256:<hex>" of b.
func Digest(b []byte) string { return digest.Of(b) }

// ReadCapped reads at most MaxBytes from r and fails, rather than truncating,
// when there is more.
func ReadCapped(r io.Reader, code rmerr.Code, file string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, rmerr.Wrap(code, err, "reading policy").At(file, 0)
	}
	if len(b) > MaxBytes {
		return nil, rmerr.New(code, "policy file is larger than %d bytes", MaxBytes).At(file, 0).
			WithHint("a policy is a short hand-written file; check that the right file is named")
	}
	return b, nil
}

// ParseRepository parses .runmill/checks.yaml. Every error is RM-VERIFY-004:
// a manifest that exists but does not parse is a hard failure, never "no
// checks required". file names the document in messages.
func ParseRepository(data []byte, file string) (Document[Repository], error) {
	var doc Document[Repository]
	root, err := decodeStrict(data, file, rmerr.VerifyManifest, &doc.Value)
	if err != nil {
		return doc, err
	}
	var errs rmerr.List
	if !hasKey(root, "checks") {
		errs = append(errs, rmerr.New(rmerr.VerifyManifest, "no checks: list").At(file, 1).InField("checks").
			WithHint("declare the required checks under checks:, or write checks: [] if this repository requires none"))
	}
	errs = append(errs, validateChecks(doc.Value.Checks, root, "checks", file, rmerr.VerifyManifest)...)
	doc.Digest = Digest(data)
	return doc, errs.Err()
}

// ParseOperator parses the operator's policy.yaml. Errors are RM-POLICY-001
// (operator configuration: exit 2).
func ParseOperator(data []byte, file string) (Document[Operator], error) {
	var doc Document[Operator]
	root, err := decodeStrict(data, file, rmerr.PolicyInvalid, &doc.Value)
	if err != nil {
		return doc, err
	}
	op := &doc.Value
	var errs rmerr.List
	bad := func(field, hint, format string, args ...any) {
		errs = append(errs, rmerr.New(rmerr.PolicyInvalid, format, args...).At(file, lineOf(root, field)).InField(field).WithHint("%s", hint))
	}
	switch op.Autonomy {
	case "":
		op.Autonomy = PROnly
	case PROnly, GuardedMerge, Continuous:
	default:
		bad("autonomy", "use pr-only, guarded-merge or continuous", "unknown autonomy %q", op.Autonomy)
	}
	if (op.Autonomy == GuardedMerge || op.Autonomy == Continuous) && !op.Verification.FailOnSkipped() {
		bad("verification.fail_on_skipped_check",
			"set fail_on_skipped_check: true (declare reports so coverage is proven) before moving past pr-only",
			"autonomy %s requires fail_on_skipped_check: true; an unproven result must not merge without a person", op.Autonomy)
	}
	switch op.Verification.ChangeDeclarations {
	case "", ChangeDeclarationsWithApproval, ChangeDeclarationsNever:
	default:
		bad("verification.change_declarations", "use with_approval (the default) or never",
			"unknown change_declarations %q", op.Verification.ChangeDeclarations)
	}
	errs = append(errs, validateChecks(op.Verification.Commands, root, "verification.commands", file, rmerr.PolicyInvalid)...)
	for i, r := range op.Verification.PathRules {
		f := fmt.Sprintf("verification.path_rules[%d]", i)
		if len(r.Paths) == 0 {
			bad(f+".paths", "list the glob patterns that trigger the rule", "a path rule needs at least one pattern")
		}
		for j, p := range r.Paths {
			if _, err := pathglob.Compile(p); err != nil {
				bad(fmt.Sprintf("%s.paths[%d]", f, j), "see docs/policy.md § Path patterns", "%v", err)
			}
		}
		if len(r.Checks) == 0 {
			bad(f+".checks", "list the check ids the rule makes required", "a path rule needs at least one check id")
		}
		for j, id := range r.Checks {
			if !ValidID(id) {
				bad(fmt.Sprintf("%s.checks[%d]", f, j), "ids use letters, digits, '.', '_' and '-' (at most 128)", "invalid check id %q", id)
			}
		}
	}
	for j, p := range op.Risk.HighRiskPaths {
		if _, err := pathglob.Compile(p); err != nil {
			bad(fmt.Sprintf("risk.high_risk_paths[%d]", j), "see docs/policy.md § Path patterns", "%v", err)
		}
	}
	for j, p := range op.Sandbox.HostPaths {
		if !strings.HasPrefix(p, "/") || strings.Contains(p, "..") || p == "/" {
			bad(fmt.Sprintf("sandbox.host_paths[%d]", j), "give absolute toolchain directories such as /opt/node; never / itself", "host path %q must be absolute, without .., and not /", p)
		}
	}
	for _, fp := range [][2]string{{"dependencies.go_modules.module_cache", op.Dependencies.GoModules.ModuleCache}, {"dependencies.go_modules.build_cache", op.Dependencies.GoModules.BuildCache}, {"dependencies.cargo.registry", op.Dependencies.Cargo.Registry}} {
		f, p := fp[0], fp[1]
		if p != "" && (!strings.HasPrefix(p, "/") || strings.Contains(p, "..") || p == "/") {
			bad(f, "give the absolute directory the operator prepared outside verification", "%q must be absolute, without .., and not /", p)
		}
	}
	if op.Budgets.MaxOutputBytes < 0 {
		bad("budgets.max_output_bytes", "use a positive byte count", "must not be negative")
	}
	if op.Budgets.Parallel < 0 || op.Budgets.Parallel > 256 {
		bad("budgets.parallel", "use 0 (number of CPUs) up to 256", "out of range: %d", op.Budgets.Parallel)
	}
	if n := op.Budgets.CheckoutEntries; n < 0 || n > MaxCheckoutEntries {
		bad("budgets.checkout_entries", fmt.Sprintf("use 0 (the default, 500 000) up to %d", MaxCheckoutEntries), "out of range: %d", n)
	}
	if n := op.Budgets.CheckoutBytes; n < 0 || n > MaxCheckoutBytes {
		bad("budgets.checkout_bytes", fmt.Sprintf("use 0 (the default, 2 GiB) up to %d (1 TiB)", MaxCheckoutBytes), "out of range: %d", n)
	}
	doc.Digest = Digest(data)
	return doc, errs.Err()
}

// validateChecks collects every finding for a list of checks.
func validateChecks(checks []CheckSpec, root *yaml.Node, field, file string, code rmerr.Code) rmerr.List {
	var errs rmerr.List
	if len(checks) > MaxChecks {
		return append(errs, rmerr.New(code, "%d checks exceed the limit of %d", len(checks), MaxChecks).At(file, lineOf(root, field)).InField(field))
	}
	seen := map[string]int{}
	for i := range checks {
		c := &checks[i]
		f := fmt.Sprintf("%s[%d]", field, i)
		c.line = lineOf(root, f)
		add := func(sub, hint, format string, args ...any) {
			ff := f
			if sub != "" {
				ff += "." + sub
			}
			l := lineOf(root, ff)
			if l == 0 {
				l = c.line
			}
			errs = append(errs, rmerr.New(code, format, args...).At(file, l).InField(ff).WithHint("%s", hint))
		}
		switch {
		case c.ID == "":
			add("id", "give every check a unique id", "check id is empty")
		case !ValidID(c.ID):
			add("id", "ids use letters, digits, '.', '_' and '-' and start with a letter or digit (at most 128)", "invalid check id %q", c.ID)
		default:
			if prev, dup := seen[c.ID]; dup {
				add("id", fmt.Sprintf("rename one of them or remove the duplicate (first at line %d)", prev), "duplicate check id %q", c.ID)
			} else {
				seen[c.ID] = c.line
			}
		}
		switch {
		case strings.TrimSpace(c.Run) == "":
			add("run", "give the command the check runs (run by sh -c inside the sandbox)", "run is empty")
		case len(c.Run) > MaxCommandBytes:
			add("run", "move long scripts into a file in the repository and run that", "command is longer than %d bytes", MaxCommandBytes)
		case strings.ContainsRune(c.Run, 0):
			add("run", "remove the NUL byte", "command contains a NUL byte")
		}
		if c.Report != nil {
			if err := ValidReportPath(c.Report.Path); err != nil {
				add("report.path", "use a relative path inside the checkout such as reports/unit.xml", "%v", err)
			}
			switch c.Report.Format {
			case "junit", "tap", "go-json":
			case "":
				add("report.format", "set format: junit, tap or go-json", "report format is missing")
			case "json":
				add("report.format", "use junit, tap or go-json; a generic JSON object has no standard test semantics and is rejected rather than guessed", "unsupported report format %q", c.Report.Format)
			default:
				add("report.format", "use junit, tap or go-json", "unsupported report format %q", c.Report.Format)
			}
			switch c.Report.Identity {
			case "", "suite-path":
			default:
				add("report.identity", "omit it (the spec's rule) or use suite-path", "unknown report identity %q", c.Report.Identity)
			}
		}
		for _, e := range ValidateDeclaredSkips(c.Report != nil, c.DeclaredSkips) {
			// In the repository manifest these keep the spec's code
			// (RM-VERIFY-003); in the operator's file they are operator
			// configuration errors like every other finding there.
			if code == rmerr.PolicyInvalid {
				e.Code = code
			}
			e.File = file
			if e.Line == 0 {
				e.Line = lineOf(root, f+".declared_skips")
			}
			e.Field = f + "." + e.Field
			errs = append(errs, e)
		}
		for j, p := range c.Paths {
			if _, err := pathglob.Compile(p); err != nil {
				add(fmt.Sprintf("paths[%d]", j), "see docs/policy.md § Path patterns", "%v", err)
			}
		}
		for j, p := range c.Harness {
			if err := harnessPattern(p); err != nil {
				add(fmt.Sprintf("harness[%d]", j), "name repository files relative to its root (see docs/policy.md § The harness is policy too)", "%v", err)
			}
		}
		if c.Image != "" && (!path.IsAbs(c.Image) || path.Clean(c.Image) != c.Image) {
			add("image", "name the OCI image tarball (docker save or an oci-layout tar) on the verifier host by its absolute, clean path", "image %q is not an absolute, clean path", c.Image)
		}
		switch c.Dependencies {
		case "", "npm", "go-modules", "cargo", "pnpm", "yarn":
		default:
			add("dependencies", "declare npm, go-modules, cargo, pnpm or yarn; runmill does not guess a preparation strategy", "unknown dependency strategy %q", c.Dependencies)
		}
	}
	return errs
}

// ValidReportPath checks the spec's static rules for a declared report: a
// relative path that resolves inside the checkout. (Symlink escapes are
// checked against the real checkout when the check runs.)
func ValidReportPath(p string) error {
	switch {
	case p == "":
		return errors.New("report path is empty")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("report path %q is absolute; it must resolve inside the checkout", p)
	case strings.ContainsRune(p, '\\') || strings.ContainsRune(p, 0):
		return fmt.Errorf("report path %q contains a backslash or NUL", p)
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "..":
			return fmt.Errorf("report path %q escapes the checkout (..)", p)
		case "", ".":
			return fmt.Errorf("report path %q is not clean (empty or . segment)", p)
		case ".git":
			return fmt.Errorf("report path %q is inside .git", p)
		}
	}
	return nil
}

// decodeStrict parses one YAML document into v with known fields only, after
// bounding alias expansion. It returns the document's root mapping node for
// locating fields.
func decodeStrict(data []byte, file string, code rmerr.Code, v any) (*yaml.Node, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, rmerr.New(code, "policy file is empty").At(file, 0).
			WithHint("an empty policy is never read as \"no checks\"; write checks: [] to require none explicitly")
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, yamlError(code, file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, rmerr.New(code, "more than one YAML document").At(file, extra.Line).
			WithHint("keep a single document; remove the --- separator")
	}
	if n, ok := expandedSize(&doc, map[*yaml.Node]int{}, 0); !ok || n > MaxExpandedNodes {
		return nil, rmerr.New(code, "YAML aliases expand past %d nodes", MaxExpandedNodes).At(file, 0).
			WithHint("remove the anchors/aliases; a policy never needs that many")
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, rmerr.New(code, "the document must be a mapping").At(file, doc.Line).
			WithHint("see docs/policy.md for the shape")
	}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(v); err != nil {
		return nil, yamlError(code, file, err)
	}
	return doc.Content[0], nil
}

// expandedSize counts nodes as if every alias were expanded, memoising per
// anchor so a billion-laughs document is measured without being expanded.
func expandedSize(n *yaml.Node, memo map[*yaml.Node]int, depth int) (int, bool) {
	if depth > 200 {
		return 0, false
	}
	if v, ok := memo[n]; ok {
		return v, true
	}
	size := 1
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		s, ok := expandedSize(n.Alias, memo, depth+1)
		if !ok {
			return 0, false
		}
		size = s
	}
	for _, c := range n.Content {
		s, ok := expandedSize(c, memo, depth+1)
		if !ok {
			return 0, false
		}
		size += s
		if size > MaxExpandedNodes {
			return size, true
		}
	}
	memo[n] = size
	return size, true
}

var yamlLine = regexp.MustCompile(`^\s*(?:yaml: )?line (\d+): (.*)$`)

// yamlError turns yaml.v3's errors ("yaml: unmarshal errors:\n  line 3: …")
// into one located error per finding.
func yamlError(code rmerr.Code, file string, err error) error {
	var te *yaml.TypeError
	var lines []string
	if errors.As(err, &te) {
		lines = te.Errors
	} else {
		lines = []string{err.Error()}
	}
	var errs rmerr.List
	for _, l := range lines {
		e := rmerr.New(code, "%s", cleanYAML(l)).At(file, 0).WithHint("fix the YAML at that line; see docs/policy.md for the fields")
		if m := yamlLine.FindStringSubmatch(l); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = cleanYAML(m[2])
		}
		errs = append(errs, e)
	}
	return errs
}

// cleanYAML makes yaml.v3's Go type names readable for policy authors.
func cleanYAML(s string) string {
	r := strings.NewReplacer(
		"in type policy.CheckSpec", "in a check (allowed: id, run, report, declared_skips, timeout, paths, required, image, dependencies, harness)",
		"in type policy.ReportSpec", "in report (allowed: path, format, identity)",
		"in type policy.DeclaredSkip", "in a declared skip (allowed: test_id, cause)",
		"in type policy.Repository", "at the top level (allowed: checks)",
		"in type policy.Operator", "at the top level (allowed: autonomy, verification, budgets, risk, sandbox, github, dependencies)",
		"in type policy.GitHub", "in github (allowed: required)",
		"in type policy.Verification", "in verification (allowed: commands, fail_on_skipped_check, path_rules, change_declarations, require_pinned_harness)",
		"in type policy.PathRule", "in a path rule (allowed: paths, checks)",
		"in type policy.Budgets", "in budgets (allowed: run_timeout, check_timeout, max_output_bytes, parallel)",
		"in type policy.Risk", "in risk (allowed: high_risk_paths)",
		"in type policy.Sandbox", "in sandbox (allowed: host_paths)",
		"in type policy.Dependencies", "in dependencies (allowed: go_modules, cargo)",
		"in type policy.Cargo", "in dependencies.cargo (allowed: registry)",
		"in type policy.GoModules", "in dependencies.go_modules (allowed: module_cache, build_cache, allow_additions)",
		"yaml: ", "",
	)
	return r.Replace(s)
}

// lineOf finds the line of a dotted field path such as checks[2].report.path
// in the root mapping; 0 when absent.
func lineOf(root *yaml.Node, field string) int {
	n := root
	line := 0
	for _, part := range strings.Split(field, ".") {
		name, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 && strings.HasSuffix(part, "]") {
			name = part[:i]
			idx, _ = strconv.Atoi(part[i+1 : len(part)-1])
		}
		if n == nil || n.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				line = n.Content[i].Line
				next = n.Content[i+1]
				break
			}
		}
		if next == nil {
			return line
		}
		n = next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}

func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

// harnessPattern validates one harness entry: a glob (pkg/pathglob) naming
// files inside the repository, never outside it.
func harnessPattern(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return fmt.Errorf("harness entry %q must be a relative file path or glob", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return fmt.Errorf("harness entry %q must be a clean relative path (no ., .. or empty segment)", p)
		}
	}
	_, err := pathglob.Compile(p)
	return err
}
