package evidence

import "github.com/runmill/verify/pkg/evidence/internal/strictjson"

// Every evidence document (the bundle, its statement, the trust and the
// expectations documents) is decoded by strictjson, whose package comment
// lists the parse rules encoding/json cannot enforce: two different byte
// strings must never mean the same document, nor a verifier and a signer
// disagree about what was signed.

// maxDepth bounds nesting in every evidence document (strictjson.MaxDepth):
// the envelope scan and the canonical checker stop where the decoder does.
const maxDepth = strictjson.MaxDepth

// SchemaError is a document that does not have the shape its type demands:
// Path is the JSON path of the offending value
// ("$.predicate.checks[3].phase"), Offset its byte offset, Msg the reason.
type SchemaError = strictjson.SchemaError

// decodeStrict decodes data into v (a non-nil pointer) under strictjson's
// rules.
func decodeStrict(data []byte, v any) error { return strictjson.Decode(data, v) }
