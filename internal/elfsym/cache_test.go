package elfsym

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memFile is a File over bytes.
type memFile struct {
	*bytes.Reader
	name string
}

func (f memFile) Close() error               { return nil }
func (f memFile) Name() string               { return f.name }
func (f memFile) Stat() (fs.FileInfo, error) { return memInfo{f.Reader.Size()}, nil }

type memInfo struct{ size int64 }

func (i memInfo) Name() string       { return "mem" }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }

// counter returns an Opener of b that counts its calls.
func counter(name string, b []byte, n *atomic.Int32) Opener {
	return func() (File, error) {
		n.Add(1)
		return memFile{bytes.NewReader(b), name}, nil
	}
}

func TestCacheLookup(t *testing.T) {
	c := NewCache(CacheConfig{MaxTables: 4})
	var opens atomic.Int32
	open := counter("/proc/1/map_files/1000-2000", fakeLib().bytes(), &opens)
	id := FileID{Dev: 0x801, Inode: 42}
	for range 3 {
		name, ok, err := c.Lookup(id, off(0x202410), open)
		if err != nil || !ok || name != "vectorAdd(float*, float*, float*, int)" {
			t.Fatalf("Lookup = %q, %v, %v", name, ok, err)
		}
		if _, ok, err := c.Lookup(id, off(0x201100), open); ok || err != nil {
			t.Fatalf("Lookup in a gap = %v, %v", ok, err)
		}
	}
	if opens.Load() != 1 {
		t.Errorf("%d opens, want 1", opens.Load())
	}
	tab, _ := c.Table(id, nil)
	if s := c.Stats(); s != (CacheStats{Tables: 1, Bytes: tab.bytes(), Builds: 1}) || s.Bytes < 1000 {
		t.Errorf("Stats = %+v", s)
	}
	tab, err := c.Table(id, open)
	if err != nil || !tab.Has("f1") || tab.Has("cudaLaunchKernel") {
		t.Errorf("Table: %v", err)
	}
	c.Forget(id)
	if _, _, err := c.Lookup(id, 0, open); err != nil || opens.Load() != 2 {
		t.Errorf("after Forget: %d opens, err %v", opens.Load(), err)
	}
	c.Forget(FileID{Inode: 1}) // not held: nothing happens
}

func TestCacheErrors(t *testing.T) {
	c := NewCache(CacheConfig{MaxTables: 4})

	// Stripped: remembered, and says which file.
	var opens atomic.Int32
	stripped := counter("/proc/7/map_files/1000-2000", fakeELF{segs: fakeSegs}.bytes(), &opens)
	id := FileID{Dev: 0xfd01, Inode: 7}
	for range 2 {
		_, _, err := c.Lookup(id, 0, stripped)
		if !errors.Is(err, ErrNoSymbols) ||
			!strings.Contains(err.Error(), "elfsym: /proc/7/map_files/1000-2000 (dev 253:1 inode 7): neither .symtab nor .dynsym") {
			t.Fatalf("stripped: %v", err)
		}
	}
	if opens.Load() != 1 {
		t.Errorf("stripped file opened %d times, want 1", opens.Load())
	}

	// An Opener that fails is asked again next time.
	fails := true
	var n atomic.Int32
	flaky := func() (File, error) {
		n.Add(1)
		if fails {
			return nil, fs.ErrPermission
		}
		return memFile{bytes.NewReader(fakeLib().bytes()), "lib"}, nil
	}
	id = FileID{Dev: 0x801, Inode: 8}
	_, _, err := c.Lookup(id, off(0x201000), flaky)
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "open the file of dev 8:1 inode 8") {
		t.Fatalf("failing opener: %v", err)
	}
	fails = false
	if name, ok, err := c.Lookup(id, off(0x201000), flaky); name != "f1" || !ok || err != nil {
		t.Fatalf("after the opener recovers: %q, %v, %v", name, ok, err)
	}
	if n.Load() != 2 {
		t.Errorf("flaky opener called %d times, want 2", n.Load())
	}

	// No Opener: only a held table is returned.
	if _, err := c.Table(FileID{Inode: 99}, nil); err == nil || !strings.Contains(err.Error(), "inode 99 is not held and there is no Opener") {
		t.Errorf("nil opener: %v", err)
	}

	// A panicking Opener leaves no entry behind that others would wait on.
	id = FileID{Inode: 9}
	func() {
		defer func() { _ = recover() }()
		c.Lookup(id, 0, func() (File, error) { panic("boom") })
	}()
	if _, ok, err := c.Lookup(id, off(0x201000), counter("lib", fakeLib().bytes(), &opens)); !ok || err != nil {
		t.Errorf("after a panicking opener: %v, %v", ok, err)
	}
}

func TestCacheEviction(t *testing.T) {
	c := NewCache(CacheConfig{MaxTables: 2})
	lib := fakeLib().bytes()
	var opens [5]atomic.Int32
	get := func(i int) {
		t.Helper()
		if _, ok, err := c.Lookup(FileID{Inode: uint64(i)}, off(0x201000), counter("lib", lib, &opens[i])); !ok || err != nil {
			t.Fatalf("file %d: %v, %v", i, ok, err)
		}
	}
	get(1)
	get(2)
	get(3) // full, both used: the hand clears both and takes 1's slot
	if s := c.Stats(); s.Tables != 2 || s.Evictions != 1 {
		t.Fatalf("Stats %+v, want 2 tables, 1 eviction", s)
	}
	get(3) // used since the sweep
	get(4) // evicts 2, the one not used since the hand passed
	get(3)
	if opens[3].Load() != 1 || opens[2].Load() != 1 {
		t.Fatalf("file 3 opened %d times, file 2 %d times; want 1, 1", opens[3].Load(), opens[2].Load())
	}
	get(2)
	if opens[2].Load() != 2 {
		t.Errorf("file 2 opened %d times after its eviction, want 2", opens[2].Load())
	}
	if s := c.Stats(); s.Tables != 2 || s.Evictions != 3 || s.Builds != 5 {
		t.Errorf("Stats %+v, want 2 tables, 3 evictions, 5 builds", s)
	}
}

func TestCacheBytes(t *testing.T) {
	lib := fakeLib().bytes()
	one := mustTable(t, lib, Limits{}).bytes()
	var n atomic.Int32
	for _, tc := range []struct {
		maxBytes int64
		tables   int
	}{
		{3*one + one/2, 3}, // three fit
		{one + one/2, 1},   // one fits
		{one / 2, 1},       // none fits: the last one built is held alone
	} {
		c := NewCache(CacheConfig{MaxTables: 8, MaxBytes: tc.maxBytes})
		for i := range 5 {
			if _, ok, err := c.Lookup(FileID{Inode: uint64(i)}, off(0x201000), counter("lib", lib, &n)); !ok || err != nil {
				t.Fatalf("file %d: %v, %v", i, ok, err)
			}
		}
		s := c.Stats()
		if s.Tables != tc.tables || s.Bytes != int64(tc.tables)*one || s.Evictions != uint64(5-tc.tables) {
			t.Errorf("MaxBytes %d: Stats %+v, want %d tables of %d bytes", tc.maxBytes, s, tc.tables, one)
		}
		if _, err := c.Table(FileID{Inode: 4}, nil); err != nil {
			t.Errorf("MaxBytes %d: the last table built is not held: %v", tc.maxBytes, err)
		}
		c.Forget(FileID{Inode: 4})
		if s := c.Stats(); s.Bytes != int64(tc.tables-1)*one {
			t.Errorf("MaxBytes %d: after Forget, %d bytes", tc.maxBytes, s.Bytes)
		}
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := NewCache(CacheConfig{MaxTables: 3, Limits: Limits{MemoSize: 4}})
	lib := fakeLib().bytes()
	var opens atomic.Int32
	slow := func() (File, error) {
		opens.Add(1)
		time.Sleep(20 * time.Millisecond)
		return memFile{bytes.NewReader(lib), "slow"}, nil
	}
	// One build however many ask at once.
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if name, ok, err := c.Lookup(FileID{Inode: 1}, off(0x202105), slow); name != "f2" || !ok || err != nil {
				t.Errorf("Lookup = %q, %v, %v", name, ok, err)
			}
		})
	}
	wg.Wait()
	if opens.Load() != 1 {
		t.Errorf("%d builds for one file, want 1", opens.Load())
	}
	// Many files through a small cache: evictions under the race detector.
	var n atomic.Int32
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				id := FileID{Inode: uint64(2 + (i*7+g)%6)}
				want, o := "f1", off(0x201000+uint64(i%0x100))
				if i%3 == 0 {
					want, o = "exported_only", off(0x204000+uint64(i%0x10))
				}
				if name, ok, err := c.Lookup(id, o, counter("lib", lib, &n)); name != want || !ok || err != nil {
					t.Errorf("Lookup = %q, %v, %v; want %q", name, ok, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	if s := c.Stats(); s.Tables > 3 || s.Evictions == 0 {
		t.Errorf("Stats %+v, want at most 3 tables and some evictions", s)
	}
}
