package policy_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/rmerr"
)

// finding is what a test expects of one located error.
type finding struct {
	line  int
	field string
	msg   string // substring of the message
}

func findings(t *testing.T, err error) []*rmerr.Error {
	t.Helper()
	var list rmerr.List
	if errors.As(err, &list) {
		return list
	}
	var e *rmerr.Error
	if errors.As(err, &e) {
		return []*rmerr.Error{e}
	}
	t.Fatalf("error %v (%T) is not an rmerr", err, err)
	return nil
}

func TestParseRepository(t *testing.T) {
	run := func(t *testing.T, src string, want []finding) {
		t.Helper()
		doc, err := policy.ParseRepository([]byte(src), "checks.yaml")
		if len(want) == 0 {
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !strings.HasPrefix(doc.Digest, "sha256:") {
				t.Fatalf("digest %q", doc.Digest)
			}
			return
		}
		if err == nil {
			t.Fatalf("accepted invalid policy")
		}
		got := findings(t, err)
		if len(got) != len(want) {
			t.Fatalf("got %d findings, want %d:\n%v", len(got), len(want), err)
		}
		for i, w := range want {
			g := got[i]
			if want := rmerr.VerifyManifest; strings.Contains(w.field, "declared_skips") {
				if g.Code != rmerr.VerifySkipped {
					t.Errorf("finding %d code %s, want RM-VERIFY-003", i, g.Code)
				}
			} else if g.Code != want {
				t.Errorf("finding %d code %s, want %s", i, g.Code, want)
			}
			if g.File != "checks.yaml" || g.Line != w.line || g.Field != w.field || !strings.Contains(g.Msg, w.msg) {
				t.Errorf("finding %d = %s:%d %s %q, want line %d field %q msg ~%q", i, g.File, g.Line, g.Field, g.Msg, w.line, w.field, w.msg)
			}
			if g.Hint == "" {
				t.Errorf("finding %d has no fix: %v", i, g)
			}
		}
	}
	for _, tc := range []struct {
		name string
		src  string
		want []finding
	}{
		{"minimal", "checks:\n  - id: unit\n    run: go test ./...\n", nil},
		{"explicit none", "checks: []\n", nil},
		{"full", `checks:
  - id: unit
    run: npm test -- --reporter=tap
    report: {path: reports/unit.tap, format: tap}
    declared_skips:
      - test_id: "flaky network integration"
        cause: "requires a live staging endpoint; tracked in ENG-88"
    timeout: 10m
    paths: ["src/**", "*.js"]
    required: true
  - id: lint
    run: make lint
    required: false
`, nil},
		{"empty file", "", []finding{{0, "", "empty"}}},
		{"whitespace only", "  \n\n", []finding{{0, "", "empty"}}},
		{"no checks key", "other: 1\n", []finding{{1, "", "field other not found"}}},
		{"missing checks", "{}\n", []finding{{1, "checks", "no checks"}}},
		{"not yaml", "checks: [\n", []finding{{1, "", "did not find expected"}}},
		{"scalar doc", "hello\n", []finding{{1, "", "must be a mapping"}}},
		{"unknown key", "checks:\n  - id: a\n    run: x\n    cmd: y\n", []finding{{4, "", "field cmd not found in a check"}}},
		{"wrong type", "checks:\n  - id: a\n    run: x\n    required: maybe\n", []finding{{4, "", "cannot unmarshal"}}},
		{"empty id", "checks:\n  - id: \"\"\n    run: x\n", []finding{{2, "checks[0].id", "empty"}}},
		{"missing id", "checks:\n  - run: x\n", []finding{{2, "checks[0].id", "empty"}}},
		{"bad id", "checks:\n  - id: \"a;b\"\n    run: x\n", []finding{{2, "checks[0].id", "invalid check id"}}},
		{"duplicate id", "checks:\n  - id: a\n    run: x\n  - id: a\n    run: y\n", []finding{{4, "checks[1].id", "duplicate check id \"a\""}}},
		{"duplicate key", "checks:\n  - id: a\n    id: b\n    run: x\n", []finding{{3, "", "already defined"}}},
		{"empty run", "checks:\n  - id: a\n    run: \" \"\n", []finding{{3, "checks[0].run", "run is empty"}}},
		{"absolute report", "checks:\n  - id: a\n    run: x\n    report: {path: /tmp/r.xml, format: junit}\n", []finding{{4, "checks[0].report.path", "absolute"}}},
		{"escaping report", "checks:\n  - id: a\n    run: x\n    report: {path: ../r.xml, format: junit}\n", []finding{{4, "checks[0].report.path", "escapes"}}},
		{"report in .git", "checks:\n  - id: a\n    run: x\n    report: {path: .git/r.xml, format: junit}\n", []finding{{4, "checks[0].report.path", ".git"}}},
		{"generic json", "checks:\n  - id: a\n    run: x\n    report: {path: r.json, format: json}\n", []finding{{4, "checks[0].report.format", "unsupported"}}},
		{"no format", "checks:\n  - id: a\n    run: x\n    report: {path: r.xml}\n", []finding{{4, "checks[0].report.format", "missing"}}},
		{"bad identity", "checks:\n  - id: a\n    run: x\n    report: {path: r.xml, format: junit, identity: guess}\n", []finding{{4, "checks[0].report.identity", "unknown"}}},
		{"bare number timeout", "checks:\n  - id: a\n    run: x\n    timeout: 90\n", []finding{{4, "", "no unit"}}},
		{"bad timeout", "checks:\n  - id: a\n    run: x\n    timeout: soon\n", []finding{{4, "", "not a duration"}}},
		{"negative timeout", "checks:\n  - id: a\n    run: x\n    timeout: -1s\n", []finding{{4, "", "positive"}}},
		{"bad glob", "checks:\n  - id: a\n    run: x\n    paths: [\"/abs/**\"]\n", []finding{{4, "checks[0].paths[0]", "absolute"}}},
		{"relative image", "checks:\n  - id: a\n    run: x\n    image: images/node.tar\n", []finding{{4, "checks[0].image", "not an absolute, clean path"}}},
		{"unclean image", "checks:\n  - id: a\n    run: x\n    image: /opt/../etc/shadow\n", []finding{{4, "checks[0].image", "not an absolute, clean path"}}},
		{"unknown dependencies", "checks:\n  - id: a\n    run: x\n    dependencies: pip\n", []finding{{4, "checks[0].dependencies", "unknown dependency strategy"}}},
		{"harness files and globs", "checks:\n  - id: a\n    run: sh scripts/test.sh\n    harness: [jest.config.*, \"scripts/**\", pytest.ini]\n", nil},
		{"harness outside the repository", "checks:\n  - id: a\n    run: x\n    harness: [/etc/passwd, ../x.sh, a/./b, scripts/]\n", []finding{
			{4, "checks[0].harness[0]", "relative"}, {4, "checks[0].harness[1]", "clean relative"},
			{4, "checks[0].harness[2]", "clean relative"}, {4, "checks[0].harness[3]", "relative"}}},
		{"skips without report", "checks:\n  - id: a\n    run: x\n    declared_skips: [{test_id: t, cause: c}]\n", []finding{{4, "checks[0].declared_skips", "without a report"}}},
		{"two documents", "checks: []\n---\nchecks: []\n", []finding{{2, "", "more than one YAML document"}}},
		{"collects all", "checks:\n  - id: \"\"\n    run: \"\"\n  - id: b\n    run: x\n    report: {path: ../x, format: csv}\n", []finding{
			{2, "checks[0].id", "empty"}, {3, "checks[0].run", "empty"},
			{6, "checks[1].report.path", "escapes"}, {6, "checks[1].report.format", "unsupported"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, tc.src, tc.want) })
	}
}

func TestParseRepositoryBounds(t *testing.T) {
	run := func(t *testing.T, src, msg string) {
		t.Helper()
		_, err := policy.ParseRepository([]byte(src), "checks.yaml")
		if err == nil || rmerr.CodeOf(err) != rmerr.VerifyManifest || !strings.Contains(err.Error(), msg) {
			t.Fatalf("got %v, want RM-VERIFY-004 mentioning %q", err, msg)
		}
	}
	t.Run("billion laughs", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
		for i := 1; i < 10; i++ {
			b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
			for j := 0; j < 10; j++ {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString("*a" + string(rune('0'+i-1)))
			}
			b.WriteString("]\n")
		}
		b.WriteString("checks: []\n")
		run(t, b.String(), "aliases expand")
	})
	t.Run("deep nesting", func(t *testing.T) {
		run(t, "checks: "+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+"\n", "")
	})
	t.Run("too many checks", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("checks:\n")
		for i := 0; i <= policy.MaxChecks; i++ {
			b.WriteString("  - {id: c" + itoa(i) + ", run: x}\n")
		}
		run(t, b.String(), "exceed the limit")
	})
}

func TestReadCapped(t *testing.T) {
	big := strings.NewReader(strings.Repeat("#", policy.MaxBytes+1))
	_, err := policy.ReadCapped(big, rmerr.VerifyManifest, "big.yaml")
	if rmerr.CodeOf(err) != rmerr.VerifyManifest || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("got %v", err)
	}
	ok, err := policy.ReadCapped(strings.NewReader("checks: []\n"), rmerr.VerifyManifest, "ok.yaml")
	if err != nil || string(ok) != "checks: []\n" {
		t.Fatalf("got %q, %v", ok, err)
	}
}

func TestParseOperator(t *testing.T) {
	run := func(t *testing.T, src string, want []finding) {
		t.Helper()
		doc, err := policy.ParseOperator([]byte(src), "policy.yaml")
		if len(want) == 0 {
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if doc.Value.Autonomy == "" {
				t.Fatal("autonomy default not applied")
			}
			return
		}
		if err == nil {
			t.Fatalf("accepted invalid policy")
		}
		got := findings(t, err)
		if len(got) != len(want) {
			t.Fatalf("got %d findings, want %d:\n%v", len(got), len(want), err)
		}
		for i, w := range want {
			g := got[i]
			if g.Code != rmerr.PolicyInvalid || g.Line != w.line || g.Field != w.field || !strings.Contains(g.Msg, w.msg) {
				t.Errorf("finding %d = %s %s:%d %s %q, want RM-POLICY-001 line %d field %q msg ~%q", i, g.Code, g.File, g.Line, g.Field, g.Msg, w.line, w.field, w.msg)
			}
		}
	}
	for _, tc := range []struct {
		name string
		src  string
		want []finding
	}{
		{"minimal", "autonomy: pr-only\n", nil},
		{"full", `autonomy: guarded-merge
verification:
  fail_on_skipped_check: true
  commands:
    - id: unit
      run: go test -json ./... > reports/unit.json
      report: {path: reports/unit.json, format: go-json}
  path_rules:
    - paths: ["migrations/**"]
      checks: [migration]
budgets: {run_timeout: 30m, check_timeout: 10m, max_output_bytes: 1048576, parallel: 2, checkout_entries: 2000000, checkout_bytes: 8589934592}
risk: {high_risk_paths: ["infra/**"]}
`, nil},
		{"pr-only may relax", "autonomy: pr-only\nverification: {fail_on_skipped_check: false}\n", nil},
		{"guarded-merge may not relax", "autonomy: guarded-merge\nverification:\n  fail_on_skipped_check: false\n",
			[]finding{{3, "verification.fail_on_skipped_check", "requires fail_on_skipped_check: true"}}},
		{"continuous may not relax", "autonomy: continuous\nverification: {fail_on_skipped_check: false}\n",
			[]finding{{2, "verification.fail_on_skipped_check", "requires"}}},
		{"unknown autonomy", "autonomy: yolo\n", []finding{{1, "autonomy", "unknown autonomy"}}},
		{"unknown key", "autonomy: pr-only\nbudget: {}\n", []finding{{2, "", "field budget not found at the top level"}}},
		{"empty rule", "verification:\n  path_rules:\n    - {paths: [], checks: []}\n",
			[]finding{{3, "verification.path_rules[0].paths", "at least one pattern"}, {3, "verification.path_rules[0].checks", "at least one check"}}},
		{"bad rule id", "verification:\n  path_rules:\n    - {paths: [a/**], checks: [\"$(x)\"]}\n",
			[]finding{{3, "verification.path_rules[0].checks[0]", "invalid check id"}}},
		{"duplicate command", "verification:\n  commands:\n    - {id: a, run: x}\n    - {id: a, run: y}\n",
			[]finding{{4, "verification.commands[1].id", "duplicate"}}},
		{"bad parallel", "budgets: {parallel: -1}\n", []finding{{1, "budgets.parallel", "out of range"}}},
		{"bad checkout limits", "budgets:\n  checkout_entries: -1\n  checkout_bytes: 1099511627777\n",
			[]finding{{2, "budgets.checkout_entries", "out of range: -1"}, {3, "budgets.checkout_bytes", "out of range: 1099511627777"}}},
		{"checkout limits not numbers", "budgets: {checkout_bytes: 2GiB}\n", []finding{{1, "", "cannot unmarshal"}}},
		{"host paths", "sandbox: {host_paths: [/opt/node, /usr/local/go]}\n", nil},
		{"github required", "github: {required: true}\n", nil},
		{"github unknown key", "github:\n  requried: true\n", []finding{{2, "", "field requried not found in github (allowed: required)"}}},
		{"github wrong type", "github: {required: sometimes}\n", []finding{{1, "", "cannot unmarshal"}}},
		{"relative host path", "sandbox:\n  host_paths: [opt/node, /]\n", []finding{{2, "sandbox.host_paths[0]", "must be absolute"}, {2, "sandbox.host_paths[1]", "not /"}}},
		{"go modules", "dependencies:\n  go_modules: {module_cache: /var/gomod, build_cache: /var/gobuild, allow_additions: true}\n", nil},
		{"relative module cache", "dependencies:\n  go_modules:\n    module_cache: gomod\n    build_cache: /a/../b\n",
			[]finding{{3, "dependencies.go_modules.module_cache", "must be absolute"}, {4, "dependencies.go_modules.build_cache", "must be absolute"}}},
		{"unknown go modules key", "dependencies:\n  go_modules: {proxy: x}\n", []finding{{2, "", "field proxy not found in dependencies.go_modules"}}},
		{"cargo registry", "dependencies:\n  cargo: {registry: /usr/share/cargo/registry}\n", nil},
		{"relative cargo registry", "dependencies:\n  cargo:\n    registry: vendor\n", []finding{{3, "dependencies.cargo.registry", "must be absolute"}}},
		{"unknown cargo key", "dependencies:\n  cargo: {vendor: /v}\n", []finding{{2, "", "field vendor not found in dependencies.cargo (allowed: registry)"}}},
		{"require a pinned harness", "verification:\n  require_pinned_harness: true\n", nil},
		{"require a pinned harness wrong type", "verification: {require_pinned_harness: always}\n", []finding{{1, "", "cannot unmarshal"}}},
		{"change declarations never", "verification: {change_declarations: never}\n", nil},
		{"change declarations with approval", "verification:\n  change_declarations: with_approval\n", nil},
		{"unknown change declarations", "verification:\n  change_declarations: always\n",
			[]finding{{2, "verification.change_declarations", "unknown change_declarations \"always\""}}},
		{"change declarations wrong type", "verification: {change_declarations: [never]}\n", []finding{{1, "", "cannot unmarshal"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, tc.src, tc.want) })
	}
}

func TestValidReportPath(t *testing.T) {
	for p, ok := range map[string]bool{
		"reports/unit.xml": true, "unit.xml": true, "a/b/c.tap": true,
		"": false, "/abs": false, "../x": false, "a/../../x": false, "a//b": false, "./a": false, `a\b`: false, ".git/x": false, "a/.git/x": false,
	} {
		if err := policy.ValidReportPath(p); (err == nil) != ok {
			t.Errorf("ValidReportPath(%q) = %v, want ok=%v", p, err, ok)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestOperatorChangeDeclarations: verification.change_declarations
// defaults to with_approval and is read when set.
func TestOperatorChangeDeclarations(t *testing.T) {
	for src, want := range map[string]policy.ChangeDeclarations{
		"autonomy: pr-only\n":                                  policy.ChangeDeclarationsWithApproval,
		"verification: {change_declarations: never}\n":         policy.ChangeDeclarationsNever,
		"verification: {change_declarations: with_approval}\n": policy.ChangeDeclarationsWithApproval,
	} {
		doc, err := policy.ParseOperator([]byte(src), "policy.yaml")
		if got := doc.Value.Verification.ChangeDeclarationsMode(); err != nil || got != want {
			t.Errorf("%q: change_declarations = %q, %v; want %q", src, got, err, want)
		}
	}
}

// TestOperatorGitHubRequired: github.required defaults to false and is read
// when set.
func TestOperatorGitHubRequired(t *testing.T) {
	for src, want := range map[string]bool{"autonomy: pr-only\n": false, "github: {required: true}\n": true, "github: {required: false}\n": false} {
		doc, err := policy.ParseOperator([]byte(src), "policy.yaml")
		if err != nil || doc.Value.GitHub.Required != want {
			t.Errorf("%q: required = %v, %v; want %v", src, doc.Value.GitHub.Required, err, want)
		}
	}
}
