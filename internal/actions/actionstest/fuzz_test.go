package actionstest

import (
	"strings"
	"testing"
)

func TestParseFileCommands(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]string
		bad      bool
	}{
		{"plain", "a=1\nb=x=y\n", map[string]string{"a": "1", "b": "x=y"}, false},
		{"heredoc", "v<<EOF\nline 1\nline 2\nEOF\n", map[string]string{"v": "line 1\nline 2"}, false},
		{"heredoc then plain", "v<<D\nx\nD\nw=2\n", map[string]string{"v": "x", "w": "2"}, false},
		{"later wins", "a=1\na=2\n", map[string]string{"a": "2"}, false},
		{"crlf", "a=1\r\nb<<D\r\nx\r\nD\r\n", map[string]string{"a": "1", "b": "x"}, false},
		{"unclosed", "v<<EOF\nx\n", nil, true},
		{"no separator", "garbage\n", nil, true},
		{"equals before heredoc marker", "a=b<<c\n", map[string]string{"a": "b<<c"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFileCommands(tc.in)
			if (err != nil) != tc.bad {
				t.Fatalf("error %v, want error %v", err, tc.bad)
			}
			if tc.bad {
				return
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// FuzzParseFileCommands: the parser never panics, and what it accepts
// round-trips through the heredoc form runmill writes (a value is never
// longer than the input).
func FuzzParseFileCommands(f *testing.F) {
	f.Add("a=1\nv<<EOF\nx\nEOF\n")
	f.Add("v<<_GitHubActionsFileCommandDelimeter_\nx\n_GitHubActionsFileCommandDelimeter_\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseFileCommands(in)
		if err != nil {
			return
		}
		for k, v := range got {
			if k == "" || strings.Contains(k, "\n") || len(v) > len(in) {
				t.Fatalf("accepted %q as %q=%q", in, k, v)
			}
		}
	})
}
