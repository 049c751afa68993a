package printable_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/runmill/verify/pkg/printable"
)

func TestText(t *testing.T) {
	for _, c := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"plain", "example.com/shop/cart::TestTotal", 0, "example.com/shop/cart::TestTotal"},
		{"workflow command at start", "::error::INJ", 0, `\x3a:error::INJ`},
		{"workflow command after newline", "x\n::error::INJ", 0, `x\n::error::INJ`},
		{"ansi", "\x1b[2K\x1b[1AMERGE-READY", 0, `\x1b[2K\x1b[1AMERGE-READY`},
		{"cr", "ok\rFAIL", 0, `ok\rFAIL`},
		{"c1 and separators", "a\u0085b\u2028c", 0, `a\u0085b\u2028c`},
		{"invalid utf-8", "a\xffb", 0, `a\xffb`},
		{"unicode kept", "ℹ tests 3 ✔", 0, "ℹ tests 3 ✔"},
		{"bounded", strings.Repeat("x", 50), 10, "xxxxxxx…"},
		{"bounded at rune", "ééééé", 7, "éé…"},
		{"bounded escape not split", "abcd\x1b", 7, "abcd…"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := printable.Text(c.in, c.max)
			if got != c.want {
				t.Errorf("Text(%q, %d) = %q; want %q", c.in, c.max, got, c.want)
			}
		})
	}
}

func TestFirstLine(t *testing.T) {
	if got := printable.FirstLine("\n  \n  got 1, want 2  \nsecond", 100); got != "got 1, want 2" {
		t.Errorf("FirstLine = %q", got)
	}
	if got := printable.FirstLine("", 100); got != "" {
		t.Errorf("FirstLine of nothing = %q", got)
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"", "::x", "a\nb", "\x1b[1m", "\xff\xfe", "é"} {
		f.Add(s, 8)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = max % 4096
		got := printable.Text(s, max)
		if !utf8.ValidString(got) {
			t.Fatalf("not valid UTF-8: %q", got)
		}
		if strings.HasPrefix(got, "::") {
			t.Fatalf("starts a workflow command: %q", got)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 {
				t.Fatalf("control character %U kept in %q", r, got)
			}
		}
		if max > 0 && len(got) > max {
			t.Fatalf("len %d over max %d", len(got), max)
		}
	})
}

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 entries"}, {1, "1 entry"}, {2, "2 entries"}, {-1, "-1 entries"}} {
		if got := printable.Plural(c.n, "entry", "entries"); got != c.want {
			t.Errorf("Plural(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestBytesAndDays(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {10 << 30, "10.0 GiB"}, {3 << 40, "3.0 TiB"}} {
		if got := printable.Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{time.Hour, "1 hour"}, {6 * time.Hour, "6 hours"}, {24 * time.Hour, "1 day"}, {14 * 24 * time.Hour, "14 days"}} {
		if got := printable.Days(c.d); got != c.want {
			t.Errorf("Days(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
