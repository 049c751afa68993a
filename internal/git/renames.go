package git

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/printable"
	"github.com/runmill/verify/pkg/rmerr"
)

// Rename is one rename git's rename detection found: a path deleted at one
// commit and added, at least half the same, at the other.
type Rename struct {
	From, To   string
	Similarity int // git's similarity index, 50–100
}

// RenameLimit is git's -l: with more candidate files than this on either
// side, git skips inexact rename detection (exact renames are still
// found). It is passed on every call so that the verifier host's git, with
// its own diff.renameLimit, computes the same renames.
const RenameLimit = 1000

// maxRenamePath bounds one path in the listing (git's own limit is the
// file system's, 4 KiB on Linux).
const maxRenamePath = 64 << 10

// Renames lists the renames git detects between from and to (git diff
// -M50% --name-status -z --diff-filter=R from to), read as the stream git
// writes it: the first max renames whose paths take at most maxBytes are
// kept, and truncated says that more followed. Detection is pinned — the
// threshold, the rename limit, no copies, no relative paths, no external
// diff — so a repository's config cannot change what it finds.
func (r *Repo) Renames(ctx context.Context, from, to string, max int, maxBytes int64) (renames []Rename, truncated bool, err error) {
	p := &renameParser{max: max, maxBytes: maxBytes}
	_, err = r.run(ctx, p, "diff", "--name-status", "-z", "--diff-filter=R", "-M50%", "-l"+strconv.Itoa(RenameLimit),
		"--no-relative", "--no-ext-diff", "--no-textconv", from, to, "--")
	if err == nil {
		err = p.finish()
	}
	if err != nil {
		return nil, false, rmerr.Wrap(rmerr.GitRepository, err, "listing the renames between %s and %s", objectid.Short(from), objectid.Short(to))
	}
	return p.out, p.truncated, nil
}

// renameParser reads git's "R<score> NUL <from> NUL <to> NUL" records as
// they arrive, keeping what the bounds allow and counting the rest.
type renameParser struct {
	max      int
	maxBytes int64
	bytes    int64
	field    []byte   // the field being read
	rec      []string // the record's fields so far
	out      []Rename
	// truncated: a rename past the bounds was seen.
	truncated bool
	err       error
}

func (p *renameParser) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 && p.err == nil {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			p.grow(b)
			break
		}
		p.grow(b[:i])
		b = b[i+1:]
		p.rec = append(p.rec, string(p.field))
		p.field = p.field[:0]
		if len(p.rec) == 3 {
			p.record()
			p.rec = p.rec[:0]
		}
	}
	return n, p.err
}

func (p *renameParser) grow(b []byte) {
	if len(p.field)+len(b) > maxRenamePath {
		p.err = fmt.Errorf("a path in git's rename listing is longer than %d bytes", maxRenamePath)
		return
	}
	p.field = append(p.field, b...)
}

func (p *renameParser) record() {
	status, from, to := p.rec[0], p.rec[1], p.rec[2]
	score, ok := strings.CutPrefix(status, "R")
	sim, err := strconv.Atoi(score)
	if !ok || err != nil || sim < 0 || sim > 100 || from == "" || to == "" {
		p.err = fmt.Errorf("unexpected record in git's rename listing: %s", printable.Text(status+" "+from+" "+to, 200))
		return
	}
	size := int64(len(from) + len(to))
	if len(p.out) >= p.max || p.bytes+size > p.maxBytes {
		p.truncated = true
		return
	}
	p.bytes += size
	p.out = append(p.out, Rename{From: from, To: to, Similarity: sim})
}

func (p *renameParser) finish() error {
	if p.err == nil && (len(p.field) > 0 || len(p.rec) > 0) {
		p.err = fmt.Errorf("git's rename listing ends inside a record")
	}
	return p.err
}

// ReadFilesAt reads the regular files paths at commit with one git process
// (cat-file --batch on "<commit>:<path>"), each of at most max bytes; a
// path that is absent, or not a file, is left out of the result. For the
// few small files a caller looks for in many places (go.mod above each
// moved package), one process beats one per path.
func (r *Repo) ReadFilesAt(ctx context.Context, commit string, paths []string, max int) (map[string][]byte, error) {
	out := map[string][]byte{}
	var in bytes.Buffer
	var asked []string
	for _, p := range paths {
		if p == "" || strings.ContainsAny(p, "\n\x00") {
			continue // cannot be named on cat-file's input; no file is found there
		}
		asked = append(asked, p)
		in.WriteString(commit + ":" + p + "\n")
	}
	if len(asked) == 0 {
		return out, nil
	}
	res, err := Run(ctx, r.Dir, RunOptions{Stdin: &in}, "cat-file", "--batch")
	if err != nil {
		return nil, rmerr.Wrap(rmerr.GitRepository, err, "reading files at %s", objectid.Short(commit))
	}
	for _, p := range asked {
		// "<oid> SP <type> SP <size> LF <contents> LF", or "<name> missing LF"
		// (and "… ambiguous", "dangling …" for names that are no object).
		head, rest, ok := bytes.Cut(res, []byte{'\n'})
		if !ok {
			return nil, fmt.Errorf("cat-file --batch ended early at %s:%s", objectid.Short(commit), p)
		}
		f := strings.Fields(string(head))
		if len(f) != 3 || !objectid.Valid(f[0]) {
			res = rest // "<name> missing": nothing follows
			continue
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 0 || len(rest) < n+1 {
			return nil, fmt.Errorf("cat-file --batch: bad size %q for %s:%s", f[2], objectid.Short(commit), p)
		}
		if f[1] == "blob" && n <= max {
			out[p] = rest[:n]
		}
		res = rest[n+1:]
	}
	return out, nil
}
