package discovery

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/runmill/verify/pkg/objectid"
	"github.com/runmill/verify/pkg/policy"
	"github.com/runmill/verify/pkg/rmerr"
)

// FileKind is what a path names in a commit.
type FileKind int

const (
	Missing FileKind = iota
	Regular
	Symlink
	Directory
	OtherKind // submodule or anything else that is not a plain file
)

func (k FileKind) String() string {
	return [...]string{"missing", "regular file", "symlink", "directory", "submodule"}[k]
}

// kindAt says what path is at commit, from its git mode.
func kindAt(ctx context.Context, repo Repository, commit, path string) (FileKind, error) {
	mode, err := repo.ModeAt(ctx, commit, path)
	if err != nil {
		return 0, err
	}
	switch mode {
	case "":
		return Missing, nil
	case "100644", "100755":
		return Regular, nil
	case "120000":
		return Symlink, nil
	case "040000":
		return Directory, nil
	}
	return OtherKind, nil
}

// Repository is the little Discovery reads from git. internal/git's Repo
// satisfies it without importing this package (plumbing does not import the
// domain), so it speaks git's own vocabulary: tree-entry modes.
type Repository interface {
	// ModeAt returns the git tree-entry mode of path at commit ("100644",
	// "100755", "120000", "040000", "160000"), "" when there is no such
	// path, without reading it.
	ModeAt(ctx context.Context, commit, path string) (string, error)
	// ReadAt reads the regular file path at commit, at most max bytes
	// (more is an error, never a truncation).
	ReadAt(ctx context.Context, commit, path string, max int64) ([]byte, error)
}

// LoadRepositoryPolicy reads .runmill/checks.yaml from the base commit. Only
// when the file does not exist at base does it read the candidate's copy
// (read_from working-tree): a change cannot relax the rules that govern its
// own merge, and a new manifest can only add because the union is monotonic.
// A manifest that exists but cannot be read or parsed is RM-VERIFY-004.
func LoadRepositoryPolicy(ctx context.Context, repo Repository, base, candidate string) (*RepositoryPolicy, error) {
	for _, at := range []struct {
		commit string
		from   ReadFrom
	}{{base, ReadFromBase}, {candidate, ReadFromWorkingTree}} {
		p, err := readPolicyAt(ctx, repo, at.commit)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue
		}
		p.ReadFrom = at.from
		return p, nil
	}
	return nil, nil
}

// LoadChangePolicy reads the candidate's .runmill/checks.yaml when the
// governing policy was read from the base: only the declared skips it adds
// or removes are taken from it (Input.Change), never a check, a command or
// a requirement. nil when the governing policy is not the base's or the
// candidate has none; a candidate policy that cannot be read or parsed is
// returned as its error, and declares nothing.
func LoadChangePolicy(ctx context.Context, repo Repository, governing *RepositoryPolicy, candidate string) (*RepositoryPolicy, error) {
	if governing == nil || governing.ReadFrom != ReadFromBase || governing.Ref.Commit == candidate {
		return nil, nil
	}
	p, err := readPolicyAt(ctx, repo, candidate)
	if err != nil || p == nil {
		return nil, err
	}
	p.ReadFrom = ReadFromWorkingTree
	return p, nil
}

func readPolicyAt(ctx context.Context, repo Repository, commit string) (*RepositoryPolicy, error) {
	file := fmt.Sprintf("%s@%s", policy.RepoPolicyPath, objectid.Short(commit))
	fail := func(format string, args ...any) error {
		return rmerr.New(rmerr.VerifyManifest, format, args...).At(file, 0).
			WithHint("make %s a regular file in the repository; unreadable is never read as \"no checks\"", policy.RepoPolicyPath)
	}
	// A symlinked or non-directory .runmill would redirect the policy
	// anywhere; it is refused, not followed.
	dir, err := kindAt(ctx, repo, commit, ".runmill")
	if err != nil {
		return nil, rmerr.Wrap(rmerr.VerifyManifest, err, "reading .runmill").At(file, 0)
	}
	switch dir {
	case Missing:
		return nil, nil
	case Directory:
	default:
		return nil, fail(".runmill is a %s, not a directory", dir)
	}
	kind, err := kindAt(ctx, repo, commit, policy.RepoPolicyPath)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.VerifyManifest, err, "reading the manifest").At(file, 0)
	}
	switch kind {
	case Missing:
		return nil, nil
	case Regular:
	default:
		return nil, fail("the manifest is a %s, not a regular file", kind)
	}
	data, err := repo.ReadAt(ctx, commit, policy.RepoPolicyPath, policy.MaxBytes)
	if err != nil {
		return nil, rmerr.Wrap(rmerr.VerifyManifest, err, "reading the manifest").At(file, 0).
			WithHint("keep %s under %d bytes", policy.RepoPolicyPath, policy.MaxBytes)
	}
	doc, err := policy.ParseRepository(data, file)
	if err != nil {
		return nil, err
	}
	return &RepositoryPolicy{Doc: doc.Value, Ref: PolicyRef{Path: policy.RepoPolicyPath, Commit: commit, Digest: doc.Digest}}, nil
}

// Bounds on an agent proposal list.
const (
	MaxProposals     = 1000
	MaxProposalBytes = 64 << 10
)

// ParseProposals reads an agent proposal list: one check id per line, blank
// lines and # comments ignored. Ids must follow the check id grammar, so a
// proposal can never carry shell text. Errors are RM-POLICY-002 and name the
// line.
func ParseProposals(r io.Reader, name string) ([]string, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxProposalBytes+1))
	if err != nil {
		return nil, rmerr.Wrap(rmerr.PolicyProposals, err, "reading agent proposals").At(name, 0)
	}
	if len(data) > MaxProposalBytes {
		return nil, rmerr.New(rmerr.PolicyProposals, "proposal list is larger than %d bytes", MaxProposalBytes).At(name, 0).
			WithHint("propose at most %d check ids, one per line", MaxProposals)
	}
	var ids []string
	var errs rmerr.List
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 0, 4096), MaxProposalBytes+1)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if !policy.ValidID(s) {
			if len(errs) < 20 {
				errs = append(errs, rmerr.New(rmerr.PolicyProposals, "invalid check id %q", truncate(s, 80)).At(name, line).
					WithHint("a proposal is a configured check id (letters, digits, '.', '_', '-'), never a command"))
			}
			continue
		}
		ids = append(ids, s)
		if len(ids) > MaxProposals {
			return nil, rmerr.New(rmerr.PolicyProposals, "more than %d proposals", MaxProposals).At(name, line).
				WithHint("propose only the configured check ids the change needs")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, rmerr.Wrap(rmerr.PolicyProposals, err, "reading agent proposals").At(name, line)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return ids, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
