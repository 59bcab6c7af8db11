package genai

import (
	"io"
	"os"
	"syscall"
)

// sameFile reports whether fi is the file with device dev and inode ino.
func sameFile(fi os.FileInfo, dev, ino uint64) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Dev == dev && st.Ino == ino
}

// bytesReaderAt reads a byte slice as a file.
type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
