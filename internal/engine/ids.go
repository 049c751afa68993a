package engine

import (
	"path/filepath"
	"time"

	"github.com/runmill/verify/internal/fsname"
)

// newRunID names a run by when it started (runIDLayout) and four random
// bytes: ids sort by time and two runs of one second do not collide.
func newRunID(t time.Time) string {
	return t.UTC().Format("20060102T150405Z") + "-" + fsname.Random(4)
}

func repoName(flag, dir string) string {
	if flag != "" {
		return flag
	}
	return filepath.Base(dir)
}
