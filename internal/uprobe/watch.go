package uprobe

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/procfs"
)

// recordSize is the size of a watcher record, struct watch_event.
const recordSize = 96

// record is one watcher record (struct watch_event in watch.bpf.c).
type record struct {
	pid    int
	what   watchWatchWhat
	flags  watchWatchFlag
	reason watchWatchReason
	// file identifies the mapped file as the kernel does, its inode's
	// generation included.
	file watchFileKey
	// start, end and pgoff are the mapping's; a hold's start is how many
	// WATCH_FILE records of its process follow it.
	start, end, pgoff uint64
	ktime             uint64
	// name is the file's base name (WATCH_FILE, and the executable's
	// WATCH_MAPPING).
	name string
	// hold is, for a WATCH_HOLD handed to the worker, the hold it began
	// or added to.
	hold *hold
}

// decodeRecord reads a watcher record. It allocates only the name.
func decodeRecord(raw []byte) (record, error) {
	if len(raw) < recordSize {
		return record{}, fmt.Errorf("uprobe: watcher record of %d bytes, want %d", len(raw), recordSize)
	}
	le := binary.LittleEndian
	r := record{
		pid:    int(le.Uint32(raw[0:])),
		what:   watchWatchWhat(le.Uint32(raw[4:])),
		flags:  watchWatchFlag(le.Uint32(raw[8:])),
		reason: watchWatchReason(le.Uint32(raw[12:])),
		file:   watchFileKey{Ino: le.Uint64(raw[16:]), Dev: le.Uint32(raw[24:]), Gen: le.Uint32(raw[28:])},
		start:  le.Uint64(raw[32:]),
		end:    le.Uint64(raw[40:]),
		pgoff:  le.Uint64(raw[48:]),
		ktime:  le.Uint64(raw[56:]),
	}
	if r.what < watchWatchWhatWATCH_FILE || r.what > watchWatchWhatWATCH_MARK {
		return record{}, fmt.Errorf("uprobe: watcher record of unknown kind %d", r.what)
	}
	name := raw[64:96]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	if len(name) > 0 {
		r.name = string(name)
	}
	return r, nil
}

// pageSize is what a mapping's pgoff counts in.
var pageSize = uint64(os.Getpagesize())

// mapping is the executable mapping a WATCH_FILE or WATCH_MAPPING record
// tells of, as /proc/<pid>/maps would show it, without its path.
func (r record) mapping() procfs.Mapping {
	return procfs.Mapping{
		Start: r.start, End: r.end, Offset: r.pgoff * pageSize,
		Perms: procfs.PermRead | procfs.PermExec | procfs.PermPrivate,
		Dev:   kernelDev(r.file.Dev), Inode: r.file.Ino,
	}
}

// kernelDev converts the kernel's internal device number (major << 20 |
// minor) to unix.Mkdev's encoding, which procfs.Mapping uses.
func kernelDev(d uint32) uint64 { return unix.Mkdev(d>>20, d&(1<<20-1)) }
