package bounded

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// ErrNotRegular matches (errors.Is) the NotRegularError of OpenRegular and
// ReadFile.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError says a path names something other than a regular file.
type NotRegularError struct {
	Path string
	Mode os.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is a %s, not a regular file", e.Path, KindName(e.Mode))
}

func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// OpenRegular opens path for reading, following symlinks as os.Open does,
// only if it names a regular file; anything else is a *NotRegularError,
// refused without ever being opened for I/O. An open of a FIFO waits for a
// writer that may never come — a FIFO planted where runmill reads a file
// of the state directory or a repository held the run in open(2), deaf to
// SIGTERM (issue #23) — and an open of a device may act on it. The path is
// first opened O_PATH, which neither waits nor acts, and only a regular
// file is then reopened through that descriptor (/proc/self/fd), so the
// file checked is the file read even if the path is replaced meanwhile.
func OpenRegular(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	pinned := os.NewFile(uintptr(fd), path)
	defer pinned.Close()
	fi, err := pinned.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(rfd), path), nil
}

// KindName names a file's type for a message ("named pipe", "directory").
func KindName(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&os.ModeSymlink != 0:
		return "symlink"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
