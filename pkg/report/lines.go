package report

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/report/internal/quote"
	"github.com/runmill/verify/pkg/report/internal/textcap"
	"github.com/runmill/verify/pkg/rmerr"
)

// lineReader yields the lines of a line-oriented report (TAP, go test -json)
// while enforcing Limits.MaxBytes and Limits.MaxLine and hashing every byte,
// so the Inventory's SHA256 and Bytes describe exactly what was parsed. A
// line is never held beyond MaxLine bytes: an over-long line is an error as
// soon as the cap is crossed, without reading the rest of it.
type lineReader struct {
	src     *countingHasher
	br      *bufio.Reader
	maxLine int
	long    []byte // reassembles a line longer than the bufio buffer
	line    int    // 1-based number of the line last returned
	err     error
}

// lineBufSize is large enough that real lines are returned straight from the
// bufio buffer (no copy), and small enough to keep the fixed cost low.
const lineBufSize = 256 << 10

func newLineReader(r io.Reader, lim Limits) *lineReader {
	src := &countingHasher{r: r, h: sha256.New(), max: lim.MaxBytes}
	return &lineReader{src: src, br: bufio.NewReaderSize(src, lineBufSize), maxLine: lim.MaxLine}
}

// next returns the next line without its "\n" (and without a "\r" before
// it). The slice is valid until the following call. At the end of input or on
// an error it returns false; err then tells which.
func (lr *lineReader) next() ([]byte, bool) {
	if lr.err != nil {
		return nil, false
	}
	lr.long = lr.long[:0]
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if err == nil || (err == io.EOF && len(chunk) > 0) || err == bufio.ErrBufferFull {
			var line []byte
			if len(lr.long) == 0 && err != bufio.ErrBufferFull {
				line = chunk
			} else {
				lr.long = append(lr.long, chunk...)
				line = lr.long
			}
			n := len(line)
			if n > 0 && line[n-1] == '\n' {
				n--
			}
			if n > lr.maxLine {
				lr.err = rmerr.New(rmerr.ReportLimit, "line %d is longer than %d bytes (Limits.MaxLine)", lr.line+1, lr.maxLine).
					WithHint("a test reporter line this long is not a test event; check the report was written by the declared reporter")
				return nil, false
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			lr.line++
			line = line[:n]
			if n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, true
		}
		if err == io.EOF {
			lr.err = io.EOF
			return nil, false
		}
		lr.err = err
		return nil, false
	}
}

// finish drains the rest of the input (so the digest covers the whole file)
// and returns the first real error seen, or nil at a clean end of input.
func (lr *lineReader) finish() error {
	if lr.err != nil && lr.err != io.EOF {
		return lr.wrapErr(lr.err)
	}
	if _, err := io.Copy(io.Discard, lr.br); err != nil {
		return lr.wrapErr(err)
	}
	return nil
}

func (lr *lineReader) wrapErr(err error) error {
	var re *rmerr.Error
	if errors.As(err, &re) {
		return err
	}
	return fmt.Errorf("reading report: %w", err)
}

// fill records what the reader saw in inv.
func (lr *lineReader) fill(inv *Inventory) {
	inv.Bytes = lr.src.n
	inv.SHA256 = hex.EncodeToString(lr.src.h.Sum(nil))
}

// countingHasher hashes and counts what passes through it and fails once
// more than max bytes have been read.
type countingHasher struct {
	r   io.Reader
	h   hash.Hash
	n   int64
	max int64
}

func (c *countingHasher) Read(p []byte) (int, error) {
	if c.n > c.max {
		return 0, c.limitErr()
	}
	// Read at most one byte past the cap: enough to know it was crossed.
	if room := c.max - c.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	if c.n > c.max {
		return n, c.limitErr()
	}
	return n, err
}

func (c *countingHasher) limitErr() error {
	return rmerr.New(rmerr.ReportLimit, "report is larger than %d bytes (Limits.MaxBytes)", c.max).
		WithHint("split the test run into several reports, or raise the limit deliberately")
}

// textKeeper applies Limits.MaxField to the text a report carries (ids,
// messages) and keeps the total retained under a budget, so no input can
// make the inventory much larger than the report itself.
type textKeeper struct {
	ids      idArena
	maxField int
	budget   int64 // bytes still allowed to be retained
	invalid  int   // fields that held invalid UTF-8
	notes    []string
}

func newTextKeeper(lim Limits) *textKeeper {
	return &textKeeper{maxField: lim.MaxField, budget: lim.MaxBytes}
}

// text returns b as a valid UTF-8 string cut at MaxField bytes. what names
// the field for the note that records a cut and the digest of the full text.
func (k *textKeeper) text(b []byte, what func() string) (string, error) {
	s := validUTF8(b, &k.invalid)
	if len(s) > k.maxField {
		k.notes = append(k.notes, fmt.Sprintf("%s cut to %d of %d bytes; sha256 of the full text: %s",
			what(), k.maxField, len(s), digest.Hex([]byte(s))))
		s = cutUTF8(s, k.maxField)
	}
	return s, k.spend(len(s))
}

// id returns b as a test identity. An id longer than MaxField keeps its
// first bytes and gains the digest of the whole: still unique, still stable
// between the base and the candidate run, and bounded.
//
// Ids are byte-exact (issue #13): an id that is not valid UTF-8 is refused
// (invalidID), never repaired, since replacing bytes with U+FFFD would let
// two different tests become one id.
func (k *textKeeper) id(b []byte) (TestID, error) {
	if !utf8.Valid(b) {
		return "", invalidID(b)
	}
	if len(b) > k.maxField {
		full := len(b)
		s := cutUTF8(string(b), k.maxField) + "…" + digest.Of(b)
		k.notes = append(k.notes, fmt.Sprintf("test id of %d bytes cut to %d bytes plus its sha256: %s", full, k.maxField, quote.String(s)))
		b = []byte(s)
	}
	return TestID(k.ids.intern(b)), k.spend(len(b))
}

// idArena stores ids back to back in large blocks: an inventory holds one
// id per test, and a separate allocation for each would cost a size-class
// rounding and a header apiece. A strings.Builder hands out its bytes as a
// string without copying; as long as a block never outgrows the capacity it
// was given, every substring taken from it stays valid.
type idArena struct {
	block strings.Builder
}

const idBlock = 64 << 10

func (a *idArena) intern(b []byte) string {
	if a.block.Cap()-a.block.Len() < len(b) {
		a.block = strings.Builder{}
		a.block.Grow(max(idBlock, len(b)))
	}
	start := a.block.Len()
	a.block.Write(b)
	return a.block.String()[start:]
}

func (k *textKeeper) spend(n int) error {
	k.budget -= int64(n)
	if k.budget < 0 {
		return rmerr.New(rmerr.ReportLimit, "test ids and messages exceed %d bytes in total (Limits.MaxBytes)", -k.budget+int64(n)).
			WithHint("the report nests or repeats text beyond any real suite; check the reporter")
	}
	return nil
}

// finish appends the keeper's notes to inv.
func (k *textKeeper) finish(inv *Inventory) {
	if k.invalid > 0 {
		inv.Notes = append(inv.Notes, fmt.Sprintf("%d text field(s) held invalid UTF-8; each invalid byte was replaced by U+FFFD", k.invalid))
	}
	inv.Notes = append(inv.Notes, k.notes...)
}

// validUTF8 returns b as a string, replacing each invalid byte with U+FFFD
// (the rule encoding/json applies, so go-json and TAP ids agree with it). Two
// ids that differ only in invalid bytes can collide; duplicate detection then
// rejects the report rather than merging them.
func validUTF8(b []byte, invalid *int) string {
	if utf8.Valid(b) {
		return string(b)
	}
	*invalid++
	var out bytes.Buffer
	out.Grow(len(b) + 8)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out.WriteRune(utf8.RuneError)
		} else {
			out.Write(b[:size])
		}
		b = b[size:]
	}
	return out.String()
}

// cutUTF8 cuts s to at most n bytes without splitting a rune.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// invalidID is the error for an id that is not valid UTF-8. Refusing is the
// strict half of "ids are byte-exact": a lossless escape (\xNN) would have to
// escape every backslash too, changing the ids of honest reports that
// contain one (Windows paths, regex names) and breaking their declared_skips,
// while no real producer writes a non-UTF-8 test name (go test rewrites one
// to U+FFFD, JUnit is XML and must be UTF-8 anyway).
func invalidID(b []byte) *rmerr.Error {
	off := 0
	for off < len(b) {
		r, size := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		off += size
	}
	return rmerr.New(rmerr.ReportIdentity, "test id %s is not valid UTF-8 (byte 0x%02X at offset %d); ids are compared byte for byte and runmill will not repair one, since two different ids could then become one",
		quote.Text(b), b[off], off).
		WithHint("make the test runner write its report as UTF-8 (test names in another encoding, such as Latin-1, must be converted)")
}

// listDuplicates applies Options.AllowDuplicateIDs to a finished
// inventory: every occurrence of a repeated id stays in Tests, where it
// keeps preservation authority by count (issue 24: a baseline that passed
// X twice needs X twice at the candidate), and the repeated ids are
// listed, sorted and bounded.
func listDuplicates(inv *Inventory) {
	seen := make(map[TestID]int, len(inv.Tests))
	for i := range inv.Tests {
		seen[inv.Tests[i].ID]++
	}
	var dups []TestID
	for id, n := range seen {
		if n > 1 {
			dups = append(dups, id)
		}
	}
	if len(dups) == 0 {
		return
	}
	slices.Sort(dups)
	inv.DuplicateCount = len(dups)
	if len(dups) > MaxDuplicatesListed {
		dups = dups[:MaxDuplicatesListed]
	}
	inv.Duplicates = slices.Clip(dups)
	inv.Notes = append(inv.Notes, fmt.Sprintf("%d test id(s) occur more than once (first: %s); each occurrence is kept and counts (Options.AllowDuplicateIDs, for a baseline)",
		inv.DuplicateCount, quote.String(string(inv.Duplicates[0]))))
}

// tally counts the statuses of tests.
func countStatuses(tests []Test) Counts {
	c := Counts{Total: len(tests)}
	for i := range tests {
		switch tests[i].Status {
		case Passed:
			c.Passed++
		case Failed:
			c.Failed++
		case Skipped:
			c.Skipped++
		}
	}
	return c
}

// duplicateIDs finds the first id (in report order) that occurs more than
// once, how often it occurs, and how many distinct ids repeat. Spec § 4:
// every id must be unique within the report.
func duplicateIDs(tests []Test) (first TestID, count, distinct int) {
	seen := make(map[TestID]int, len(tests))
	for i := range tests {
		seen[tests[i].ID]++
	}
	if len(seen) == len(tests) {
		return "", 0, 0
	}
	for _, n := range seen {
		if n > 1 {
			distinct++
		}
	}
	for i := range tests {
		if n := seen[tests[i].ID]; n > 1 {
			return tests[i].ID, n, distinct
		}
	}
	return "", 0, 0
}

// fromCap returns the text held by c, noting the cut and the digest of the
// full text when it was longer than MaxField.
func (k *textKeeper) fromCap(c *textcap.Field, trim bool, what func() string) (string, error) {
	b := c.Buf
	if trim {
		b = bytes.TrimSpace(b)
	}
	s := validUTF8(b, &k.invalid)
	if c.H != nil {
		k.notes = append(k.notes, fmt.Sprintf("%s cut to %d of %d bytes; sha256 of the full text: %s",
			what(), c.Max, c.N, hex.EncodeToString(c.H.Sum(nil))))
	}
	s = cutUTF8(s, k.maxField)
	return s, k.spend(len(s))
}
