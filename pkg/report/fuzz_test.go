package report_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/runmill/verify/internal/corpus"
	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// fuzzLimits are small so the fuzzer reaches every cap.
var fuzzLimits = report.Limits{MaxBytes: 1 << 20, MaxDepth: 6, MaxField: 48, MaxLine: 2048, MaxTests: 300}

// addCorpus seeds f with the shared corpus files of dir, read in place.
func addCorpus(f *testing.F, dir string) {
	root := filepath.Join(corpus.Dir(f), dir)
	entries, err := os.ReadDir(root)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(root, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// checkInvariants holds for every input: a coded RM-REPORT error, or an
// inventory that is internally consistent, bounded and deterministic.
func checkInvariants(t *testing.T, data []byte, format report.Format, id report.Identity) *report.Inventory {
	t.Helper()
	opts := report.Options{Identity: id, Limits: fuzzLimits, Root: nodeRoot}
	checkBaseline(t, data, format, id)
	inv, err := report.Parse(bytes.NewReader(data), format, opts)
	if err != nil {
		code := rmerr.CodeOf(err)
		if !strings.HasPrefix(string(code), "RM-REPORT-") || code == rmerr.ReportFormat {
			t.Fatalf("error without a report code: %v", err)
		}
		if !utf8.ValidString(err.Error()) {
			t.Fatalf("error text is not UTF-8: %q", err.Error())
		}
		return nil
	}
	sum := sha256.Sum256(data)
	if inv.Bytes != int64(len(data)) || inv.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("digest %s/%d does not describe the %d input bytes", inv.SHA256, inv.Bytes, len(data))
	}
	if inv.Format != format || inv.Identity != id {
		t.Fatalf("format %q identity %q", inv.Format, inv.Identity)
	}
	c := inv.Counts
	if c.Total != len(inv.Tests) || c.Passed+c.Failed+c.Skipped != c.Total || c.Total > fuzzLimits.MaxTests {
		t.Fatalf("counts %+v for %d tests", c, len(inv.Tests))
	}
	if len(inv.Tests) == 0 && len(inv.Faults) == 0 {
		t.Fatal("an inventory of zero tests without a fault must be RM-REPORT-005")
	}
	seen := map[report.TestID]bool{}
	maxID := fuzzLimits.MaxField + len("…sha256:") + 64
	for _, tc := range inv.Tests {
		if tc.ID == "" || seen[tc.ID] || len(tc.ID) > maxID || !utf8.ValidString(string(tc.ID)) {
			t.Fatalf("bad id %q (duplicate %v)", tc.ID, seen[tc.ID])
		}
		seen[tc.ID] = true
		if len(tc.Message) > fuzzLimits.MaxField || !utf8.ValidString(tc.Message) || !utf8.ValidString(tc.File) {
			t.Fatalf("unbounded or invalid text in %+v", tc)
		}
		switch tc.Status {
		case report.Passed, report.Failed, report.Skipped:
		default:
			t.Fatalf("status %q", tc.Status)
		}
	}
	for _, ft := range inv.Faults {
		if !utf8.ValidString(ft.Message) || !utf8.ValidString(ft.Scope) {
			t.Fatalf("fault text is not UTF-8: %+v", ft)
		}
	}
	if claimed, seen, more := inv.ClaimsMoreFailures(); more != (claimed > seen) || seen < 0 {
		t.Fatalf("ClaimsMoreFailures = %d, %d, %v", claimed, seen, more)
	}
	checkFiles(t, inv)
	for _, tc := range inv.Tests {
		if l := report.FirstLine(tc.Message, 64); len(l) > 64 || strings.ContainsAny(l, "\n\r\x1b") || !utf8.ValidString(l) {
			t.Fatalf("FirstLine(%q) = %q", tc.Message, l)
		}
	}
	// A baseline reading (AllowDuplicateIDs) accepts everything the strict
	// one does, identically, and where it accepts more, the ids it drops
	// are exactly the repeated ones.
	lax, err := report.Parse(bytes.NewReader(data), format, report.Options{Identity: id, Limits: fuzzLimits, AllowDuplicateIDs: true, Root: nodeRoot})
	if err != nil {
		t.Fatalf("accepted strictly, refused as a baseline: %v", err)
	}
	if lax.DuplicateCount != 0 || len(lax.Tests) != len(inv.Tests) {
		t.Fatalf("a report with unique ids lost tests as a baseline: %d of %d", len(lax.Tests), len(inv.Tests))
	}
	again, err := report.Parse(bytes.NewReader(data), format, opts)
	if err != nil {
		t.Fatalf("second parse failed: %v", err)
	}
	a, _ := json.Marshal(inv)
	b, _ := json.Marshal(again)
	if !bytes.Equal(a, b) {
		t.Fatal("parsing the same bytes twice gave different inventories")
	}
	return inv
}

func FuzzTAP(f *testing.F) {
	f.Add([]byte("TAP version 14\n1..2\nok 1 - a # SKIP x\nnot ok 2 - b\n  ---\n  message: m\n  ...\n"))
	f.Add([]byte("# Subtest: p\n    1..1\n    ok 1 - c\nok 1 - p\n1..1\n"))
	f.Add([]byte("1..1\nok 1 - p {\n    1..1\n    ok 1 - c\n}\n"))
	for _, name := range []string{"node20.20-tap.tap", "node24.11-tap.tap"} {
		data, err := os.ReadFile(filepath.Join("testdata/recorded", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	addCorpus(f, "tap")
	f.Fuzz(func(t *testing.T, data []byte) {
		flat := checkInvariants(t, data, report.TAP, report.IdentityDefault)
		nested := checkInvariants(t, data, report.TAP, report.IdentitySuitePath)
		if flat != nil {
			// A stream the default rule accepts has no subtests, so the
			// declared alternative must read it identically.
			if nested == nil {
				t.Fatal("accepted by default but rejected under suite-path")
			}
			nested.Identity = ""
			a, _ := json.Marshal(flat)
			b, _ := json.Marshal(nested)
			if !bytes.Equal(a, b) {
				t.Fatalf("suite-path reads a flat stream differently:\n%s\n%s", a, b)
			}
		}
	})
}

func FuzzGoJSON(f *testing.F) {
	f.Add([]byte(`{"Action":"run","Package":"p","Test":"T"}` + "\n" + `{"Action":"fail","Package":"p","Test":"T"}` + "\n"))
	f.Add([]byte("plain\n{\"Action\":\"pass\",\"Test\":\"T\"}\n{\"Action\":\"fail\"}\n"))
	addCorpus(f, "gojson")
	f.Fuzz(func(t *testing.T, data []byte) {
		checkInvariants(t, data, report.GoJSON, report.IdentityDefault)
	})
}

// checkFiles: node:test's loaded files are sorted, unique, bounded, and
// never a test id's whole.
func checkFiles(t *testing.T, inv *report.Inventory) {
	t.Helper()
	for i, f := range inv.Files {
		if f == "" || i > 0 && inv.Files[i-1] >= f || !utf8.ValidString(f) {
			t.Fatalf("files not sorted, unique and valid: %q", inv.Files)
		}
	}
	if len(inv.Files) > report.MaxFilesListed || inv.FileCount < len(inv.Files) || inv.FileCount > 0 && len(inv.Files) == 0 {
		t.Fatalf("%d files listed of %d", len(inv.Files), inv.FileCount)
	}
}

// checkBaseline holds for every input read as a baseline: every
// occurrence of an id is kept (preservation counts them), and the ids
// listed as duplicates are exactly the repeated ones, sorted and bounded.
func checkBaseline(t *testing.T, data []byte, format report.Format, id report.Identity) {
	t.Helper()
	inv, err := report.Parse(bytes.NewReader(data), format, report.Options{Identity: id, Limits: fuzzLimits, AllowDuplicateIDs: true})
	if err != nil {
		if rmerr.CodeOf(err) == rmerr.ReportIdentity && strings.Contains(err.Error(), "duplicate") {
			t.Fatalf("a baseline was refused for duplicates: %v", err)
		}
		return
	}
	for i, d := range inv.Duplicates {
		if i > 0 && inv.Duplicates[i-1] >= d {
			t.Fatalf("duplicates not sorted and unique: %q", inv.Duplicates)
		}
	}
	if len(inv.Duplicates) > report.MaxDuplicatesListed || inv.DuplicateCount < len(inv.Duplicates) || inv.DuplicateCount > 0 && len(inv.Duplicates) == 0 {
		t.Fatalf("%d duplicates listed of %d", len(inv.Duplicates), inv.DuplicateCount)
	}
	seen := map[report.TestID]int{}
	for _, tc := range inv.Tests {
		seen[tc.ID]++
	}
	var repeated []report.TestID
	for id, n := range seen {
		if n > 1 {
			repeated = append(repeated, id)
		}
	}
	slices.Sort(repeated)
	if len(repeated) != inv.DuplicateCount || !slices.Equal(repeated[:len(inv.Duplicates)], inv.Duplicates) {
		t.Fatalf("ids repeated in the inventory %q, listed %q of %d", repeated, inv.Duplicates, inv.DuplicateCount)
	}
	if c := inv.Counts; c.Total != len(inv.Tests) || c.Passed+c.Failed+c.Skipped != c.Total {
		t.Fatalf("counts %+v for %d tests", c, len(inv.Tests))
	}
}
