//go:build unix

package evidence

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// store is an open content-addressed artifacts directory. Every lookup goes
// through openat(2) from directory descriptors opened with O_NOFOLLOW, so
// neither the sha256 directory nor an artifact may be a symlink, and no
// address can name a path outside the store (the address grammar admits no
// separator or dot either).
type store struct {
	root, sub int
}

func openStore(dir string) (*store, error) {
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	sub, err := unix.Openat(root, artifactSub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(root)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil, fmt.Errorf("%s/%s is not a directory (symlinks are refused)", dir, artifactSub)
		}
		return nil, fmt.Errorf("%s/%s: %w", dir, artifactSub, err)
	}
	return &store{root: root, sub: sub}, nil
}

func (s *store) close() {
	unix.Close(s.sub)
	unix.Close(s.root)
}

// open opens the body of addr (an address the caller validated) and checks
// it is a regular file of exactly size bytes. O_NOFOLLOW refuses a symlink;
// O_NONBLOCK keeps a planted FIFO from blocking the open and does not affect
// reads of a regular file.
func (s *store) open(addr string, size int64) (*os.File, error) {
	name, _ := ArtifactHex(addr)
	fd, err := unix.Openat(s.sub, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, errors.New("is a symlink (refused)")
	case errors.Is(err, unix.ENOENT):
		return nil, errors.New("absent")
	case err != nil:
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, errNotRegular
	}
	if st.Size != size {
		f.Close()
		return nil, &sizeError{got: st.Size, want: size}
	}
	return f, nil
}

// errNotRegular and sizeError are open's refusals, which verify and read
// word differently.
var errNotRegular = errors.New("is not a regular file")

type sizeError struct{ got, want int64 }

func (e *sizeError) Error() string {
	return fmt.Sprintf("has %d bytes, the statement claims %d", e.got, e.want)
}

// verify hashes the artifact at addr, which must be a regular file of
// exactly size bytes.
func (s *store) verify(addr string, size int64, buf []byte) error {
	f, err := s.open(addr, size)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, io.LimitReader(f, size), buf)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("shrank while it was read (%d of %d bytes)", n, size)
	}
	if m, _ := f.Read(buf[:1]); m != 0 {
		return errors.New("grew while it was read")
	}
	if !hashMatches(h.Sum(nil), addr) {
		return errors.New("its bytes do not hash to its address")
	}
	return nil
}

// read returns the bytes of the artifact at addr after the same checks as
// verify (a regular file of exactly size bytes hashing to its address); the
// caller bounds size.
func (s *store) read(addr string, size int64) ([]byte, error) {
	f, err := s.open(addr, size)
	var sizeErr *sizeError
	if errors.Is(err, errNotRegular) || errors.As(err, &sizeErr) {
		return nil, fmt.Errorf("is not a regular file of the claimed %d bytes", size)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, size+1))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	if int64(len(b)) != size || !hashMatches(sum[:], addr) {
		return nil, errors.New("its bytes do not hash to its address")
	}
	return b, nil
}
