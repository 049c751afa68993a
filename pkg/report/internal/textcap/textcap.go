// Package textcap keeps a text that arrives in pieces within a bound: the
// first Max bytes, and once it outgrows them the SHA-256 of all of it, so a
// report's memory is bounded by its fields while a note still pins the full
// text. It is the one such buffer of pkg/report: the JUnit scanner's
// attribute values and element text, TAP's diagnostics and YAML messages,
// go test -json's output.
package textcap

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/digest"
)

// Field keeps the first Max bytes of one text (an attribute value, an
// element's text, a diagnostic) and, once the text outgrows them, the
// SHA-256 of all of it. Max is the report's Limits.MaxField.
type Field struct {
	Max int       // bytes kept
	Buf []byte    // the kept prefix (cut anywhere: Text ends it on a rune)
	N   int64     // length of the full text
	H   hash.Hash // non-nil once the text was cut
	Set bool      // the attribute is present / the text was written
}

// Reset empties the field for the next text.
func (f *Field) Reset() {
	f.Buf, f.N, f.H, f.Set = f.Buf[:0], 0, nil, false
}

// Write appends p to the text.
func (f *Field) Write(p []byte) {
	f.N += int64(len(p))
	if f.H != nil {
		f.H.Write(p)
		return
	}
	room := f.Max - len(f.Buf)
	if len(p) <= room {
		f.Buf = append(f.Buf, p...)
		return
	}
	f.H = sha256.New()
	f.H.Write(f.Buf)
	f.H.Write(p)
	f.Buf = append(f.Buf, p[:room]...)
}

// Cut reports whether the text outgrew Max.
func (f *Field) Cut() bool { return f.H != nil }

// Text is what is kept, ending on a rune boundary so a cut never leaves half
// a character behind.
func (f *Field) Text() []byte {
	if f.H == nil {
		return f.Buf
	}
	b := f.Buf
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				b = b[:i]
			}
			break
		}
	}
	return b
}

// Sum is the SHA-256 of the whole text, in hex.
func (f *Field) Sum() string {
	if f.H == nil {
		return digest.Hex(f.Buf)
	}
	return hex.EncodeToString(f.H.Sum(nil))
}

// MoveTo hands the field (and its hash state) to dst and empties f.
func (f *Field) MoveTo(dst *Field) {
	dst.Buf = append(dst.Buf[:0], f.Buf...)
	dst.N, dst.H, dst.Set = f.N, f.H, f.Set
	f.H = nil
}
