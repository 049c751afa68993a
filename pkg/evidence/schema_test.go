package evidence

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/runmill/verify/pkg/evidence/internal/strictjson"
	"github.com/runmill/verify/pkg/record"
)

// sharedTypes are documented once under their own name: a field of such a
// type is documented as the path of the field, and the type's fields as
// name.field.
var sharedTypes = map[reflect.Type]string{reflect.TypeFor[record.Finding](): "finding"}

// schemaPaths lists every JSON path the type t can produce (generic
// objects end at their field), with shared types cut off at their use.
func schemaPaths(t reflect.Type) []string {
	return strictjson.Paths(t, func(t reflect.Type) bool { _, ok := sharedTypes[t]; return ok })
}

// documentedTypes are the wire documents whose every field docs/evidence.md
// must describe.
var documentedTypes = map[string]reflect.Type{
	"bundle":                reflect.TypeFor[Bundle](),
	"delivery statement":    reflect.TypeFor[DeliveryStatement](),
	"terminal statement":    reflect.TypeFor[TerminalStatement](),
	"shard statement":       reflect.TypeFor[ShardStatement](),
	"trust document":        reflect.TypeFor[TrustDocument](),
	"expectations":          reflect.TypeFor[Expectations](),
	"terminal expectations": reflect.TypeFor[TerminalExpectations](),
	"result":                reflect.TypeFor[Result](),
}

// TestEveryFieldIsDocumented keeps docs/evidence.md and the schema in step:
// the Go types are the one place that knows the schema, and every JSON path
// they produce must appear in the documentation as `path`.
func TestEveryFieldIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/evidence.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for name, typ := range documentedTypes {
		for _, p := range schemaPaths(typ) {
			p = strings.TrimPrefix(p, ".")
			if !strings.Contains(text, "`"+p+"`") {
				t.Errorf("%s field `%s` is not documented in docs/evidence.md", name, p)
			}
		}
	}
	for typ, name := range sharedTypes {
		for _, p := range schemaPaths(typ) {
			if p = name + p; !strings.Contains(text, "`"+p+"`") {
				t.Errorf("field `%s` is not documented in docs/evidence.md", p)
			}
		}
	}
	// Every reason code is documented with its RM code.
	for r, code := range reasonCodes {
		if !regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(string(r)) + "` \\|.*" + string(code)).MatchString(text) {
			t.Errorf("reason %s (%s) has no row in docs/evidence.md § Reason codes", r, code)
		}
	}
}

func TestSchemaPathsDump(t *testing.T) {
	if os.Getenv("SCHEMA_DUMP") == "" {
		t.Skip()
	}
	for name, typ := range documentedTypes {
		t.Logf("== %s", name)
		for _, p := range schemaPaths(typ) {
			t.Logf("%s", strings.TrimPrefix(p, "."))
		}
	}
}
