package report_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/runmill/verify/internal/corpus"
	"github.com/runmill/verify/pkg/report"
)

// junitBenchSize is the size of the benchmark report: the yardstick
// is a 100 MB JUnit file read side by side with xmllint --stream.
const junitBenchSize = 100 << 20

// junitBenchFile returns a generated JUnit report of at least junitBenchSize
// bytes in the user's cache directory (outside the repository), writing it
// with write on first use. The content is deterministic, so xmllint can be
// timed on the same bytes: docs/benchmarks.md names the paths.
func junitBenchFile(tb testing.TB, name string, write func(io.Writer, int64) int) string {
	tb.Helper()
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = tb.TempDir()
	}
	dir = filepath.Join(dir, "runmill-bench")
	path := filepath.Join(dir, name)
	if st, err := os.Stat(path); err == nil && st.Size() >= junitBenchSize {
		return path
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	tmp, err := os.CreateTemp(dir, "junit-*.tmp")
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(tmp, 1<<20)
	write(w, junitBenchSize)
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		tb.Fatal(err)
	}
	return path
}

// writeJUnitBench writes a Maven-Surefire-like aggregate of at least size
// bytes: suites with properties and logs, mostly passing test cases, some
// failures with stack traces in CDATA, skips, escaped and non-ASCII text.
func writeJUnitBench(w io.Writer, size int64) int {
	rng := rand.New(rand.NewPCG(1, 2))
	cw := &junitCountWriter{w: w}
	modules := []string{"core", "api", "storage", "billing", "auth", "search", "ingest", "render"}
	fmt.Fprintf(cw, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"bench\">\n")
	tests := 0
	for suite := 0; cw.n < size; suite++ {
		class := fmt.Sprintf("com.example.%s.service%d.Component%dTest", modules[suite%len(modules)], suite%97, suite)
		k := 20 + rng.IntN(60)
		fmt.Fprintf(cw, "  <testsuite name=%q tests=\"%d\" failures=\"0\" errors=\"0\" skipped=\"0\" time=\"%.3f\" timestamp=\"2024-05-21T13:09:23\" hostname=\"ci-runner-%d\">\n",
			class, k, rng.Float64()*30, suite%16)
		fmt.Fprintf(cw, "    <properties>\n")
		for p := 0; p < 30; p++ {
			fmt.Fprintf(cw, "      <property name=\"java.property.number%d\" value=\"/usr/lib/jvm/java-17-openjdk-amd64/lib/%d\"/>\n", p, rng.IntN(1000))
		}
		fmt.Fprintf(cw, "    </properties>\n")
		for t := 0; t < k; t++ {
			tests++
			name := fmt.Sprintf("should_handle_case_%d_when_input_is_%s[%d]", t, modules[rng.IntN(len(modules))], rng.IntN(10))
			fmt.Fprintf(cw, "    <testcase name=%q classname=%q time=\"%.3f\"", name, class, rng.Float64())
			switch r := rng.IntN(100); {
			case r < 5:
				fmt.Fprintf(cw, ">\n      <failure message=\"expected: &lt;200&gt; but was: &lt;500&gt; — réponse «%d»\" type=\"org.opentest4j.AssertionFailedError\"><![CDATA[org.opentest4j.AssertionFailedError: expected: <200> but was: <500>\n", t)
				for f := 0; f < 30; f++ {
					fmt.Fprintf(cw, "\tat %s.%s(Component%dTest.java:%d)\n", class, name[:20], suite, 10+f)
				}
				fmt.Fprintf(cw, "]]></failure>\n      <system-out><![CDATA[")
				for l := 0; l < 12; l++ {
					fmt.Fprintf(cw, "2024-05-21 13:09:%02d INFO  [main] c.e.Component - request %d handled in %d ms\n", l, rng.IntN(1e6), rng.IntN(500))
				}
				fmt.Fprintf(cw, "]]></system-out>\n    </testcase>\n")
			case r < 8:
				fmt.Fprintf(cw, ">\n      <skipped message=\"disabled on CI: needs a GPU &amp; a display\"/>\n    </testcase>\n")
			default:
				fmt.Fprintf(cw, "/>\n")
			}
		}
		fmt.Fprintf(cw, "    <system-out>")
		for l := 0; l < 25; l++ {
			fmt.Fprintf(cw, "13:09:%02d.%03d [pool-%d] DEBUG o.e.Pool - &lt;conn id=&quot;%d&quot;&gt; released &amp; reused (日本語 ok)\n", l, rng.IntN(1000), rng.IntN(8), rng.IntN(1e6))
		}
		fmt.Fprintf(cw, "</system-out>\n    <system-err/>\n  </testsuite>\n")
	}
	fmt.Fprintf(cw, "</testsuites>\n")
	return tests
}

type junitCountWriter struct {
	w io.Writer
	n int64
}

func (c *junitCountWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// BenchmarkJUnit100MB parses the generated 100 MB report from disk (page
// cache) like runmill reads a declared report. Compare with
// xmllint --stream --noout on the same file (docs/benchmarks.md).
func BenchmarkJUnit100MB(b *testing.B) {
	benchmarkJUnitFile(b, junitBenchFile(b, "junit-100MB-v1.xml", writeJUnitBench))
}

// junitAggregateSource is the real aggregate BenchmarkJUnitAggregate100MB
// repeats: Jenkins' junit plugin's Eclipse PDE report, an Ant
// TESTS-TestSuites aggregate of 16 suites, 3,366 test cases and 1,706
// properties (783 KB).
const junitAggregateSource = "junit-plugin__eclipse-plugin-test-report.xml"

// BenchmarkJUnitAggregate100MB parses a real aggregate report from the
// shared corpus repeated to 100 MB (issue 26: the parser on real bytes, not
// only on the generator's); xmllint --stream reads the same file in
// docs/benchmarks.md.
func BenchmarkJUnitAggregate100MB(b *testing.B) {
	src, err := os.ReadFile(filepath.Join(corpus.Dir(b), "junit", junitAggregateSource))
	if err != nil {
		b.Fatal(err)
	}
	benchmarkJUnitFile(b, junitBenchFile(b, "junit-aggregate-100MB-v1.xml", func(w io.Writer, size int64) int {
		return writeJUnitRepeated(b, w, src, size)
	}))
}

// writeJUnitRepeated writes src's <testsuites> root once around copies of
// its content until size bytes are written. Copy k prefixes every classname
// with "copyK." so the ids stay unique, and is otherwise src byte for byte.
func writeJUnitRepeated(tb testing.TB, w io.Writer, src []byte, size int64) int {
	open, close := []byte("<testsuites>"), []byte("</testsuites>")
	i, j := bytes.Index(src, open), bytes.LastIndex(src, close)
	if i < 0 || j < i {
		tb.Fatalf("%s has no <testsuites> root", junitAggregateSource)
	}
	head, body, tail := src[:i+len(open)], src[i+len(open):j], src[j:]
	cw := &junitCountWriter{w: w}
	cw.Write(head)
	tests := 0
	for k := 0; cw.n+int64(len(tail)) < size; k++ {
		cw.Write(bytes.ReplaceAll(body, []byte(`classname="`), fmt.Appendf(nil, `classname="copy%d.`, k)))
		tests += bytes.Count(body, []byte("<testcase "))
	}
	cw.Write(tail)
	return tests
}

// BenchmarkJUnit100MBManyIDs reads 100 MB of bare test cases (about 940,000
// ids, under the budget's million per report), where memory is all ids: it
// checks that memory grows with the ids and by how much.
func BenchmarkJUnit100MBManyIDs(b *testing.B) {
	benchmarkJUnitFile(b, junitBenchFile(b, "junit-100MB-ids-v2.xml", writeJUnitManyIDs))
}

// writeJUnitManyIDs writes suites of bare passing test cases.
func writeJUnitManyIDs(w io.Writer, size int64) int {
	cw := &junitCountWriter{w: w}
	fmt.Fprintf(cw, "<testsuites>\n")
	tests := 0
	for suite := 0; cw.n < size; suite++ {
		fmt.Fprintf(cw, "<testsuite name=\"suite%d\">\n", suite)
		for t := 0; t < 100; t++ {
			tests++
			fmt.Fprintf(cw, "<testcase classname=\"org.example.pkg%d.Class%dTest\" name=\"should_return_the_expected_value_%d\" time=\"0.001\"/>\n", suite%50, suite, t)
		}
		fmt.Fprintf(cw, "</testsuite>\n")
	}
	fmt.Fprintf(cw, "</testsuites>\n")
	return tests
}

func benchmarkJUnitFile(b *testing.B, path string) {
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	var inv *report.Inventory
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		inv, err = report.Parse(f, report.JUnit, report.Options{})
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(inv.Counts.Total), "tests")
}
