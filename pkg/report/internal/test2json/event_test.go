package test2json

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/runmill/verify/internal/corpus"
)

// compareWithEncodingJSON holds Decode to its contract: it accepts
// exactly the lines json.Unmarshal into eventSchema accepts, with the same
// field values.
func compareWithEncodingJSON(t *testing.T, line []byte) {
	t.Helper()
	var ref eventSchema
	refErr := json.Unmarshal(line, &ref)
	var ev Event
	var scratch []byte
	err := Decode(line, &ev, &scratch)
	if (refErr == nil) != (err == nil) {
		t.Fatalf("%q: encoding/json says %v, Decode says %v", line, refErr, err)
	}
	if err != nil {
		return
	}
	for _, f := range []struct {
		name string
		got  String
		want string
	}{
		{"Time", ev.Time, ref.Time},
		{"Action", ev.Action, ref.Action},
		{"Package", ev.Package, ref.Package},
		{"Test", ev.Test, ref.Test},
		{"Output", ev.Output, ref.Output},
		{"ImportPath", ev.ImportPath, ref.ImportPath},
		{"FailedBuild", ev.FailedBuild, ref.FailedBuild},
	} {
		if got := string(f.got.Decode(nil)); got != f.want {
			t.Fatalf("%q: %s = %q, encoding/json has %q", line, f.name, got, f.want)
		}
	}
}

func TestDecodeGoEventMatchesEncodingJSON(t *testing.T) {
	for _, line := range []string{
		`{"Time":"2025-03-10T17:34:31.493978-07:00","Action":"pass","Package":"p","Test":"T","Elapsed":0.01}`,
		`{}`,
		` { "Action" : "run" , "Test" : "T" } `,
		`{"action":"run","TEST":"case-insensitive keys"}`,
		`{"Te\u017ft":"long s folds to s"}`,
		`{"\u0041ction":"escaped key"}`,
		`{"Action":"run","Action":"pass"}`,
		`{"Action":"run","Action":null}`,
		`{"Test":"\ud83d\ude00 pair \ud800 lone \udc00 low \u00e9"}`,
		"{\"Test\":\"bad \xff utf-8 \xed\xa0\x80 surrogate\"}",
		`{"Output":"tab\tnewline\nquote\"slash\/back\\"}`,
		`{"Elapsed":1e400}`,
		`{"Elapsed":-0.0e-0}`,
		`{"Elapsed":"1"}`,
		`{"Elapsed":01}`,
		`{"Test":1}`,
		`{"Test":true}`,
		`{"Test":{"a":1}}`,
		`{"Unknown":{"deep":[1,2,{"x":null}],"n":-1.5e3}}`,
		`{"Action":"pass"} trailing`,
		`{"Action":"pass",}`,
		`{"Action":"pass"`,
		`{"Action":"p` + "\x01" + `"}`,
		`{"Action":"\x"}`,
		`{"Action":"\u12"}`,
		`{"Action":nul}`,
		`{"Action":"pass"}` + "\r",
		"{\"Action\":\"pass\"}\t",
	} {
		compareWithEncodingJSON(t, []byte(line))
	}
}

// FuzzGoJSONEvent differential-tests the hand-rolled decoder against
// encoding/json on arbitrary lines.
func FuzzGoJSONEvent(f *testing.F) {
	f.Add([]byte(`{"Time":"2025-03-10T17:34:31Z","Action":"output","Package":"p","Test":"T","Output":"x\n"}`))
	f.Add([]byte(`{"action":"run","TEST":"\ud83d\ude00","Elapsed":1.5,"X":[{"y":null}]}`))
	dir := filepath.Join(corpus.Dir(f), "gojson")
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(line) > 0 && line[0] == '{' && len(line) < 4096 {
				f.Add(line)
			}
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return // lines never hold one
		}
		if i := skipSpace(line, 0); i >= len(line) || line[i] != '{' {
			return // not a line the parser hands to the decoder
		}
		compareWithEncodingJSON(t, line)
	})
}
