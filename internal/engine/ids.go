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

// short12 is a commit's (or blob's) first 12 hex digits, for messages.
func short12(commit string) string { return commit[:min(12, len(commit))] }
