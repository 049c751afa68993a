// Package printable makes repository-derived text safe to show a person: a
// file name, a test id or a failure message written by a check is untrusted,
// and printed raw it can move the cursor, rewrite the verdict line of a
// terminal (ANSI escapes), or start a line that GitHub Actions reads as a
// workflow command (`::error::…`, `::add-mask::…`). Every place runmill shows
// such text calls Text or FirstLine, so there is one escaping rule.
//
// The rule: every control character (C0, DEL, C1), including newline and
// carriage return, becomes a Go-style escape (\n, \r, \t, \x1b, \u0085), as
// do invalid UTF-8 bytes (\xff) and the Unicode line and paragraph
// separators; a leading "::" becomes "\x3a:". The result is one line, so the
// only line start it can make is its own first byte. Text is cut, never
// inside a character or an escape, to at most max bytes, "…" included.
package printable

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Text escapes s as described in the package comment and bounds it to max
// bytes of output (max ≤ 0: unbounded).
func Text(s string, max int) string {
	var b strings.Builder
	var ends []int // where each piece ends: a cut never splits an escape
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		var piece string
		switch {
		case r == utf8.RuneError && n == 1:
			piece = fmt.Sprintf(`\x%02x`, s[i])
		case i == 0 && strings.HasPrefix(s, "::"):
			piece = `\x3a`
		case r == '\n':
			piece = `\n`
		case r == '\r':
			piece = `\r`
		case r == '\t':
			piece = `\t`
		case r < 0x20 || r == 0x7f:
			piece = fmt.Sprintf(`\x%02x`, r)
		case r >= 0x80 && r < 0xa0, r == 0x2028, r == 0x2029:
			piece = fmt.Sprintf(`\u%04x`, r)
		default:
			piece = s[i : i+n]
		}
		if max > 0 && b.Len()+len(piece) > max {
			// Cut at a piece boundary so that "…" fits in max too.
			out := b.String()
			for len(ends) > 0 && ends[len(ends)-1]+len(ellipsis) > max {
				ends = ends[:len(ends)-1]
			}
			cut := 0
			if len(ends) > 0 {
				cut = ends[len(ends)-1]
			}
			if len(ellipsis) > max {
				return out[:cut]
			}
			return out[:cut] + ellipsis
		}
		b.WriteString(piece)
		ends = append(ends, b.Len())
		i += n
	}
	return b.String()
}

const ellipsis = "…"

// FirstLine returns the first line of s that holds more than white space,
// trimmed, tabs as spaces, escaped by Text and bounded to max bytes: how a
// finding quotes a failure message.
func FirstLine(s string, max int) string {
	for line := range strings.Lines(s) {
		if t := strings.TrimSpace(line); t != "" {
			return Text(strings.ReplaceAll(t, "\t", " "), max)
		}
	}
	return ""
}

// Plural counts n things for a message: "1 check", "0 checks", "3 checks".
// The caller names both forms because English plurals are not regular
// enough to derive ("1 entry", "2 entries").
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Bytes says n bytes in binary units for a message: "512 B", "1.5 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Days says a retention period for a message: whole days ("14 days"), or
// hours below a day ("1 hour", "6 hours").
func Days(d time.Duration) string {
	if d < 24*time.Hour {
		return Plural(int(d.Hours()), "hour", "hours")
	}
	return Plural(int(d.Hours()/24), "day", "days")
}
