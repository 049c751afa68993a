package actions

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// PR-controlled text (check ids, test names, file paths, messages that quote
// them) reaches the job summary only through text or code below. GitHub
// renders the summary as GitHub-flavoured Markdown with HTML allowed, so
// unescaped text could open a tag, a link or an image, end a table cell or
// fake a heading.

// maxCellRunes bounds one rendered value: a test name of 16 KiB (the report
// parser's field cap) would otherwise fill a table cell.
const maxCellRunes = 400

// text renders s as inline Markdown prose with every ASCII punctuation
// character backslash-escaped (CommonMark allows escaping any of them, and an
// escaped one is always literal: no tag, entity, link, emphasis, or cell
// separator survives), control characters and line breaks as spaces, cut at
// maxCellRunes.
func text(s string) string {
	s = clip(s, maxCellRunes)
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf && (unicode.IsPunct(r) || unicode.IsSymbol(r)):
			b.WriteByte('\\')
			b.WriteRune(r)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// code renders s as an inline code span for a table cell: nothing inside a
// code span is Markdown or HTML, except that a GFM table still splits cells
// on "|", which the table extension lets a backslash escape inside the span.
// The fence is one backtick longer than the longest run inside.
func code(s string) string {
	s = clip(s, maxCellRunes)
	var b strings.Builder
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	for _, r := range s {
		switch {
		case r == '|':
			b.WriteString(`\|`)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	inner := b.String()
	if inner == "" {
		return ""
	}
	fence := strings.Repeat("`", longest+1)
	// A span that starts or ends with a backtick (or a space, which
	// CommonMark would strip) is padded with one space on each side.
	if strings.HasPrefix(inner, "`") || strings.HasSuffix(inner, "`") || strings.HasPrefix(inner, " ") || strings.HasSuffix(inner, " ") {
		inner = " " + inner + " "
	}
	return fence + inner + fence
}

// clip cuts s to at most n runes, marking the cut, and replaces invalid
// UTF-8 so every byte written is valid.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for j := range s {
		if count == n-1 {
			i = j
			break
		}
		count++
	}
	return s[:i] + "…"
}
