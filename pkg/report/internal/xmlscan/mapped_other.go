//go:build !unix

package xmlscan

import "io"

// mapping is never used where mmap(2) is not: the scanner reads.
type mapping struct{}

const releaseStep = 4 << 20

func mapFile(io.Reader, int64) (*mapping, []byte) { return nil, nil }

func (*mapping) release(int) {}

func (*mapping) contains(uintptr) bool { return false }

func (*mapping) close() {}
