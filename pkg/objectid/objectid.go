// Package objectid is the one grammar of a git object id (a commit, tree or
// blob name) and its abbreviation, shared by the git plumbing, the
// checkouts, Discovery and the evidence formats.
package objectid

import "github.com/runmill/verify/pkg/digest"

// Valid reports whether s is a full git object id as runmill spells it:
// 40 (SHA-1 repositories) or 64 (SHA-256 repositories) lower-case hex
// digits. git prints ids that way; every other spelling of the same object
// (upper case, abbreviated) is refused so one id names one thing.
func Valid(s string) bool { return digest.LowerHex(s, 40) || digest.LowerHex(s, 64) }

// ShortLen is how many leading characters Short keeps: enough to tell the
// commits of one run apart in a message, and what every message has used.
const ShortLen = 12

// Short abbreviates an id for messages (never for lookups: an abbreviation
// may become ambiguous as a repository grows). Shorter strings are kept as
// they are.
func Short(id string) string { return id[:min(ShortLen, len(id))] }
