package elfsym

import (
	"bytes"
	"io/fs"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		require.NoError(t, err, "Lookup = %q, %v, %v", name, ok, err)
		require.True(t, ok, "Lookup = %q, %v, %v", name, ok, err)
		require.Equal(t, "vectorAdd(float*, float*, float*, int)", name, "Lookup = %q, %v, %v", name, ok, err)
		_, ok, err = c.Lookup(id, off(0x201100), open)
		require.NoError(t, err, "Lookup in a gap = %v, %v", ok, err)
		require.False(t, ok, "Lookup in a gap = %v, %v", ok, err)
	}
	assert.Equal(t, int32(1), opens.Load(), "opens")
	tab, _ := c.Table(id, nil)
	s := c.Stats()
	assert.Equal(t, CacheStats{Tables: 1, Bytes: tab.bytes(), Builds: 1}, s, "Stats")
	assert.GreaterOrEqual(t, s.Bytes, int64(1000), "Stats = %+v", s)
	tab, err := c.Table(id, open)
	if assert.NoError(t, err, "Table") {
		assert.True(t, tab.Has("f1"), "Table: Has(f1)")
		assert.False(t, tab.Has("cudaLaunchKernel"), "Table: Has(cudaLaunchKernel)")
	}
	c.Forget(id)
	_, _, err = c.Lookup(id, 0, open)
	assert.NoError(t, err, "after Forget: %d opens", opens.Load())
	assert.Equal(t, int32(2), opens.Load(), "after Forget: opens, err %v", err)
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
		require.ErrorIs(t, err, ErrNoSymbols, "stripped")
		require.ErrorContains(t, err, "elfsym: /proc/7/map_files/1000-2000 (dev 253:1 inode 7): neither .symtab nor .dynsym", "stripped")
	}
	assert.Equal(t, int32(1), opens.Load(), "times the stripped file was opened")

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
	require.ErrorIs(t, err, fs.ErrPermission, "failing opener")
	require.ErrorContains(t, err, "open the file of dev 8:1 inode 8", "failing opener")
	fails = false
	name, ok, err := c.Lookup(id, off(0x201000), flaky)
	require.NoError(t, err, "after the opener recovers: %q, %v, %v", name, ok, err)
	require.True(t, ok, "after the opener recovers: %q, %v, %v", name, ok, err)
	require.Equal(t, "f1", name, "after the opener recovers: %q, %v, %v", name, ok, err)
	assert.Equal(t, int32(2), n.Load(), "times the flaky opener was called")

	// No Opener: only a held table is returned.
	_, err = c.Table(FileID{Inode: 99}, nil)
	assert.ErrorContains(t, err, "inode 99 is not held and there is no Opener", "nil opener")

	// A panicking Opener leaves no entry behind that others would wait on.
	id = FileID{Inode: 9}
	func() {
		defer func() { _ = recover() }()
		c.Lookup(id, 0, func() (File, error) { panic("boom") })
	}()
	_, ok, err = c.Lookup(id, off(0x201000), counter("lib", fakeLib().bytes(), &opens))
	assert.NoError(t, err, "after a panicking opener: %v, %v", ok, err)
	assert.True(t, ok, "after a panicking opener: %v, %v", ok, err)
}

func TestCacheEviction(t *testing.T) {
	c := NewCache(CacheConfig{MaxTables: 2})
	lib := fakeLib().bytes()
	var opens [5]atomic.Int32
	get := func(i int) {
		t.Helper()
		_, ok, err := c.Lookup(FileID{Inode: uint64(i)}, off(0x201000), counter("lib", lib, &opens[i]))
		require.NoError(t, err, "file %d: %v, %v", i, ok, err)
		require.True(t, ok, "file %d: %v, %v", i, ok, err)
	}
	get(1)
	get(2)
	get(3) // full, both used: the hand clears both and takes 1's slot
	s := c.Stats()
	require.Equal(t, 2, s.Tables, "Stats %+v, want 2 tables, 1 eviction", s)
	require.Equal(t, uint64(1), s.Evictions, "Stats %+v, want 2 tables, 1 eviction", s)
	get(3) // used since the sweep
	get(4) // evicts 2, the one not used since the hand passed
	get(3)
	require.Equal(t, int32(1), opens[3].Load(), "file 3 opened %d times, file 2 %d times; want 1, 1", opens[3].Load(), opens[2].Load())
	require.Equal(t, int32(1), opens[2].Load(), "file 3 opened %d times, file 2 %d times; want 1, 1", opens[3].Load(), opens[2].Load())
	get(2)
	assert.Equal(t, int32(2), opens[2].Load(), "times file 2 was opened after its eviction")
	s = c.Stats()
	assert.Equal(t, 2, s.Tables, "Stats %+v, want 2 tables, 3 evictions, 5 builds", s)
	assert.Equal(t, uint64(3), s.Evictions, "Stats %+v, want 2 tables, 3 evictions, 5 builds", s)
	assert.Equal(t, uint64(5), s.Builds, "Stats %+v, want 2 tables, 3 evictions, 5 builds", s)
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
			_, ok, err := c.Lookup(FileID{Inode: uint64(i)}, off(0x201000), counter("lib", lib, &n))
			require.NoError(t, err, "file %d: %v, %v", i, ok, err)
			require.True(t, ok, "file %d: %v, %v", i, ok, err)
		}
		s := c.Stats()
		assert.Equal(t, tc.tables, s.Tables, "MaxBytes %d: Stats %+v, want %d tables of %d bytes", tc.maxBytes, s, tc.tables, one)
		assert.Equal(t, int64(tc.tables)*one, s.Bytes, "MaxBytes %d: Stats %+v, want %d tables of %d bytes", tc.maxBytes, s, tc.tables, one)
		assert.Equal(t, uint64(5-tc.tables), s.Evictions, "MaxBytes %d: Stats %+v, want %d tables of %d bytes", tc.maxBytes, s, tc.tables, one)
		_, err := c.Table(FileID{Inode: 4}, nil)
		assert.NoError(t, err, "MaxBytes %d: the last table built is not held", tc.maxBytes)
		c.Forget(FileID{Inode: 4})
		assert.Equal(t, int64(tc.tables-1)*one, c.Stats().Bytes, "MaxBytes %d: bytes after Forget", tc.maxBytes)
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
			name, ok, err := c.Lookup(FileID{Inode: 1}, off(0x202105), slow)
			assert.NoError(t, err, "Lookup = %q, %v, %v", name, ok, err)
			assert.True(t, ok, "Lookup = %q, %v, %v", name, ok, err)
			assert.Equal(t, "f2", name, "Lookup = %q, %v, %v", name, ok, err)
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), opens.Load(), "builds for one file")
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
					assert.NoError(t, err, "Lookup = %q, %v, %v; want %q", name, ok, err, want)
					assert.True(t, ok, "Lookup = %q, %v, %v; want %q", name, ok, err, want)
					assert.Equal(t, want, name, "Lookup = %q, %v, %v; want %q", name, ok, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	s := c.Stats()
	assert.LessOrEqual(t, s.Tables, 3, "Stats %+v, want at most 3 tables and some evictions", s)
	assert.NotZero(t, s.Evictions, "Stats %+v, want at most 3 tables and some evictions", s)
}
