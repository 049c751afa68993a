package engine

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// selfDigest names the running runmill binary by the SHA-256 of its bytes
// (/proc/self/exe, the file the kernel runs, whatever path it was started
// by), computed once per process. It joins the reuse identity: a version
// string and a VCS revision are stamped by whoever builds, and two builds
// that carry the same ones (a source build stamped from a ref, a build
// without .git) may still differ in code; their input keys must not match.
// When the binary cannot be read the identity is random, so this process
// reuses nothing and lends nothing rather than risk sharing keys.
var selfDigest = sync.OnceValue(func() string {
	if d, err := hashFile("/proc/self/exe"); err == nil {
		return "exe=" + d
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "exe=unreadable-" + hex.EncodeToString(b)
})
