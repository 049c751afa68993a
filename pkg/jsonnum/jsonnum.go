// Package jsonnum holds the one RFC 8259 number scanner of runmill's
// hand-written JSON decoders (pkg/report's go test -json events, pkg/evidence's
// strict and canonical readers). It is public plumbing, not a domain package,
// because those decoders live in two pkg/ packages and pkg/ never imports
// internal/; it imports nothing but the language.
package jsonnum

// End returns the end of the RFC 8259 number starting at b[i] (an optional
// '-', an integer part without leading zeros, an optional fraction and
// exponent, each with at least one digit), or -1 when there is none. It
// does not look at what follows.
func End(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
