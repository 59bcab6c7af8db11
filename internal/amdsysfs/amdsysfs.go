// Package amdsysfs reads what the amdgpu driver and its compute interface,
// KFD, publish in sysfs: the DRM cards and their hwmon sensors, the KFD
// topology and the per-process usage KFD keeps.
//
// Every read goes through an fs.FS rooted at the sysfs mount point
// (os.DirFS("/sys") on a host, os.DirFS("/host/sys") in a container that
// mounts the host's sysfs there, a fixture in tests), so that a test can
// serve any content and any error a real attribute can return (EAGAIN
// from a sensor, say). Reads are bounded: a sysfs attribute is at most a
// page, and a longer file is an error, not a larger buffer. The parsers
// are pure functions over the bytes of one file.
package amdsysfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// MaxFileSize bounds one read: a sysfs attribute is at most one page.
const MaxFileSize = 4096

// Errors of the reads and parsers.
var (
	// ErrTooLarge is a file longer than MaxFileSize.
	ErrTooLarge = errors.New("larger than a sysfs attribute")
	// ErrInvalid is content that does not parse.
	ErrInvalid = errors.New("invalid content")
)

// Reader reads files of FS into a buffer of its own. It is not safe for
// concurrent use.
type Reader struct {
	FS  fs.FS
	buf [MaxFileSize + 1]byte
}

// Read returns the contents of name. The slice is valid until the next
// call.
func (r *Reader) Read(name string) ([]byte, error) {
	f, err := r.FS.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := io.ReadFull(f, r.buf[:])
	switch {
	case err == nil:
		return nil, fmt.Errorf("%s: %w", name, ErrTooLarge)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return r.buf[:n], nil
	}
	return nil, &fs.PathError{Op: "read", Path: name, Err: err}
}

// Int reads a decimal integer file (a temperature, a percentage).
func (r *Reader) Int(name string) (int64, error) {
	b, err := r.Read(name)
	if err != nil {
		return 0, err
	}
	v, err := ParseInt(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// Uint reads an unsigned decimal integer file (bytes, microwatts).
func (r *Reader) Uint(name string) (uint64, error) {
	b, err := r.Read(name)
	if err != nil {
		return 0, err
	}
	v, err := ParseUint(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// ErrorName is a stable, low-cardinality name for a read error: the
// errno's name (EAGAIN, EIO, ENOENT), invalid_data, too_large, or other.
func ErrorName(err error) string {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		if n := unix.ErrnoName(errno); n != "" {
			return n
		}
		return "errno_" + strconv.Itoa(int(errno))
	case errors.Is(err, fs.ErrNotExist):
		return "ENOENT"
	case errors.Is(err, fs.ErrPermission):
		return "EACCES"
	case errors.Is(err, ErrInvalid):
		return "invalid_data"
	case errors.Is(err, ErrTooLarge):
		return "too_large"
	}
	return "other"
}

// trim drops the whitespace around an attribute's value (the kernel ends
// every one with a newline).
func trim(b []byte) []byte { return bytes.TrimSpace(b) }

// ParseInt parses a signed decimal attribute: "-5000\n".
func ParseInt(b []byte) (int64, error) {
	v, err := strconv.ParseInt(string(trim(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not an integer", ErrInvalid, clip(b))
	}
	return v, nil
}

// ParseUint parses an unsigned decimal attribute: "68702699520\n".
func ParseUint(b []byte) (uint64, error) {
	v, err := strconv.ParseUint(string(trim(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not an unsigned integer", ErrInvalid, clip(b))
	}
	return v, nil
}

// ParseHex parses a hexadecimal attribute without prefix, as amdgpu
// writes unique_id ("%016llx\n").
func ParseHex(b []byte) (uint64, error) {
	v, err := strconv.ParseUint(string(trim(b)), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not hexadecimal", ErrInvalid, clip(b))
	}
	return v, nil
}

// ParseString returns a one-line attribute's value (product_name, a hwmon
// label, a version): the first line, trimmed, at most maxString bytes of
// valid UTF-8.
func ParseString(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	b = trim(b)
	if len(b) > maxString {
		b = b[:maxString]
	}
	// A label value must be valid UTF-8, the cut included.
	return strings.TrimSpace(strings.ToValidUTF8(string(b), ""))
}

// maxString bounds a string attribute kept as a label value.
const maxString = 128

// clip shortens b for an error message.
func clip(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

// PCIAddress formats a PCI domain and a location id, (bus << 8) | (device
// << 3) | function, in sysfs form: 0000:03:00.0.
func PCIAddress(domain, locationID uint64) string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", domain&0xffffffff, locationID>>8&0xff, locationID>>3&0x1f, locationID&0x7)
}

// ValidPCIAddress reports whether s is a PCI address in sysfs form,
// domain:bus:device.function in lower-case hexadecimal: a domain of 4 to 8
// digits (Linux domains are 32 bits: a VMD domain is 10000), then bb:dd.f.
func ValidPCIAddress(s string) bool {
	domain, rest, ok := strings.Cut(s, ":")
	if !ok || len(domain) < 4 || len(domain) > 8 || len(rest) != len("00:00.0") || rest[2] != ':' || rest[5] != '.' {
		return false
	}
	for i, c := range []byte(domain + rest) {
		if j := i - len(domain); j == 2 || j == 5 {
			continue
		}
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	// device is five bits (00-1f), function three (0-7).
	return rest[3] <= '1' && rest[6] <= '7'
}
