package elfsym

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// libSrc is a shared library with a C++-mangled kernel host stub (through
// asm labels), a local function, a label without a size and an IFUNC.
const libSrc = `
#include <stddef.h>
volatile int lib_sink;
void stub(void) __asm__("_Z9vectorAddPfS_S_i");
__attribute__((noinline)) void stub(void) { lib_sink += 1; lib_sink *= 3; }
void badstub(void) __asm__("_Z10vectorAddPfS_S_i");
__attribute__((noinline)) void badstub(void) { lib_sink += 2; lib_sink *= 5; }
__attribute__((noinline)) int lib_add(int a, int b) { __asm__ volatile(""); return a + 3 * b; }
static __attribute__((noinline)) int lib_local(int x) { __asm__ volatile(""); return 7 * x + 1; }
int lib_call_local(int x) { return lib_local(x); }
__asm__(".pushsection .text\n.globl zsym\n.type zsym,@function\nzsym:\n\tret\n.popsection\n");
void zsym(void);
static int fast_impl(void) { return 42; }
static void *resolve_fast(void) { return (void *)fast_impl; }
int fast(void) __attribute__((ifunc("resolve_fast")));
void *lib_addr(int i) {
	switch (i) {
	case 0: return (void *)stub;
	case 1: return (void *)badstub;
	case 2: return (void *)lib_add;
	case 3: return (void *)lib_local;
	case 4: return (void *)zsym;
	}
	return NULL;
}
`

// mainSrc prints the run-time addresses of functions of its own and of
// the library, then its /proc/self/maps.
const mainSrc = `
#include <stdio.h>
extern void *lib_addr(int);
extern int lib_call_local(int);
volatile int sink;
void exe_stub(void) __asm__("_Z6kernelIfEvPT_i");
__attribute__((noinline)) void exe_stub(void) { sink += 1; sink *= 3; }
__attribute__((noinline)) int exe_func(int x) { __asm__ volatile(""); return 5 * x + lib_call_local(x); }
int main(void) {
	const char *names[] = {"_Z9vectorAddPfS_S_i", "_Z10vectorAddPfS_S_i", "lib_add", "lib_local", "zsym"};
	printf("_Z6kernelIfEvPT_i %p\n", (void *)exe_stub);
	printf("exe_func %p\n", (void *)exe_func);
	for (int i = 0; i < 5; i++) printf("%s %p\n", names[i], lib_addr(i));
	printf("maps\n");
	FILE *f = fopen("/proc/self/maps", "r");
	int c;
	while ((c = fgetc(f)) != EOF) putchar(c);
	return exe_func(1) == 0;
}
`

var demangled = map[string]string{
	"_Z9vectorAddPfS_S_i": "vectorAdd(float*, float*, float*, int)",
	"_Z6kernelIfEvPT_i":   "void kernel<float>(float*, int)",
}

type built struct {
	lib, libStripped, pie, pieStripped, exe string
}

// build compiles the library, a PIE and a non-PIE executable linked to it,
// and stripped copies, in a directory whose name has a space.
func build(t *testing.T) built {
	t.Helper()
	for _, tool := range []string{"gcc", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.SkipOrFail(t, "%s not found: %v", tool, err)
		}
	}
	dir := filepath.Join(t.TempDir(), "with space")
	require.NoError(t, os.Mkdir(dir, 0o755))
	for name, src := range map[string]string{"lib.c": libSrc, "main.c": mainSrc} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	b := built{lib: p("libkern.so"), libStripped: p("libkern-stripped.so"),
		pie: p("app-pie"), pieStripped: p("app-pie-stripped"), exe: p("app-nopie")}
	link := []string{p("main.c"), "-L" + dir, "-lkern", "-Wl,-rpath," + dir}
	for _, args := range [][]string{
		{"gcc", "-O1", "-g0", "-fPIC", "-shared", "-o", b.lib, p("lib.c")},
		append([]string{"gcc", "-O1", "-fPIE", "-pie", "-o", b.pie}, link...),
		append([]string{"gcc", "-O1", "-fno-pie", "-no-pie", "-o", b.exe}, link...),
		{"strip", "-o", b.libStripped, b.lib},
		{"strip", "-o", b.pieStripped, b.pie},
	} {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		require.NoError(t, err, "%s\n%s", strings.Join(args, " "), out)
	}
	return b
}

// run runs an executable built by build and returns the addresses it
// printed and its maps.
func run(t *testing.T, exe string) (map[string]uint64, procfs.Maps) {
	t.Helper()
	out, err := exec.Command(exe).Output()
	require.NoError(t, err, exe)
	head, maps, ok := bytes.Cut(out, []byte("maps\n"))
	require.True(t, ok, "%s printed no maps:\n%s", exe, out)
	addrs := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(head))
	for sc.Scan() {
		name, hex, _ := strings.Cut(sc.Text(), " ")
		v, err := strconv.ParseUint(strings.TrimPrefix(hex, "0x"), 16, 64)
		require.NoError(t, err, "%s: bad line %q", exe, sc.Text())
		addrs[name] = v
	}
	ms, err := procfs.ParseMaps(bytes.NewReader(maps))
	require.NoError(t, err)
	return addrs, ms
}

// TestCompiled resolves run-time function pointers of a PIE and a non-PIE
// executable and of a shared library (each loaded at a random base) to
// names, the way the tracer does: maps, file offset, symbol table.
func TestCompiled(t *testing.T) {
	b := build(t)
	c := NewCache(CacheConfig{MaxTables: 8})
	for _, exe := range []string{b.pie, b.exe} {
		t.Run(filepath.Base(exe), func(t *testing.T) {
			addrs, ms := run(t, exe)
			require.Len(t, addrs, 7, "addresses printed")
			for name, addr := range addrs {
				m, ok := ms.Find(addr)
				require.True(t, ok, "%s at %#x: mapping %+v, %v", name, addr, m, ok)
				require.NotZero(t, m.Perms&procfs.PermExec, "%s at %#x: mapping %+v, %v", name, addr, m, ok)
				wantFile := b.lib
				if name == "exe_func" || strings.HasPrefix(name, "_Z6") {
					wantFile = exe
				}
				require.Equal(t, wantFile, m.Path, "the file of %s at %#x", name, addr)
				o := m.FileOffset(addr)
				open := func() (File, error) { return os.Open(m.Path) }
				tab, err := c.Table(FileID{Dev: m.Dev, Inode: m.Inode}, open)
				require.NoError(t, err)
				raw, ok := tab.LookupOffset(o)
				assert.Equal(t, name, raw, "%s: LookupOffset(%#x) = %q, %v", name, o, raw, ok)
				assert.True(t, ok, "%s: LookupOffset(%#x) = %q, %v", name, o, raw, ok)
				if name != "zsym" { // zsym has no size: its own address only
					raw, _ := tab.LookupOffset(o + 1)
					assert.Equal(t, name, raw, "%s: LookupOffset(%#x+1)", name, o)
				}
				want := name
				if d, ok := demangled[name]; ok {
					want = d
				}
				got, ok, err := c.Lookup(FileID{Dev: m.Dev, Inode: m.Inode}, o, open)
				assert.Equal(t, want, got, "%s: Lookup = %q, %v, %v; want %q", name, got, ok, err, want)
				assert.True(t, ok, "%s: Lookup = %q, %v, %v; want %q", name, got, ok, err, want)
				assert.NoError(t, err, "%s: Lookup = %q, %v, %v; want %q", name, got, ok, err, want)
				a, ok := tab.Address(name)
				assert.Equal(t, o, a, "Address(%s) = %#x, %v; want %#x", name, a, ok, o)
				assert.True(t, ok, "Address(%s) = %#x, %v; want %#x", name, a, ok, o)
			}
		})
	}
}

func TestCompiledIFUNC(t *testing.T) {
	b := build(t)
	tab, err := Open(b.lib, Limits{})
	require.NoError(t, err)
	o, ok := tab.Address("fast")
	require.True(t, ok, "no symbol fast")
	name, _ := tab.LookupOffset(o)
	assert.Equal(t, "fast", name, "LookupOffset(Address(fast))")
}

func TestCompiledStripped(t *testing.T) {
	b := build(t)
	full, err := Open(b.lib, Limits{})
	require.NoError(t, err)
	tab, err := Open(b.libStripped, Limits{})
	require.NoError(t, err)
	assert.False(t, full.Stripped(), "Stripped: full %v, stripped %v", full.Stripped(), tab.Stripped())
	assert.True(t, tab.Stripped(), "Stripped: full %v, stripped %v", full.Stripped(), tab.Stripped())
	for _, name := range []string{"lib_add", "_Z9vectorAddPfS_S_i", "zsym", "fast", "lib_addr"} {
		want, _ := full.Address(name)
		got, ok := tab.Address(name)
		assert.Equal(t, want, got, "stripped Address(%s) = %#x, %v; want %#x", name, got, ok, want)
		assert.True(t, ok, "stripped Address(%s) = %#x, %v; want %#x", name, got, ok, want)
	}
	local, ok := full.Address("lib_local")
	require.True(t, ok, "lib_local: in the full library %v, in the stripped one %v", ok, tab.Has("lib_local"))
	require.False(t, tab.Has("lib_local"), "lib_local: in the full library %v, in the stripped one %v", ok, tab.Has("lib_local"))
	name, ok := tab.LookupOffset(local)
	assert.False(t, ok, "stripped LookupOffset(lib_local) = %q", name)

	// A stripped executable exports nothing: ErrNoSymbols.
	_, err = Open(b.pieStripped, Limits{})
	assert.ErrorIs(t, err, ErrNoSymbols, "stripped executable")
	assert.ErrorContains(t, err, b.pieStripped, "stripped executable")
	c := NewCache(CacheConfig{MaxTables: 2})
	_, _, err = c.Lookup(FileID{Inode: 1}, 0x1000, func() (File, error) { return os.Open(b.pieStripped) })
	assert.ErrorIs(t, err, ErrNoSymbols, "stripped executable through a Cache")
	assert.ErrorContains(t, err, b.pieStripped+" (dev 0:0 inode 1): ", "stripped executable through a Cache")
}
