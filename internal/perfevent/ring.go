package perfevent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Record types of the ring buffer (linux/perf_event.h) that an Intel PT
// capture reads or keeps.
const (
	RecordMmap        = 1
	RecordLost        = 2
	RecordComm        = 3
	RecordExit        = 4
	RecordFork        = 7
	RecordMmap2       = 10
	RecordAux         = 11
	RecordItraceStart = 12
	RecordSwitch      = 14
)

// AUX record flags (PERF_AUX_FLAG_*).
const (
	AuxFlagTruncated = unix.PERF_AUX_FLAG_TRUNCATED
	AuxFlagOverwrite = unix.PERF_AUX_FLAG_OVERWRITE
	AuxFlagPartial   = unix.PERF_AUX_FLAG_PARTIAL
	AuxFlagCollision = unix.PERF_AUX_FLAG_COLLISION
)

// Ring is an event's mmap'ed ring buffer, with its AUX area where the
// event's PMU has one: the metadata page, the data pages that hold the
// kernel's records, and the AUX pages that hold the PMU's own trace.
type Ring struct {
	fd   int
	meta []byte
	page *unix.PerfEventMmapPage
	data []byte
	aux  []byte
	// Overwrite is set for a read-only AUX mapping: the kernel
	// overwrites the oldest trace (snapshot mode) instead of stopping
	// at aux_tail.
	Overwrite bool
	scratch   []byte
}

// PageSize is the system's page size.
var PageSize = unix.Getpagesize()

// MapRing maps fd's ring buffer of dataPages pages (a power of two) and,
// when auxPages is not 0, its AUX area of auxPages pages (a power of
// two): read and write for a full trace, in which the kernel stops at
// the reader's tail; read-only (overwrite) for a snapshot. On an error
// nothing stays mapped.
func MapRing(fd, dataPages, auxPages int, overwrite bool) (*Ring, error) {
	if dataPages < 1 || dataPages&(dataPages-1) != 0 {
		return nil, fmt.Errorf("ring of %d data pages: a power of two is needed", dataPages)
	}
	if auxPages < 0 || auxPages&(auxPages-1) != 0 {
		return nil, fmt.Errorf("AUX area of %d pages: a power of two is needed", auxPages)
	}
	meta, err := unix.Mmap(fd, 0, (1+dataPages)*PageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap the ring buffer (%d pages): %w", 1+dataPages, err)
	}
	r := &Ring{fd: fd, meta: meta, page: (*unix.PerfEventMmapPage)(unsafe.Pointer(&meta[0]))}
	off, size := r.page.Data_offset, r.page.Data_size
	if off == 0 || size == 0 || off+size > uint64(len(meta)) {
		off, size = uint64(PageSize), uint64(dataPages*PageSize) // kernels before 4.1
	}
	r.data = meta[off : off+size]
	if auxPages == 0 {
		return r, nil
	}
	auxOff := uint64(len(meta))
	atomic.StoreUint64(&r.page.Aux_offset, auxOff)
	atomic.StoreUint64(&r.page.Aux_size, uint64(auxPages*PageSize))
	prot := unix.PROT_READ | unix.PROT_WRITE
	if overwrite {
		prot = unix.PROT_READ
	}
	aux, err := unix.Mmap(fd, int64(auxOff), auxPages*PageSize, prot, unix.MAP_SHARED)
	if err != nil {
		_ = unix.Munmap(meta)
		return nil, fmt.Errorf("mmap the AUX area (%d pages at %#x): %w", auxPages, auxOff, err)
	}
	r.aux, r.Overwrite = aux, overwrite
	return r, nil
}

// Close unmaps the ring. It does not close the event.
func (r *Ring) Close() error {
	var errs []error
	if r.aux != nil {
		errs = append(errs, unix.Munmap(r.aux))
		r.aux = nil
	}
	if r.meta != nil {
		errs = append(errs, unix.Munmap(r.meta))
		r.meta, r.page, r.data = nil, nil, nil
	}
	return errors.Join(errs...)
}

// TimeConv is how the event's timestamps convert from TSC ticks, as the
// metadata page gives it (cap_user_time_zero): a decoder of the trace's
// TSC packets needs it to line them up with the sideband's times.
type TimeConv struct {
	Shift uint16
	Mult  uint32
	Zero  uint64
	// Valid is the page's cap_user_time_zero bit.
	Valid bool
}

// capUserTimeZero is bit 4 of the metadata page's capabilities.
const capUserTimeZero = 1 << 4

// TimeConv reads the TSC conversion of the metadata page.
func (r *Ring) TimeConv() TimeConv {
	return TimeConv{
		Shift: r.page.Time_shift, Mult: r.page.Time_mult, Zero: r.page.Time_zero,
		Valid: r.page.Capabilities&capUserTimeZero != 0,
	}
}

// Records calls fn for each record the kernel wrote since the last call,
// header included, in order, and then frees their room. A record that
// wraps around the ring's end is handed over in one piece. fn's slice is
// valid only during the call.
func (r *Ring) Records(fn func(typ uint32, misc uint16, rec []byte) error) error {
	head := atomic.LoadUint64(&r.page.Data_head)
	tail := atomic.LoadUint64(&r.page.Data_tail)
	size := uint64(len(r.data))
	var err error
	for tail < head && err == nil {
		var hdr [8]byte
		r.copyOut(hdr[:], tail)
		typ := binary.NativeEndian.Uint32(hdr[0:])
		misc := binary.NativeEndian.Uint16(hdr[4:])
		n := uint64(binary.NativeEndian.Uint16(hdr[6:]))
		if n < 8 || n > size || tail+n > head {
			err = fmt.Errorf("record of %d bytes at %d (head %d): the ring is corrupt", n, tail, head)
			break
		}
		start := tail % size
		var rec []byte
		if start+n <= size {
			rec = r.data[start : start+n]
		} else {
			if cap(r.scratch) < int(n) {
				r.scratch = make([]byte, n, 1<<16)
			}
			rec = r.scratch[:n]
			r.copyOut(rec, tail)
		}
		err = fn(typ, misc, rec)
		tail += n
	}
	atomic.StoreUint64(&r.page.Data_tail, tail)
	return err
}

func (r *Ring) copyOut(dst []byte, pos uint64) {
	size := uint64(len(r.data))
	start := pos % size
	n := copy(dst, r.data[start:])
	copy(dst[n:], r.data)
}

// AUX returns the AUX bytes [off, off+n) as the kernel's offsets count
// them (they grow without wrapping): one slice, or two where the range
// wraps around the area's end.
func (r *Ring) AUX(off, n uint64) (a, b []byte) {
	size := uint64(len(r.aux))
	if size == 0 || n == 0 {
		return nil, nil
	}
	if n > size {
		off, n = off+n-size, size // only the last size bytes are there
	}
	start := off % size
	if start+n <= size {
		return r.aux[start : start+n], nil
	}
	return r.aux[start:], r.aux[:start+n-size]
}

// AUXHead is how far the kernel has written the AUX area.
func (r *Ring) AUXHead() uint64 { return atomic.LoadUint64(&r.page.Aux_head) }

// ConsumeAUX frees the AUX area up to upto for the kernel to write again
// (a full trace's mapping; a snapshot's ignores it).
func (r *Ring) ConsumeAUX(upto uint64) {
	if !r.Overwrite {
		atomic.StoreUint64(&r.page.Aux_tail, upto)
	}
}

// AuxRecord is the body of a PERF_RECORD_AUX.
type AuxRecord struct {
	Offset, Size, Flags uint64
}

// ParseAuxRecord reads a PERF_RECORD_AUX, header included.
func ParseAuxRecord(rec []byte) (AuxRecord, error) {
	if len(rec) < 8+24 {
		return AuxRecord{}, fmt.Errorf("AUX record of %d bytes, want at least 32", len(rec))
	}
	return AuxRecord{
		Offset: binary.NativeEndian.Uint64(rec[8:]),
		Size:   binary.NativeEndian.Uint64(rec[16:]),
		Flags:  binary.NativeEndian.Uint64(rec[24:]),
	}, nil
}

// ParseLostRecord returns the count of a PERF_RECORD_LOST, header
// included.
func ParseLostRecord(rec []byte) (uint64, error) {
	if len(rec) < 8+16 {
		return 0, fmt.Errorf("lost record of %d bytes, want at least 24", len(rec))
	}
	return binary.NativeEndian.Uint64(rec[16:]), nil
}

// Enable, Disable: the event's ioctls.
func Enable(fd int) error  { return unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0) }
func Disable(fd int) error { return unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0) }
