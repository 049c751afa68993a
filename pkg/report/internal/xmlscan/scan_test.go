package xmlscan

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// oracleChar is XML 1.0's Char production, written from the spec apart
// from isChar.
func oracleChar(r int64) bool {
	return r == 0x9 || r == 0xA || r == 0xD || 0x20 <= r && r <= 0xD7FF ||
		0xE000 <= r && r <= 0xFFFD || 0x10000 <= r && r <= 0x10FFFF
}

// TestValidate compares the word-at-a-time validator with a rune-by-rune
// reading of the same rule at every split of a buffer, as fill meets it.
func TestValidate(t *testing.T) {
	inputs := []string{
		"plain ascii text, long enough for several words\n\t\r",
		"héllo wörld 日本語 \U0001F600 end",
		"bad \x01 control", "bad \x7f del is fine", "\xEF\xBF\xBE nonchar", "\xED\xA0\x80 surrogate",
		"\xC0\xAF overlong", "cut \xE6\x97", "\xF4\x90\x80\x80 too big", "ok\xEF\xBF\xBD",
	}
	for _, in := range inputs {
		want := -1
		for i := 0; i < len(in); {
			r, n := utf8.DecodeRuneInString(in[i:])
			if r == utf8.RuneError && n == 1 || !oracleChar(int64(r)) {
				want = i
				break
			}
			i += n
		}
		for split := 0; split <= len(in); split++ {
			ok, bad := validate([]byte(in[:split]), false, false)
			if bad < 0 {
				ok2, bad2 := validate([]byte(in[ok:]), true, false)
				if bad2 >= 0 {
					bad = ok + bad2
				} else if ok+ok2 != len(in) {
					t.Fatalf("%q split %d: validated %d+%d of %d", in, split, ok, ok2, len(in))
				}
			}
			if bad != want {
				t.Fatalf("%q split %d: bad at %d, want %d", in, split, bad, want)
			}
		}
	}
	if _, bad := validate([]byte("abc\xC3\xA9"), true, true); bad != 3 {
		t.Fatalf("US-ASCII: bad at %d, want 3", bad)
	}
}

// TestStopsSkip holds the word-at-a-time skip to a byte-by-byte reading of
// the same stop set: every stop byte and its neighbours (a borrow flags the
// lane above a stop, '\r'+1 and '<'+1 among them) at every offset of
// buffers around the word size.
func TestStopsSkip(t *testing.T) {
	for _, st := range []*stops{stopText, stopCDATA, stopAttrQ, stopAttrA} {
		var probes []byte
		for c := range 256 {
			if st.tab[c] {
				probes = append(probes, byte(c), byte(c+1), byte(c-1))
			}
		}
		probes = append(probes, 0x80, 0xFF, 0x01, 'a')
		for n := range 25 {
			for at := range n {
				for _, c := range probes {
					for _, fill := range []byte{'a', 0x01, 0x80, 0x0E, 0x3D} {
						p := make([]byte, n)
						for i := range p {
							p[i] = fill
						}
						p[at] = c
						want := 0
						for want < len(p) && !st.tab[p[want]] {
							want++
						}
						if got := st.skip(p); got != want {
							t.Fatalf("skip(%q) = %d, want %d", p, got, want)
						}
					}
				}
			}
		}
		// Several stops and neighbours together.
		rng := rand.New(rand.NewPCG(1, 2))
		for range 20000 {
			p := make([]byte, rng.IntN(40))
			for i := range p {
				p[i] = probes[rng.IntN(len(probes))]
				if rng.IntN(3) > 0 {
					p[i] = 'a'
				}
			}
			want := 0
			for want < len(p) && !st.tab[p[want]] {
				want++
			}
			if got := st.skip(p); got != want {
				t.Fatalf("skip(%q) = %d, want %d", p, got, want)
			}
		}
	}
}

// TestASCIIWithBreaks holds the word test to a byte-by-byte reading: every
// byte value in every lane, among neighbours that are tabs, line ends,
// spaces or letters.
func TestASCIIWithBreaks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	fill := []byte{'\t', '\n', '\r', ' ', 'a', 0x7F}
	for lane := range 8 {
		for c := range 256 {
			for range 8 {
				var p [8]byte
				for i := range p {
					p[i] = fill[rng.IntN(len(fill))]
				}
				p[lane] = byte(c)
				want := true
				for _, b := range p {
					want = want && b < 0x80 && (b >= 0x20 || b == '\t' || b == '\n' || b == '\r')
				}
				if got := asciiWithBreaks(binary.LittleEndian.Uint64(p[:])); got != want {
					t.Fatalf("asciiWithBreaks(%q) = %v, want %v", p, got, want)
				}
			}
		}
	}
}
