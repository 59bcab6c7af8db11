package elfsym

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
)

// Defaults of CacheConfig.
const (
	DefaultMaxTables = 64
	DefaultMaxBytes  = 256 << 20
)

// FileID identifies a file by device (in unix.Mkdev's encoding) and inode.
// Take both from /proc/<pid>/maps (procfs.Mapping) every time: on btrfs
// and some overlay setups stat(2) reports another device.
type FileID struct {
	Dev, Inode uint64
}

// String returns "dev 253:1 inode 1312".
func (id FileID) String() string {
	major := (id.Dev&0x00000000000fff00)>>8 | (id.Dev&0xfffff00000000000)>>32
	minor := id.Dev&0xff | (id.Dev&0x00000ffffff00000)>>12
	return fmt.Sprintf("dev %d:%d inode %d", major, minor, id.Inode)
}

// File is what a Cache reads an ELF file through; *os.File is one.
type File interface {
	io.ReaderAt
	io.Closer
	Stat() (fs.FileInfo, error)
}

// Opener opens the file a FileID names, for a Cache that does not hold its
// Table yet: typically procfs.Proc.OpenMapped, which opens the file
// through map_files, or under the process's root where map_files is not
// readable. When it returns an error, the File is ignored.
type Opener func() (File, error)

// Cache holds the Tables of up to a fixed number of files, keyed by
// FileID, within a budget of bytes. It builds a Table on first use, once
// however many goroutines ask for it, and evicts the least recently used
// (by a clock sweep) to make room. A file that fails to build (not ELF,
// stripped, malformed) is remembered like a Table, so that it is not read
// again; an Opener that fails is not. It is safe for concurrent use.
//
// An entry is trusted as long as it is held: a file replaced in place
// under the same inode needs Forget.
type Cache struct {
	lim       Limits
	maxBytes  int64
	mu        sync.RWMutex
	m         map[FileID]*entry
	ring      []*entry // the clock; nil slots are free
	hand      int
	bytes     int64 // of the Tables held
	builds    atomic.Uint64
	evictions atomic.Uint64
}

type entry struct {
	id    FileID
	slot  int
	bytes int64         // of t, once counted in Cache.bytes
	ref   atomic.Bool   // used since the clock hand last passed
	ready atomic.Bool   // t and err are set
	done  chan struct{} // closed when ready
	t     *Table
	err   error
}

// CacheConfig bounds a Cache. A zero or negative field takes its default.
type CacheConfig struct {
	// MaxTables is the most files held (default 64), remembered
	// failures included.
	MaxTables int
	// MaxBytes bounds the memory of the Tables held together (default 256
	// MiB): the least recently used are evicted to stay below it. A single
	// Table larger than MaxBytes is held alone.
	MaxBytes int64
	// Limits bound each Table.
	Limits Limits
}

// CacheStats are a Cache's counters, for self-metrics.
type CacheStats struct {
	Tables    int    // held now, remembered failures included
	Bytes     int64  // memory of the Tables held, approximately
	Builds    uint64 // Tables built (or attempted) so far
	Evictions uint64 // Tables evicted to make room
}

// NewCache returns an empty Cache.
func NewCache(cfg CacheConfig) *Cache {
	if cfg.MaxTables <= 0 {
		cfg.MaxTables = DefaultMaxTables
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	return &Cache{
		lim:      cfg.Limits.withDefaults(),
		maxBytes: cfg.MaxBytes,
		m:        make(map[FileID]*entry, cfg.MaxTables),
		ring:     make([]*entry, cfg.MaxTables),
	}
}

// Lookup returns the demangled name of the function that contains file
// offset off in the file id names, as Table.Resolve does. ok is false when
// the file has symbols but none contains off. An error wrapping
// ErrNoSymbols means the file is stripped (or not ELF).
func (c *Cache) Lookup(id FileID, off uint64, open Opener) (name string, ok bool, err error) {
	t, err := c.Table(id, open)
	if err != nil {
		return "", false, err
	}
	name, ok = t.Resolve(off)
	return name, ok, nil
}

// Table returns the Table of the file id names, building it from open when
// the Cache does not hold it (open may be nil to ask only for a held one).
func (c *Cache) Table(id FileID, open Opener) (*Table, error) {
	c.mu.RLock()
	e := c.m[id]
	c.mu.RUnlock()
	if e == nil {
		c.mu.Lock()
		if e = c.m[id]; e == nil {
			e = &entry{id: id, done: make(chan struct{})}
			c.insertLocked(e)
			c.mu.Unlock()
			c.fill(e, open)
			return e.t, e.err
		}
		c.mu.Unlock()
	}
	if !e.ref.Load() {
		e.ref.Store(true)
	}
	if !e.ready.Load() {
		<-e.done
	}
	return e.t, e.err
}

// Forget drops what the Cache holds for id: after a file was replaced
// under the same inode, say.
func (c *Cache) Forget(id FileID) {
	c.mu.Lock()
	if e := c.m[id]; e != nil {
		c.removeLocked(e)
	}
	c.mu.Unlock()
}

// Stats returns the Cache's counters.
func (c *Cache) Stats() CacheStats {
	c.mu.RLock()
	n, b := len(c.m), c.bytes
	c.mu.RUnlock()
	return CacheStats{Tables: n, Bytes: b, Builds: c.builds.Load(), Evictions: c.evictions.Load()}
}

var errUnfinished = errors.New("elfsym: building the table did not finish")

// fill builds e's Table, publishes it and evicts others while the Tables
// held take more than MaxBytes. An entry whose file could not be opened is
// removed again, so that the next Lookup retries.
func (c *Cache) fill(e *entry, open Opener) {
	keep := false
	e.err = errUnfinished
	defer func() {
		e.ready.Store(true)
		close(e.done)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.m[e.id] != e { // evicted or forgotten meanwhile
			return
		}
		if !keep {
			c.removeLocked(e)
			return
		}
		if e.t != nil {
			e.bytes = e.t.bytes()
			c.bytes += e.bytes
		}
		for c.bytes > c.maxBytes && c.evictLocked(e) {
		}
	}()
	e.t, keep, e.err = c.build(e.id, open)
}

func (c *Cache) build(id FileID, open Opener) (t *Table, keep bool, err error) {
	if open == nil {
		return nil, false, fmt.Errorf("elfsym: the table of %s is not held and there is no Opener to build it", id)
	}
	f, err := open()
	if err != nil {
		return nil, false, fmt.Errorf("elfsym: open the file of %s: %w", id, err)
	}
	defer f.Close()
	name := id.String()
	if n, ok := f.(interface{ Name() string }); ok {
		name = n.Name() + " (" + name + ")"
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("elfsym: stat %s: %w", name, err)
	}
	c.builds.Add(1)
	t, err = newTable(f, fi.Size(), c.lim)
	if err != nil {
		return nil, true, fmt.Errorf("elfsym: %s: %w", name, err)
	}
	return t, true, nil
}

// insertLocked puts e in a free slot of the clock, evicting an entry when
// there is none.
func (c *Cache) insertLocked(e *entry) {
	if len(c.m) >= len(c.ring) {
		c.evictLocked(nil)
	}
	for c.ring[c.hand] != nil {
		c.hand = (c.hand + 1) % len(c.ring)
	}
	e.slot = c.hand
	e.ref.Store(true)
	c.ring[c.hand] = e
	c.m[e.id] = e
	c.hand = (c.hand + 1) % len(c.ring)
}

// evictLocked removes the first entry other than keep that the clock hand
// finds unused since it last passed, clearing the marks of those it
// passes, and leaves the hand on the freed slot. It reports false when
// there is no entry but keep.
func (c *Cache) evictLocked(keep *entry) bool {
	for range 2 * len(c.ring) {
		if s := c.ring[c.hand]; s != nil && s != keep {
			if !s.ref.Load() {
				c.removeLocked(s)
				c.evictions.Add(1)
				return true
			}
			s.ref.Store(false)
		}
		c.hand = (c.hand + 1) % len(c.ring)
	}
	return false
}

func (c *Cache) removeLocked(e *entry) {
	delete(c.m, e.id)
	if c.ring[e.slot] == e {
		c.ring[e.slot] = nil
	}
	c.bytes -= e.bytes
	e.bytes = 0
}
