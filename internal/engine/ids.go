package engine

import (
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"time"
)

// newRunID names a run by when it started (runIDLayout) and four random
// bytes: ids sort by time and two runs of one second do not collide.
func newRunID(t time.Time) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

func repoName(flag, dir string) string {
	if flag != "" {
		return flag
	}
	return filepath.Base(dir)
}
