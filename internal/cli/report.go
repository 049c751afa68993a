package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/runmill/verify/pkg/report"
	"github.com/runmill/verify/pkg/rmerr"
)

// reportOptions are report inventory's flags.
type reportOptions struct {
	file     string // "-" for stdin
	format   report.Format
	identity report.Identity
	root     string // absolute; report.Options.Root
}

func newReportInventoryCmd(runF func(context.Context, IO, *reportOptions) error) *command {
	if runF == nil {
		runF = runReportInventory
	}
	c := &command{
		name:    "report inventory",
		exit:    exitReport,
		usage:   "--format junit|tap|go-json [--identity suite-path] [--root DIR] FILE",
		summary: "parse one test report and print its canonical inventory",
		long: `
Parses FILE ("-" reads standard input) the way verification does and prints
the inventory as JSON on stdout: every test id with its status, the counts,
faults (a Go package or TAP stream that failed outside any test), notes, and
the report's SHA-256. This is how to check what a reporter produces before
declaring it in .runmill/checks.yaml.

--identity suite-path is the declared alternative of report.identity:
JUnit ids include the enclosing testsuite names, and TAP subtests are
accepted with ids joined by " > ".

--root DIR (default: the current directory) is where the tests ran: node:test
names files by absolute path, and below DIR they are written relative to it,
as verification writes them relative to the sandbox's /runmill/checkout.

Exit status: 0 the report is valid, 1 it is not (the RM-REPORT code and the
reason on stderr), 2 usage.`,
	}
	c.run = func(ctx context.Context, s IO, args []string) error {
		var format, identity, root string
		fs := newFlags(c, s)
		fs.StringVar(&format, "format", "", "report format: "+formatList())
		fs.StringVar(&identity, "identity", "", `test id rule: "suite-path" as declared in checks.yaml report.identity; default the spec's rule`)
		fs.StringVar(&root, "root", ".", "the directory the tests ran in: node:test file paths below it are written relative to it")
		if err := fs.parse(args); err != nil {
			return err
		}
		if err := fs.required("format"); err != nil {
			return err
		}
		if len(fs.pos) != 1 {
			return rmerr.New(rmerr.Usage, "expected exactly one report FILE, got %d", len(fs.pos)).WithHint("run '%s --help'", fs.Name())
		}
		abs, err := filepath.Abs(root)
		if err != nil {
			return rmerr.Wrap(rmerr.Usage, err, "resolving --root %q", root).InField("--root").
				WithHint("pass the directory the test command ran in")
		}
		o := &reportOptions{file: fs.pos[0], format: report.Format(format), identity: report.Identity(identity), root: abs}
		if !slices.Contains(report.Formats, o.format) {
			return rmerr.New(rmerr.Usage, "unsupported --format %q", format).InField("--format").
				WithHint("use one of %s; a generic JSON object has no standard test semantics", formatList())
		}
		if o.identity != report.IdentityDefault && o.identity != report.IdentitySuitePath {
			return rmerr.New(rmerr.Usage, "unknown --identity %q", identity).InField("--identity").
				WithHint("use suite-path, or omit the flag for the spec's rule")
		}
		return runF(ctx, s, o)
	}
	return c
}

// runReportInventory parses the report and prints its inventory. An invalid
// report (RM-REPORT-…) is an answer (exitReport), named with its file.
func runReportInventory(_ context.Context, s IO, o *reportOptions) error {
	var r io.Reader = s.In
	if o.file != "-" {
		file, err := os.Open(o.file)
		if err != nil {
			return rmerr.Wrap(rmerr.Usage, err, "opening report").WithHint("pass the path of the report file the test command wrote")
		}
		defer file.Close()
		r = file
	}
	inv, err := report.Parse(r, o.format, report.Options{Identity: o.identity, Root: o.root})
	if err != nil {
		if strings.HasPrefix(string(rmerr.CodeOf(err)), "RM-REPORT-") {
			return fmt.Errorf("%s: %w", o.file, err)
		}
		return fmt.Errorf("parsing %s: %w", o.file, err)
	}
	w := bufio.NewWriterSize(s.Out, 64<<10)
	if err := writeInventory(w, inv); err != nil {
		return fmt.Errorf("writing inventory: %w", err)
	}
	return w.Flush()
}

// writeInventory writes what an indenting json.Encoder (HTML left
// unescaped, so "parent > child" stays readable) writes for inv, one test at
// a time: encoding the whole inventory at once would hold a second copy of
// it, and peak memory must grow with the tests, not twice that.
func writeInventory(w io.Writer, inv *report.Inventory) error {
	head := *inv
	head.Tests = nil
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&head); err != nil {
		return err
	}
	// Tests is nil in head, so its member reads null; a string value
	// cannot hold this byte sequence (its quotes would be escaped).
	const marker = "\n  \"tests\": null"
	before, after, ok := bytes.Cut(buf.Bytes(), []byte(marker))
	if !ok {
		return fmt.Errorf("inventory encoding has no tests member")
	}
	if _, err := w.Write(before); err != nil {
		return err
	}
	if len(inv.Tests) == 0 {
		if _, err := io.WriteString(w, "\n  \"tests\": []"); err != nil {
			return err
		}
	} else {
		if _, err := io.WriteString(w, "\n  \"tests\": ["); err != nil {
			return err
		}
		var tb []byte
		for i := range inv.Tests {
			tb = tb[:0]
			if i > 0 {
				tb = append(tb, ',')
			}
			tb = appendTest(tb, &inv.Tests[i])
			if _, err := w.Write(tb); err != nil {
				return err
			}
		}
		if _, err := io.WriteString(w, "\n  ]"); err != nil {
			return err
		}
	}
	_, err := w.Write(after)
	return err
}

// appendTest encodes one test as the indenting encoder does inside the
// tests array, without reflection: encoding/json's per-value garbage would
// otherwise grow the heap with every test written.
func appendTest(b []byte, t *report.Test) []byte {
	b = append(b, "\n    {\n      \"id\": "...)
	b = appendJSONString(b, string(t.ID))
	b = append(b, ",\n      \"status\": "...)
	b = appendJSONString(b, string(t.Status))
	if t.Message != "" {
		b = append(b, ",\n      \"message\": "...)
		b = appendJSONString(b, t.Message)
	}
	if t.File != "" {
		b = append(b, ",\n      \"file\": "...)
		b = appendJSONString(b, t.File)
	}
	if t.Line != 0 {
		b = append(b, ",\n      \"line\": "...)
		b = strconv.AppendInt(b, int64(t.Line), 10)
	}
	if t.Flaky {
		b = append(b, ",\n      \"flaky\": true"...)
	}
	return append(b, "\n    }"...)
}

// appendJSONString quotes s as encoding/json does with HTML escaping off.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs escaping: an inventory
		// of 400,000 tests is tens of megabytes of such ids.
		for i+8 <= len(s) && jsonPlain8(s[i:i+8]) {
			i += 8
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonPlain8 reports whether the first eight bytes of s (it has them) are
// printable ASCII without '"' or '\\', which appendJSONString copies as
// they are.
func jsonPlain8(s string) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	w := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s), 8))
	q, bs := w^(lo*'"'), w^(lo*'\\')
	// A byte below 0x20 borrows into its top bit, one from 0x80 has it set,
	// and a zero lane of q or bs (the quote or the backslash) borrows too.
	return ((w-lo*0x20)|w|((q-lo)&^q)|((bs-lo)&^bs))&hi == 0
}

func formatList() string {
	names := make([]string, len(report.Formats))
	for i, f := range report.Formats {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}
