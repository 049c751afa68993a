package git

import (
	"bytes"
	"testing"
)

// FuzzRenameParser: git's rename listing arrives in arbitrary chunks; the
// parser never panics, keeps within its bounds, and reads the same records
// however the stream is cut.
func FuzzRenameParser(f *testing.F) {
	f.Add([]byte("R100\x00a/f.py\x00b/f.py\x00R087\x00x\x00y\x00"), uint8(3))
	f.Add([]byte("R100\x00a\x00"), uint8(1))
	f.Add([]byte("M\x00a\x00b\x00"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		whole := &renameParser{max: 5, maxBytes: 64}
		_, _ = whole.Write(data)
		werr := whole.finish()
		parts := &renameParser{max: 5, maxBytes: 64}
		step := int(cut)%7 + 1
		for rest := data; len(rest) > 0; {
			n := min(step, len(rest))
			if _, err := parts.Write(rest[:n]); err != nil {
				break
			}
			rest = rest[n:]
		}
		perr := parts.finish()
		if (werr == nil) != (perr == nil) || len(whole.out) != len(parts.out) || whole.truncated != parts.truncated {
			t.Fatalf("whole %+v (%v), in chunks of %d %+v (%v)", whole.out, werr, step, parts.out, perr)
		}
		var size int64
		for i, r := range whole.out {
			if r != parts.out[i] || r.From == "" || r.To == "" || r.Similarity < 0 || r.Similarity > 100 ||
				bytes.ContainsRune([]byte(r.From+r.To), 0) {
				t.Fatalf("record %d: %+v / %+v", i, r, parts.out[i])
			}
			size += int64(len(r.From) + len(r.To))
		}
		if len(whole.out) > 5 || size > 64 {
			t.Fatalf("bounds broken: %d records, %d bytes", len(whole.out), size)
		}
	})
}
