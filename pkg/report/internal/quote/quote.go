// Package quote is how pkg/report shows a piece of a report in an error or
// a note, bounded, so a hostile report cannot make a finding of any size.
package quote

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Max bounds the report text one error or note quotes (issue #13: a
// 1 MB number was once echoed whole into a finding).
const Max = 200

// Text shows a piece of report text in an error message: Go-quoted, so
// control characters and invalid UTF-8 are escaped (\xff), and cut at
// Max bytes of input, with the full length named.
func Text(b []byte) string { return String(string(b)) }

// String is Text for a string.
func String(s string) string {
	if len(s) <= Max {
		return strconv.Quote(s)
	}
	n := Max
	// Step back over at most one split character; invalid bytes need not.
	for i := 0; i < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	if !utf8.RuneStart(s[n]) {
		n = Max
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:n]), len(s))
}
