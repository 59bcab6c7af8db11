package elfsym

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// funcAddrsOracle is FuncAddrs the plain way, through debug/elf's full
// symbol tables: what FuncAddrs must agree with.
func funcAddrsOracle(f *elf.File, wanted map[string]bool, symtab bool) (map[string]uint64, error) {
	found := map[string]uint64{}
	add := func(syms []elf.Symbol, err error) error {
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			return err
		}
		for _, s := range syms {
			t := elf.ST_TYPE(s.Info)
			if s.Name != "" && wanted[s.Name] && s.Section != elf.SHN_UNDEF && s.Value != 0 &&
				(t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC) {
				found[s.Name] = s.Value
			}
		}
		return nil
	}
	if err := add(f.DynamicSymbols()); err != nil {
		return nil, err
	}
	if symtab {
		if err := add(f.Symbols()); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// sampleNames picks names to look up in f: some of its defined functions
// from both tables, an import, and names it lacks.
func sampleNames(t *testing.T, f *elf.File) map[string]bool {
	t.Helper()
	wanted := map[string]bool{"no_such_function_anywhere": true, "": true}
	for _, get := range []func() ([]elf.Symbol, error){f.DynamicSymbols, f.Symbols} {
		syms, err := get()
		if err != nil {
			continue
		}
		var funcs []string
		for _, s := range syms {
			switch {
			case s.Name == "":
			case s.Section == elf.SHN_UNDEF:
				wanted[s.Name] = true // an import: named, not defined
			case elf.ST_TYPE(s.Info) == elf.STT_FUNC:
				funcs = append(funcs, s.Name)
			}
		}
		for i := 0; i < len(funcs); i += max(1, len(funcs)/7) {
			wanted[funcs[i]] = true
		}
	}
	return wanted
}

// TestFuncAddrsAgreesWithDebugElf looks names up in real files (this test
// binary, with a large .symtab; libc; OpenSSL, stripped as Debian ships
// it) and in the fake library, with and without .symtab.
func TestFuncAddrsAgreesWithDebugElf(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	files := map[string]func() (*bytes.Reader, error){
		"fake library": func() (*bytes.Reader, error) { return bytes.NewReader(fakeLib().bytes()), nil },
	}
	for _, p := range []string{exe, "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libssl.so.3"} {
		files[p] = func() (*bytes.Reader, error) {
			b, err := os.ReadFile(p)
			return bytes.NewReader(b), err
		}
	}
	for name, open := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			r, err := open()
			if err != nil {
				testutil.SkipOrFail(t, "%v", err)
			}
			f, err := elf.NewFile(r)
			require.NoError(t, err)
			wanted := sampleNames(t, f)
			for _, symtab := range []bool{false, true} {
				want, err := funcAddrsOracle(f, wanted, symtab)
				require.NoError(t, err)
				got, err := FuncAddrs(r, f, wanted, symtab)
				require.NoError(t, err)
				assert.Equal(t, want, got, "symtab %v: FuncAddrs (got) against debug/elf (want)", symtab)
				assert.GreaterOrEqual(t, len(want), 2, "symtab %v: only %d of %d names found: the sample tests too little", symtab, len(want), len(wanted))
			}
		})
	}
}

// TestFuncAddrsAcrossWindows places a wanted name at every offset around
// the end of the first read of the string table, so that it straddles the
// reads in every possible way.
func TestFuncAddrsAcrossWindows(t *testing.T) {
	const target = "cudaLaunchKernel"
	wanted := map[string]bool{target: true, "k": true}
	for pos := nameWindow - 8; pos <= nameWindow+2*len(target)+4; pos++ {
		// The string table is "\0", the filler and its NUL, then target.
		filler := strings.Repeat("x", pos-2)
		e := fakeELF{segs: fakeSegs, dynsym: []fakeSym{
			{name: filler, value: 0x201000, size: 0x10},
			{name: target, value: 0x202000, size: 0x10},
			{name: "k", value: 0x203000, size: 0x10},
		}}
		b := e.bytes()
		f, err := elf.NewFile(bytes.NewReader(b))
		require.NoError(t, err)
		got, err := FuncAddrs(bytes.NewReader(b), f, wanted, false)
		require.NoError(t, err, "name at %d", pos)
		require.Equal(t, map[string]uint64{target: 0x202000, "k": 0x203000}, got, "name at string table offset %d", pos)
	}
}

// TestFuncAddrsTailMerged: GNU ld stores a name that ends another name
// only once, so a symbol's name field can point into the middle of a
// longer string. Both names must be found, at their own addresses.
func TestFuncAddrsTailMerged(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		testutil.SkipOrFail(t, "gcc is needed: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "x.c")
	lib := filepath.Join(dir, "libx.so")
	require.NoError(t, os.WriteFile(src, []byte("int my_SSL_write(void) { return 1; }\nint SSL_write(void) { return 2; }\n"), 0o644))
	out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", lib, src).CombinedOutput()
	require.NoError(t, err, "gcc:\n%s", out)
	b, err := os.ReadFile(lib)
	require.NoError(t, err)
	f, err := elf.NewFile(bytes.NewReader(b))
	require.NoError(t, err)
	dynstr, err := f.Section(".dynstr").Data()
	require.NoError(t, err)
	if bytes.Count(dynstr, []byte("SSL_write\x00")) != 1 {
		t.Logf("this linker did not merge the names: the test checks the plain layout only")
	}
	wanted := map[string]bool{"SSL_write": true, "my_SSL_write": true}
	want, err := funcAddrsOracle(f, wanted, true)
	require.NoError(t, err)
	got, err := FuncAddrs(bytes.NewReader(b), f, wanted, true)
	require.NoError(t, err)
	require.Len(t, want, 2, "debug/elf = %v; want both names", want)
	require.Equal(t, want, got, "FuncAddrs (got) against debug/elf (want)")
}

// TestFuncAddrsBoundsHits: a string table that repeats a wanted name
// without end is an error, not a map that grows with the file.
func TestFuncAddrsBoundsHits(t *testing.T) {
	syms := make([]fakeSym, maxNameHits+1)
	for i := range syms {
		syms[i] = fakeSym{name: "f", value: 0x201000 + uint64(i), size: 1}
	}
	b := fakeELF{segs: fakeSegs, dynsym: syms}.bytes()
	f, err := elf.NewFile(bytes.NewReader(b))
	require.NoError(t, err)
	_, err = FuncAddrs(bytes.NewReader(b), f, map[string]bool{"f": true}, false)
	require.ErrorContains(t, err, "more than 1024 places", "want the bound on hits")
}

// FuzzFuncAddrs reads arbitrary bytes as an ELF file: FuncAddrs must not
// panic, and where debug/elf reads the tables too, the two must agree.
func FuzzFuncAddrs(f *testing.F) {
	f.Add(fakeLib().bytes())
	e := fakeLib()
	e.class = elf.ELFCLASS32
	f.Add(e.bytes())
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	wanted := map[string]bool{"f1": true, "helper": true, "exported_only": true, "imported": true, "fast": true}
	f.Fuzz(func(t *testing.T, b []byte) {
		ef, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return
		}
		got, err := FuncAddrs(bytes.NewReader(b), ef, wanted, true)
		if err != nil {
			return
		}
		require.LessOrEqual(t, len(got), len(wanted), "found %d names, asked for %d", len(got), len(wanted))
		if want, err := funcAddrsOracle(ef, wanted, true); err == nil {
			require.Equal(t, want, got, "FuncAddrs (got) against debug/elf (want)")
		}
	})
}

// BenchmarkFuncAddrs asks a file of 200,000 function symbols (the size of
// a large C++ library's .symtab) for two functions it lacks, the common
// case of a tracer classifying a mapped file, through FuncAddrs and
// through debug/elf's full tables, and reports each one's bytes allocated
// per call and the ratios of naive to ours.
func BenchmarkFuncAddrs(b *testing.B) {
	path := filepath.Join(b.TempDir(), "libbig.so")
	require.NoError(b, os.WriteFile(path, fakeELF{segs: fakeSegs, symtab: manySyms(200_000, 40)}.bytes(), 0o644))
	file, err := os.Open(path)
	require.NoError(b, err)
	defer file.Close()
	f, err := elf.NewFile(file)
	require.NoError(b, err)
	wanted := map[string]bool{"cudaLaunchKernel": true, "SSL_write": true}
	measure := func(fn func() error) (time.Duration, uint64) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		for range b.N {
			if err := fn(); err != nil {
				require.NoError(b, err)
			}
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		return elapsed, after.TotalAlloc - before.TotalAlloc
	}
	b.ResetTimer()
	oursT, oursB := measure(func() error { _, err := FuncAddrs(file, f, wanted, true); return err })
	naiveT, naiveB := measure(func() error { _, err := funcAddrsOracle(f, wanted, true); return err })
	b.StopTimer()
	b.ReportMetric(float64(oursB)/float64(b.N), "B/call")
	b.ReportMetric(float64(naiveB)/float64(b.N), "naive-B/call")
	b.ReportMetric(float64(naiveB)/float64(max(oursB, 1)), "naive/ours-bytes")
	b.ReportMetric(float64(naiveT)/float64(oursT), "naive/ours-time")
}
