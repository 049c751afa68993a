// Package fsname names places on the host's filesystem: whether a path lies
// inside a directory, and unpredictable names for temporary files.
package fsname

import (
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
)

// Within reports whether path is dir or lies below it, lexically (the
// caller resolves symlinks first when they matter).
func Within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsLocal(rel)
}

// Random returns n random bytes as lower-case hex: a temporary name no other
// process guesses.
func Random(n int) string {
	b := make([]byte, n)
	rand.Read(b) // crypto/rand.Read never returns an error (Go 1.24)
	return hex.EncodeToString(b)
}
