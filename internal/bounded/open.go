package bounded

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// ErrNotRegular is OpenRegular's (and ReadFile's) refusal of anything but
// a regular file.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens path for reading only when it is a regular file, and
// never blocks or acts on anything else: a symlink as the last component,
// a FIFO, a device or a socket is refused (ErrNotRegular, naming what it
// is) without being opened for I/O. An open of a FIFO waits for a writer
// that may never come — a FIFO planted where runmill reads a file of the
// state directory or a repository held the run in open(2), deaf to SIGTERM
// (issue #23) — and an open of a device may act on it, O_NONBLOCK or not.
// The path is first opened O_PATH|O_NOFOLLOW, which neither waits nor
// acts; only a regular file is then reopened, through that descriptor
// (/proc/self/fd, which runmill needs mounted anyway), so the file checked
// is the file read. It returns the file and what fstat says of it.
func OpenRegular(path string) (*os.File, os.FileInfo, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	pinned := os.NewFile(uintptr(fd), path)
	defer pinned.Close()
	fi, err := pinned.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is a %s, %w", path, KindName(fi.Mode()), ErrNotRegular)
	}
	rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(rfd), path), fi, nil
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
