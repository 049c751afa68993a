package report_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runmill/verify/pkg/report"
)

var (
	genJSON   = flag.String("genjson", "", "write a realistic go test -json stream to this file (see docs/benchmarks.md) and pass")
	genJSONMB = flag.Int("genjson-mb", 100, "size of the -genjson stream in MiB")
)

// TestGenerateGoJSONStream writes the benchmark stream for the side-by-side
// measurement against gotestsum; it does nothing without -genjson.
func TestGenerateGoJSONStream(t *testing.T) {
	if *genJSON == "" {
		t.Skip("pass -genjson FILE to write the benchmark stream")
	}
	f, err := os.Create(*genJSON)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeGoJSONStream(f, int64(*genJSONMB)<<20); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

var (
	benchOnce sync.Once
	benchData []byte
)

// BenchmarkGoJSON100MB parses a 100 MiB stream shaped like a real monorepo
// run: hundreds of packages, table-driven subtests, parallel tests
// (pause/cont), t.Log output, a few failures and skips, coverage lines.
func BenchmarkGoJSON100MB(b *testing.B) {
	benchOnce.Do(func() {
		var buf bytes.Buffer
		if err := writeGoJSONStream(&buf, 100<<20); err != nil {
			b.Fatal(err)
		}
		benchData = buf.Bytes()
	})
	b.SetBytes(int64(len(benchData)))
	b.ReportAllocs()
	var tests int
	for b.Loop() {
		inv, err := report.Parse(bytes.NewReader(benchData), report.GoJSON, report.Options{})
		if err != nil {
			b.Fatal(err)
		}
		tests = len(inv.Tests)
	}
	b.ReportMetric(float64(tests), "tests")
}

// writeGoJSONStream writes about size bytes of test2json events. It is
// deterministic: the same size gives the same bytes.
func writeGoJSONStream(out io.Writer, size int64) error {
	w := bufio.NewWriterSize(out, 1<<20)
	g := &streamGen{w: w, rng: rand.New(rand.NewPCG(7, 11)), now: time.Date(2025, 3, 10, 17, 34, 31, 0, time.FixedZone("", -7*3600))}
	areas := []string{"api", "auth", "billing", "cache", "config", "db", "events", "gateway", "jobs", "search", "storage", "telemetry"}
	verbs := []string{"Parse", "Validate", "Handle", "Encode", "Decode", "Retry", "Resolve", "Merge", "Load", "Store", "Sync", "Render"}
	nouns := []string{"Request", "Config", "Token", "Invoice", "Event", "Batch", "Schema", "Session", "Route", "Index", "Blob", "Metric"}
	for p := 0; g.n < size; p++ {
		pkg := fmt.Sprintf("github.com/acme/platform/internal/%s/%s%d", areas[p%len(areas)], nouns[(p/7)%len(nouns)], p)
		g.event("start", pkg, "", "")
		if g.rng.IntN(10) == 0 {
			g.event("output", pkg, "", "?   \t"+pkg+"\t[no test files]\n")
			g.event("skip", pkg, "", "")
			continue
		}
		failed := false
		tests := 10 + g.rng.IntN(80)
		var paused []string
		for i := 0; i < tests; i++ {
			name := fmt.Sprintf("Test%s%s%d", verbs[g.rng.IntN(len(verbs))], nouns[g.rng.IntN(len(nouns))], i)
			file := fmt.Sprintf("%s_test.go", nouns[g.rng.IntN(len(nouns))])
			g.event("run", pkg, name, "")
			g.event("output", pkg, name, "=== RUN   "+name+"\n")
			if g.rng.IntN(4) == 0 {
				g.event("output", pkg, name, "=== PAUSE "+name+"\n")
				g.event("pause", pkg, name, "")
				paused = append(paused, name)
				continue
			}
			failed = g.body(pkg, name, file) || failed
		}
		for _, name := range paused {
			g.event("cont", pkg, name, "")
			g.event("output", pkg, name, "=== CONT  "+name+"\n")
			failed = g.body(pkg, name, "parallel_test.go") || failed
		}
		if g.rng.IntN(3) == 0 {
			g.event("output", pkg, "", fmt.Sprintf("coverage: %d.%d%% of statements\n", 40+g.rng.IntN(60), g.rng.IntN(10)))
		}
		elapsed := fmt.Sprintf("%d.%03ds", g.rng.IntN(3), g.rng.IntN(1000))
		if failed {
			g.event("output", pkg, "", "FAIL\n")
			g.event("output", pkg, "", "FAIL\t"+pkg+"\t"+elapsed+"\n")
			g.event("fail", pkg, "", "")
		} else {
			g.event("output", pkg, "", "PASS\n")
			g.event("output", pkg, "", "ok  \t"+pkg+"\t"+elapsed+"\n")
			g.event("pass", pkg, "", "")
		}
	}
	return w.Flush()
}

type streamGen struct {
	w   *bufio.Writer
	rng *rand.Rand
	now time.Time
	n   int64
	buf []byte
}

// body writes a test's logs, subtests and result; it reports a failure.
func (g *streamGen) body(pkg, name, file string) bool {
	for range g.rng.IntN(6) {
		g.event("output", pkg, name, fmt.Sprintf("    %s:%d: %s\n", file, 10+g.rng.IntN(400), g.sentence()))
	}
	failed := false
	if g.rng.IntN(3) == 0 {
		for c := range 1 + g.rng.IntN(8) {
			sub := fmt.Sprintf("%s/case_%d_%s", name, c, []string{"empty_input", "valid", "unicode", "too_long", "nil_config", "retry_after_timeout"}[g.rng.IntN(6)])
			g.event("run", pkg, sub, "")
			g.event("output", pkg, sub, "=== RUN   "+sub+"\n")
			if g.rng.IntN(3) == 0 {
				g.event("output", pkg, sub, fmt.Sprintf("    %s:%d: %s\n", file, 10+g.rng.IntN(400), g.sentence()))
			}
			action, word := "pass", "PASS"
			if g.rng.IntN(100) == 0 {
				action, word, failed = "fail", "FAIL", true
				g.event("output", pkg, sub, fmt.Sprintf("    %s:%d: got %q, want %q\n", file, 10+g.rng.IntN(400), g.sentence(), g.sentence()))
			}
			g.event("output", pkg, sub, fmt.Sprintf("    --- %s: %s (0.%02ds)\n", word, sub, g.rng.IntN(100)))
			g.event(action, pkg, sub, "")
		}
	}
	action, word := "pass", "PASS"
	switch r := g.rng.IntN(100); {
	case failed || r < 2:
		action, word, failed = "fail", "FAIL", true
		g.event("output", pkg, name, fmt.Sprintf("    %s:%d: unexpected error: %s\n", file, 10+g.rng.IntN(400), g.sentence()))
	case r < 5:
		action, word = "skip", "SKIP"
		g.event("output", pkg, name, fmt.Sprintf("    %s:%d: skipping: requires %s\n", file, 10+g.rng.IntN(400), g.sentence()))
	}
	g.event("output", pkg, name, fmt.Sprintf("--- %s: %s (0.%02ds)\n", word, name, g.rng.IntN(100)))
	g.event(action, pkg, name, "")
	return failed
}

var words = []string{"connection", "refused", "retrying", "request", "handled", "in", "ms", "user", "id", "cache", "miss", "for", "key", "expected", "status", "200", "got", "deadline", "exceeded", "while", "waiting", "on", "queue", "partition", "offset", "committed"}

func (g *streamGen) sentence() string {
	var b []byte
	for i := range 4 + g.rng.IntN(16) {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, words[g.rng.IntN(len(words))]...)
	}
	return string(b)
}

// event writes one test2json line as go test -json does.
func (g *streamGen) event(action, pkg, test, output string) {
	g.now = g.now.Add(time.Duration(1+g.rng.IntN(900)) * time.Microsecond)
	b := append(g.buf[:0], `{"Time":"`...)
	b = g.now.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","Action":"`...)
	b = append(b, action...)
	b = append(b, `","Package":"`...)
	b = append(b, pkg...)
	b = append(b, '"')
	if test != "" {
		b = append(b, `,"Test":"`...)
		b = append(b, test...)
		b = append(b, '"')
	}
	if action == "output" {
		b = append(b, `,"Output":`...)
		b = appendJSONString(b, output)
	}
	if action == "pass" || action == "fail" || action == "skip" {
		b = append(b, `,"Elapsed":`...)
		b = strconv.AppendFloat(b, float64(g.rng.IntN(500))/100, 'f', -1, 64)
	}
	b = append(b, "}\n"...)
	g.buf = b
	g.n += int64(len(b))
	g.w.Write(b)
}

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
