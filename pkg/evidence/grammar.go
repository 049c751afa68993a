package evidence

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/runmill/verify/pkg/digest"
	"github.com/runmill/verify/pkg/objectid"
)

// Value grammars of the evidence formats. Every digest, commit and content
// address has exactly one spelling: lower-case hex of a fixed length.

// isCommit: a git object id, SHA-1 (40) or SHA-256 (64) repositories.
func isCommit(s string) bool { return objectid.Valid(s) }

// isDigest: "sha256:<64 lower-case hex>" (tree, policy and canonical digests).
func isDigest(s string) bool {
	h, ok := strings.CutPrefix(s, digest.Prefix)
	return ok && digest.LowerHex(h, 64)
}

// The content-addressed store: the one place that knows its layout. An
// artifact's address "sha256/<64 lower-case hex>" is also its path below
// the artifacts directory, so the bodies live in one directory, artifactSub.
const (
	artifactSub = "sha256"
	// ArtifactPrefix starts every content address.
	ArtifactPrefix = artifactSub + "/"
)

// isArtifact: a content address "sha256/<64 lower-case hex>". The grammar
// admits no separator, dot or upper-case letter, so no address can climb
// out of the directory or name one file two ways.
func isArtifact(s string) bool {
	_, ok := ArtifactHex(s)
	return ok
}

// IsArtifactAddress reports whether s is a content address in the one form
// the store writes.
func IsArtifactAddress(s string) bool { return isArtifact(s) }

// ArtifactAddress returns the content address of bytes whose lower-case hex
// SHA-256 is hexSum.
func ArtifactAddress(hexSum string) string { return ArtifactPrefix + hexSum }

// ArtifactHex returns the hex SHA-256 an address names, and false for
// anything that is not an address.
func ArtifactHex(addr string) (string, bool) {
	h, ok := strings.CutPrefix(addr, ArtifactPrefix)
	return h, ok && digest.LowerHex(h, 64)
}

// ArtifactPath is where the body of addr lives below the artifacts
// directory dir; false for anything that is not an address (it then names
// no path at all, so nothing outside dir is ever opened).
func ArtifactPath(dir, addr string) (string, bool) {
	h, ok := ArtifactHex(addr)
	if !ok {
		return "", false
	}
	return filepath.Join(dir, artifactSub, h), true
}

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
