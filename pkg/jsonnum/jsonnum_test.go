package jsonnum

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestEnd(t *testing.T) {
	for in, want := range map[string]int{
		"0": 1, "-0": 2, "12": 2, "1.5": 3, "1e9": 3, "1E+9,": 4, "-1.25e-3]": 8, "0123": 1,
		"": -1, "-": -1, "+1": -1, ".5": -1, "1.": -1, "1e": -1, "1e+": -1, "x": -1,
	} {
		if got := End([]byte(in), 0); got != want {
			t.Errorf("End(%q) = %d, want %d", in, got, want)
		}
	}
}

// FuzzEnd holds End to encoding/json: a whole input is a valid number
// exactly when End consumes all of it and encoding/json sees a number.
func FuzzEnd(f *testing.F) {
	for _, s := range []string{"0", "-1.5e+3", "01", "1.", "-", "1e9x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		end := End([]byte(s), 0)
		// JSON allows whitespace around a value; a number alone does not.
		// (Syntax only: 1e700 is a number that no float64 holds.)
		isNumber := json.Valid([]byte(s)) && strings.TrimSpace(s) == s && len(s) > 0 && (s[0] == '-' || s[0] >= '0' && s[0] <= '9')
		if (end == len(s) && len(s) > 0) != isNumber {
			t.Fatalf("End(%q) = %d, encoding/json number: %v", s, end, isNumber)
		}
	})
}
