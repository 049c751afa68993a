package report

import (
	"bytes"
	"fmt"

	"github.com/runmill/verify/pkg/report/internal/quote"
	"github.com/runmill/verify/pkg/report/internal/textcap"
)

// What the JUnit builder reads from attributes: which ones (numbered for
// xmlscan), and how a line, a count, a file and a status are read.

// The attributes the JUnit builder reads, numbered for xmlscan.Config.Attr:
// values of all other attributes are checked and dropped unread, so what one
// element costs in memory is bounded by jaCount fields of Limits.MaxField
// each.
const (
	jaNone = iota - 1
	jaName
	jaClassname
	jaFile
	jaLine
	jaStatus
	jaMessage
	jaTests
	jaFailures
	jaErrors
	jaSkipped
	jaType
	jaCount
)

// attrOf numbers an attribute name, or returns jaNone.
func attrOf(name []byte) int {
	switch string(name) {
	case "name":
		return jaName
	case "classname":
		return jaClassname
	case "file":
		return jaFile
	case "line":
		return jaLine
	case "status":
		return jaStatus
	case "message":
		return jaMessage
	case "tests":
		return jaTests
	case "failures":
		return jaFailures
	case "errors":
		return jaErrors
	case "skipped":
		return jaSkipped
	case "type":
		return jaType
	}
	return jaNone
}

// jbLine reads a line attribute; anything but a positive number below 2^28
// is no line.
func jbLine(v []byte) int32 {
	n := jbUint(v)
	if n <= 0 || n > jbLineMask {
		return 0
	}
	return int32(n)
}

// jbUint reads a decimal count, or -1. It does not allocate: it runs for
// every testcase.
func jbUint(v []byte) int64 {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || len(v) > 18 {
		return -1
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

func (b *junitBuilder) internFile(f *textcap.Field, id string) int32 {
	if f.Cut() {
		b.notes = append(b.notes, fmt.Sprintf("file of test %s cut at %d of %d bytes (Limits.MaxField); SHA-256 of the full text: %s", quote.String(id), len(f.Text()), f.N, f.Sum()))
	}
	if i, ok := b.fileIdx[string(f.Text())]; ok {
		return i
	}
	i := int32(len(b.files))
	s := string(f.Text())
	b.files = append(b.files, s)
	b.fileIdx[s] = i
	return i
}

var jbStatusWords = [...]struct {
	word  string
	flags int
}{
	{"run", 0}, {"passed", 0}, {"pass", 0}, {"success", 0}, {"ok", 0}, {"", 0},
	{"disabled", jfStatusSkip}, {"skipped", jfStatusSkip}, {"ignored", jfStatusSkip},
	{"notrun", jfStatusSkip}, {"notrunnable", jfStatusSkip}, {"inconclusive", jfStatusSkip},
	{"failed", jfStatusFail}, {"fail", jfStatusFail}, {"failure", jfStatusFail},
	{"error", jfStatusError}, {"errored", jfStatusError},
}

func (b *junitBuilder) statusFlags(v []byte) int {
	w := bytes.TrimSpace(v)
	for _, s := range jbStatusWords {
		if len(s.word) == len(w) && bytes.EqualFold([]byte(s.word), w) {
			return s.flags
		}
	}
	if b.statusSeen == nil {
		b.statusSeen = map[string]int{}
	}
	if n, ok := b.statusSeen[string(v)]; ok {
		b.statusSeen[string(v)] = n + 1
	} else if len(b.statusList) < 16 {
		b.statusSeen[string(v)] = 1
		b.statusList = append(b.statusList, string(v))
	}
	return 0
}
