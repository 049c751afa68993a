package git_test

import (
	"github.com/runmill/verify/internal/git"
	"github.com/runmill/verify/pkg/discovery"
)

// Discovery reads policy through git without git importing Discovery: the
// assertion lives in a test so only the test binary has the import.
var _ discovery.Repository = (*git.Repo)(nil)
