package elfsym

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

//go:noinline
func knownFunction(x int) int {
	for i := range x {
		x ^= i * 31
	}
	return x
}

const knownName = "github.com/xpuscope/xpuscope/internal/elfsym.knownFunction"

// selfOpener opens the file of mapping m of this process through
// map_files, or through its root where map_files is not readable.
func selfOpener(m procfs.Mapping) Opener {
	return func() (File, error) {
		f, err := procfs.FS{Root: procfs.DefaultRoot}.Proc(os.Getpid()).OpenMapped(m)
		if err != nil {
			return nil, err
		}
		return f, nil
	}
}

// selfMapping returns the mapping of this process that holds the code of
// fn, and the address.
func selfMapping(t testing.TB, fn any) (procfs.Mapping, uint64) {
	t.Helper()
	ms, err := procfs.FS{Root: procfs.DefaultRoot}.Proc(os.Getpid()).Maps()
	require.NoError(t, err)
	addr := uint64(reflect.ValueOf(fn).Pointer())
	m, ok := ms.Find(addr)
	require.True(t, ok, "no mapping holds %#x", addr)
	return m, addr
}

// TestSelf turns a pointer to a Go function of the running test binary
// into its name: /proc/self/maps, the file offset, the binary's symbols.
// go test links the binary it runs with -s (no .symtab), so unless it was
// built with go test -c, the function is not found and the table is
// reported stripped; TestGoBinary covers a Go binary with symbols.
func TestSelf(t *testing.T) {
	m, addr := selfMapping(t, knownFunction)
	c := NewCache(CacheConfig{MaxTables: 4})
	id := FileID{Dev: m.Dev, Inode: m.Inode}
	name, ok, err := c.Lookup(id, m.FileOffset(addr), selfOpener(m))
	if errors.Is(err, ErrNoSymbols) {
		// go test links with -s: no .symtab, and a Go binary's .dynsym
		// defines no function. That must be why.
		f, ferr := elf.Open("/proc/self/exe")
		require.NoError(t, ferr)
		defer f.Close()
		require.Nil(t, f.Section(".symtab"), "ErrNoSymbols for a binary with a .symtab: %v", err)
		return
	}
	require.NoError(t, err)
	tab, err := c.Table(id, nil) // held: the opener is not called
	require.NoError(t, err)
	t.Logf("%s: %d function symbols, stripped %v", m.Path, tab.Len(), tab.Stripped())
	if tab.Stripped() {
		require.False(t, ok, "stripped binary: Lookup(%#x) = %q, want no name", addr, name)
		return
	}
	require.True(t, ok, "Lookup(%#x) = %q, %v; want %q", addr, name, ok, knownName)
	require.Equal(t, knownName, name, "Lookup(%#x)", addr)
	got, _ := tab.LookupOffset(m.FileOffset(addr) + 8)
	assert.Equal(t, knownName, got, "inside the function")
	o, ok := tab.Address(knownName)
	assert.Equal(t, m.FileOffset(addr), o, "Address = %#x, %v; want %#x", o, ok, m.FileOffset(addr))
	assert.True(t, ok, "Address = %#x, %v; want %#x", o, ok, m.FileOffset(addr))
}

const probeSrc = `package main

import (
	"fmt"
	"os"
	"reflect"
)

//go:noinline
func target(x int) int {
	for i := range x {
		x ^= i * 31
	}
	return x
}

func main() {
	fmt.Printf("main.target %#x\n", reflect.ValueOf(target).Pointer())
	fmt.Printf("main.main %#x\n", reflect.ValueOf(main).Pointer())
	fmt.Printf("fmt.Printf %#x\n", reflect.ValueOf(fmt.Printf).Pointer())
	b, _ := os.ReadFile("/proc/self/maps")
	fmt.Print("maps\n")
	os.Stdout.Write(b)
	os.Exit(target(0))
}
`

// TestGoBinary builds a Go program with its symbol table (as go build
// does by default), runs it, and turns the function pointers it prints
// into names through its maps.
func TestGoBinary(t *testing.T) {
	testutil.Native(t, "a Go program built and run for the host")
	// go test puts its own GOROOT/bin first in PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		testutil.SkipOrFail(t, "go tool not found: %v", err)
	}
	dir := t.TempDir()
	for name, src := range map[string]string{"go.mod": "module probe\n\ngo 1.26\n", "main.go": probeSrc} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
	}
	exe := filepath.Join(dir, "probe")
	cmd := exec.Command(goTool, "build", "-o", exe, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)
	addrs, ms := run(t, exe)
	c := NewCache(CacheConfig{MaxTables: 2})
	for name, addr := range addrs {
		m, ok := ms.Find(addr)
		require.True(t, ok, "%s at %#x: mapping %+v, %v", name, addr, m, ok)
		require.Equal(t, exe, m.Path, "%s at %#x: mapping %+v, %v", name, addr, m, ok)
		open := func() (File, error) { return os.Open(m.Path) }
		got, ok, err := c.Lookup(FileID{Dev: m.Dev, Inode: m.Inode}, m.FileOffset(addr)+1, open)
		assert.Equal(t, name, got, "Lookup(%s) = %q, %v, %v", name, got, ok, err)
		assert.True(t, ok, "Lookup(%s) = %q, %v, %v", name, got, ok, err)
		assert.NoError(t, err, "Lookup(%s) = %q, %v, %v", name, got, ok, err)
	}
}

// TestVendorLibraries reads real vendor libraries, stripped as shipped:
// NVML and the CUDA runtime (scripts/install-test-deps.sh installs both, so
// CI requires them).
func TestVendorLibraries(t *testing.T) {
	for _, lib := range []struct {
		paths   []string
		exports []string
	}{
		{[]string{"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/usr/lib64/libnvidia-ml.so.1"},
			[]string{"nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetCount_v2"}},
		{[]string{cudartPath, "/usr/local/cuda/lib64/libcudart.so"},
			[]string{"cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamSynchronize", "__cudaRegisterFunction"}},
	} {
		t.Run(lib.exports[0], func(t *testing.T) {
			path := ""
			for _, p := range lib.paths {
				if _, err := os.Stat(p); err == nil {
					path = p
					break
				}
			}
			if path == "" {
				testutil.SkipOrFail(t, "none of %v installed", lib.paths)
			}
			tab, err := Open(path, Limits{})
			require.NoError(t, err)
			for _, name := range lib.exports {
				o, ok := tab.Address(name)
				if !assert.True(t, ok, "%s: no %s", path, name) {
					continue
				}
				got, _ := tab.LookupOffset(o)
				a, _ := tab.Address(got)
				assert.Equal(t, o, a, "%s: LookupOffset(Address(%s)) = %q, at %#x", path, name, got, a)
			}
			t.Logf("%s: %d function symbols, stripped %v", path, tab.Len(), tab.Stripped())
		})
	}
}

// benchLib writes a shared object of n function symbols with C++-mangled
// names, "kernel_000042(float*, float*, float*, int)", the shape of a CUDA
// kernel library, and returns its path and the file offset of the middle
// of each function.
func benchLib(b *testing.B, n int) (string, []uint64) {
	syms := make([]fakeSym, n)
	offs := make([]uint64, n)
	for i := range syms {
		name := fmt.Sprintf("kernel_%06d", i)
		v := uint64(textVaddr + i*0x40)
		syms[i] = fakeSym{name: fmt.Sprintf("_Z%d%sPfS_S_i", len(name), name), value: v, size: 0x40}
		offs[i] = off(v) + 0x20
	}
	segs := []fakeSeg{{off: textOff, vaddr: textVaddr, filesz: uint64(n) * 0x40, flags: elf.PF_R | elf.PF_X}}
	path := filepath.Join(b.TempDir(), "libkernels.so")
	require.NoError(b, os.WriteFile(path, fakeELF{segs: segs, symtab: syms, dynsym: syms[:n/10]}.bytes(), 0o644))
	return path, offs
}

func fileOpener(path string) Opener {
	return func() (File, error) { return os.Open(path) }
}

// BenchmarkLookupCached is the tracer's steady state: the file's Table is
// held and the offset was resolved before (one of 1,024 kernels, in a
// library of 100,000 functions).
func BenchmarkLookupCached(b *testing.B) {
	path, offs := benchLib(b, 100_000)
	offs = offs[:1024]
	c := NewCache(CacheConfig{MaxTables: 4})
	id, open := FileID{Dev: 1, Inode: 2}, fileOpener(path)
	for _, o := range offs {
		_, _, err := c.Lookup(id, o, open)
		require.NoError(b, err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok, err := c.Lookup(id, offs[i%len(offs)], open); !ok || err != nil {
			require.NoError(b, err)
			require.True(b, ok)
		}
		i++
	}
}

// BenchmarkLookupUncached is a first lookup of an offset in a held Table:
// binary search over 100,000 functions, demangling, and the memo store.
func BenchmarkLookupUncached(b *testing.B) {
	path, offs := benchLib(b, 100_000)
	tab, err := Open(path, Limits{MemoSize: 1})
	require.NoError(b, err)
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, ok := tab.LookupOffset(offs[(i*7919)%len(offs)]); !ok {
				require.True(b, ok, "not found")
			}
			i++
		}
	})
	b.Run("demangled", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			// A memo of one slot and a new offset each time: always a miss.
			if _, ok := tab.Resolve(offs[(i*7919)%len(offs)]); !ok {
				require.True(b, ok, "not found")
			}
			i++
		}
	})
}

// BenchmarkLookupCold is the first pointer into a new file: open it, build
// its Table, look up one offset.
func BenchmarkLookupCold(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("%dsyms", n), func(b *testing.B) {
			path, offs := benchLib(b, n)
			open := fileOpener(path)
			b.ReportAllocs()
			for b.Loop() {
				c := NewCache(CacheConfig{MaxTables: 1})
				if _, ok, err := c.Lookup(FileID{}, offs[n/2], open); !ok || err != nil {
					require.NoError(b, err)
					require.True(b, ok)
				}
			}
		})
	}
	if _, err := os.Stat(cudartPath); err == nil {
		b.Run("libcudart.so.11.0", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Open(cudartPath, Limits{}); err != nil {
					require.NoError(b, err)
				}
			}
		})
	}
}

const cudartPath = "/usr/lib/x86_64-linux-gnu/libcudart.so.11.0"

func BenchmarkDemangle(b *testing.B) {
	for _, name := range []string{"cudaLaunchKernel", "_ZN2at6native12_GLOBAL__N_117vectorized_kernelILi4EEEvv"} {
		b.Run(name[:min(len(name), 16)], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Demangle(name)
			}
		})
	}
}
