package outcome_test

import (
	"testing"

	"github.com/runmill/verify/internal/golden"
)

// golden compares got, as indented JSON, with testdata/<test name>.golden.json.
func goldenJSON(t *testing.T, got any) { golden.JSON(t, got) }
