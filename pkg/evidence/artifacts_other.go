//go:build !unix

package evidence

import "errors"

// store is not implemented where openat(2) with O_NOFOLLOW is not available:
// re-hashing without those guarantees would follow symlinks.
type store struct{}

func openStore(string) (*store, error) {
	return nil, errors.New("re-hashing artifacts needs a Unix system (openat with O_NOFOLLOW)")
}

func (*store) close() {}

func (*store) verify(string, int64, []byte) error { return errors.New("unsupported") }

func (*store) read(string, int64) ([]byte, error) { return nil, errors.New("unsupported") }
