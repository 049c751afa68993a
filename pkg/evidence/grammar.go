package evidence

import (
	"encoding/json"
	"reflect"
	"strings"
)

// Value grammars of the evidence formats. Every digest, commit and content
// address has exactly one spelling: lower-case hex of a fixed length.

// isLowerHex reports whether s is n lower-case hex digits.
func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// isCommit: a git object id, SHA-1 (40) or SHA-256 (64) repositories.
func isCommit(s string) bool { return isLowerHex(s, 40) || isLowerHex(s, 64) }

// isDigest: "sha256:<64 lower-case hex>" (tree, policy and canonical digests).
func isDigest(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	return ok && isLowerHex(h, 64)
}

// ArtifactPrefix starts every content address.
const ArtifactPrefix = "sha256/"

// isArtifact: a content address "sha256/<64 lower-case hex>", which is also
// the artifact's path below the artifacts directory. The grammar admits no
// separator, dot or upper-case letter, so no address can climb out of the
// directory or name one file two ways.
func isArtifact(s string) bool {
	h, ok := strings.CutPrefix(s, ArtifactPrefix)
	return ok && isLowerHex(h, 64)
}

// ArtifactAddress returns the content address of bytes whose lower-case hex
// SHA-256 is hexSum.
func ArtifactAddress(hexSum string) string { return ArtifactPrefix + hexSum }

var rawMessage = reflect.TypeFor[json.RawMessage]()

// fillNilSlices replaces nil slices in required (non-omitempty) fields of
// the struct v points to — at any depth — with empty ones, and nil required
// json.RawMessage objects with {}, so json.Marshal writes [] and {} rather
// than null, which the strict decoder refuses.
func fillNilSlices(v any) {
	fill(reflect.ValueOf(v).Elem())
}

func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			fill(v.Elem())
		}
	case reflect.Slice:
		switch v.Type().Elem().Kind() {
		case reflect.Struct, reflect.Pointer, reflect.Slice:
		default:
			return // strings and numbers hold no slices (1 M test ids)
		}
		for i := 0; i < v.Len(); i++ {
			fill(v.Index(i))
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			fv := v.Field(i)
			tag := sf.Tag.Get("json")
			optional := strings.Contains(tag, ",omitempty") || strings.Contains(tag, ",omitzero")
			if fv.Kind() == reflect.Slice && fv.IsNil() && !optional {
				if sf.Type == rawMessage {
					fv.Set(reflect.ValueOf(json.RawMessage("{}")))
				} else {
					fv.Set(reflect.MakeSlice(sf.Type, 0, 0))
				}
				continue
			}
			if sf.Type != rawMessage {
				fill(fv)
			}
		}
	}
}
