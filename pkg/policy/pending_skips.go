package policy

import "github.com/runmill/verify/pkg/rmerr"

// INTEGRATE: replaced by ValidateDeclaredSkips (skips.go).
func validateSkipsPending(hasReport bool, skips []DeclaredSkip) []*rmerr.Error { return nil }
