package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// errNotRegular is wrapped by openRegular's error for a file that is
// there, but is no regular file.
var errNotRegular = errors.New("not a regular file")

// openRegular opens the file at path for reading, and refuses anything
// but a regular file (after symlinks): a FIFO, a device, a socket or a
// directory, with an error wrapping errNotRegular that does not repeat
// the path. It never blocks: a FIFO with no writer would hold a plain
// open, and the agent with it, forever. The open is non-blocking, the
// check is on the opened file (so it cannot be swapped between the two),
// and a regular file's reads ignore the flag.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		// A socket cannot be opened at all (ENXIO): say what it is.
		if st, serr := os.Stat(path); serr == nil && !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s, %w", fileKind(st.Mode()), errNotRegular)
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s, %w", fileKind(st.Mode()), errNotRegular)
	}
	return f, nil
}

// fileKind names the kind of file mode m is.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "of type " + m.Type().String()
}
