package uprobe

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// The pclntab reader finds every function debug/gosym's table holds, at
// the same bounds, and gives the same source file for the code of each,
// inlined code included: in this test binary and in testdata/gotls built
// with each toolchain the machine has, stripped, and for the other
// architecture (arm64's pc quantum is 4 bytes, x86-64's 1). (Go
// 1.16–1.19 tables are read by the same code with other offsets; no such
// toolchain is here.)
func TestPclntabAgreesWithGosym(t *testing.T) {
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	exes := map[string]string{
		"test binary":                   os.Args[0],
		"gotls, stripped":               buildGo(t, "-s -w"),
		"gotls, stripped, for " + other: buildGoFor(t, other, "local", "-s -w"),
	}
	for _, release := range testutil.OtherGoReleases {
		exes[release+", stripped"] = buildGoWith(t, release, "-s -w")
	}
	for name, exe := range exes {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(exe)
			require.NoError(t, err)
			defer f.Close()
			ef, err := elf.NewFile(f)
			require.NoError(t, err)
			data, err := ef.Section(".gopclntab").Data()
			require.NoError(t, err)
			ref, err := gosym.NewTable(nil, gosym.NewLineTable(data, ef.Section(".text").Addr))
			require.NoError(t, err)

			tab, release, err := goTable(f, ef)
			require.NoError(t, err)
			defer release()
			require.Equal(t, len(ref.Funcs), tab.nfunc, "functions")
			wanted := map[string]bool{}
			for _, fn := range ref.Funcs {
				wanted[fn.Name] = true
			}
			got := tab.lookup(wanted)
			checked, files := 0, 0
			for _, fn := range ref.Funcs {
				if fn.End <= fn.Entry {
					continue // an alias of no code (the race runtime's C++): not looked up, as before
				}
				g, ok := got[fn.Name]
				require.True(t, ok, "%s not found", fn.Name)
				if g.entry != fn.Entry {
					continue // a name twice in the table: lookup gives the first
				}
				require.Equal(t, fn.End, g.end, "%s's end", fn.Name)
				checked++
				// A function of no compilation unit (cgo's crosscall1,
				// assembled from C, in an arm64 binary) has no file, as
				// the runtime reads it; debug/gosym adds its unit offset,
				// ^0, to the file's index and wraps round to the first
				// unit's files.
				if cu, ok := tab.funcField(g.index, 8); ok && cu == ^uint32(0) {
					_, ok := tab.fileAt(g, fn.Entry)
					require.False(t, ok, "%s: a file, of no compilation unit", fn.Name)
					continue
				}
				// The file of every 16th instruction byte of the function.
				for pc := fn.Entry; pc < fn.End; pc += 16 {
					want, _, _ := ref.PCToLine(pc)
					file, ok := tab.fileAt(g, pc)
					if want == "" {
						continue
					}
					require.True(t, ok, "%s+%#x: no file, want %s", fn.Name, pc-fn.Entry, want)
					require.Equal(t, want, file, "%s+%#x", fn.Name, pc-fn.Entry)
					files++
				}
			}
			require.Greater(t, checked, 1000, "functions checked")
			require.Greater(t, files, 10000, "PCs checked")
		})
	}
}

// synthPclntab writes a Go 1.20 pclntab of two functions, main.a at
// text+0x0 and main.b at text+0x10 to text+0x30, whose code comes from
// a.go but for main.b's from +0x8 on, which comes from b.go (inlined).
func synthPclntab() []byte {
	le := binary.LittleEndian
	var names, cutab, files, pctab, funcs bytes.Buffer
	names.WriteString("main.a\x00main.b\x00")
	files.WriteString("a.go\x00b.go\x00")
	cutab.Write(le.AppendUint32(le.AppendUint32(nil, 0), 5)) // file 0: a.go, 1: b.go
	// pc-value tables: (zig-zag value delta, pc delta) varint pairs, from
	// -1; a zero value delta ends them.
	pctab.WriteByte(0)                       // off 0: unused
	pctab.Write([]byte{2, 0x10, 0})          // off 1: main.a: 0 for 0x10
	pctab.Write([]byte{2, 0x08, 2, 0x18, 0}) // off 4: main.b: 0 for 8, 1 for 0x18
	fn := func(entryOff, nameOff, pcfile uint32) uint32 {
		at := uint32(funcs.Len())
		for _, v := range []uint32{entryOff, nameOff, 0, 0, 0, pcfile, 0, 0, 0, 0, 0} {
			funcs.Write(le.AppendUint32(nil, v))
		}
		return at
	}
	// The function table, then the _funcs after it.
	const nfunc = 2
	tabSize := uint32((2*nfunc + 1) * 4)
	a := fn(0x0, 0, 1) + tabSize
	b := fn(0x10, 7, 4) + tabSize
	var pcln bytes.Buffer
	for _, v := range []uint32{0x0, a, 0x10, b, 0x30} {
		pcln.Write(le.AppendUint32(nil, v))
	}
	pcln.Write(funcs.Bytes())

	header := 8 + 8*8
	var out []byte
	out = le.AppendUint32(out, 0xfffffff1)
	out = append(out, 0, 0, 1, 8)
	offs := []int{header, header + names.Len(), header + names.Len() + cutab.Len(),
		header + names.Len() + cutab.Len() + files.Len(), header + names.Len() + cutab.Len() + files.Len() + pctab.Len()}
	for _, v := range []uint64{nfunc, 2, 0, uint64(offs[0]), uint64(offs[1]), uint64(offs[2]), uint64(offs[3]), uint64(offs[4])} {
		out = le.AppendUint64(out, v)
	}
	for _, b := range []*bytes.Buffer{&names, &cutab, &files, &pctab, &pcln} {
		out = append(out, b.Bytes()...)
	}
	return out
}

func TestPclntabSynthetic(t *testing.T) {
	const text = 0x401000
	tab, err := parsePclntab(synthPclntab(), text)
	require.NoError(t, err)
	got := tab.lookup(map[string]bool{"main.a": true, "main.b": true, "main.c": true})
	require.Equal(t, map[string]pclnFunc{
		"main.a": {goFunc{text, text + 0x10}, 0},
		"main.b": {goFunc{text + 0x10, text + 0x30}, 1},
	}, got)
	for _, tt := range []struct {
		fn   string
		pc   uint64
		want string
		ok   bool
	}{
		{"main.a", text, "a.go", true},
		{"main.a", text + 0xf, "a.go", true},
		{"main.b", text + 0x10, "a.go", true},
		{"main.b", text + 0x17, "a.go", true},
		{"main.b", text + 0x18, "b.go", true},
		{"main.b", text + 0x2f, "b.go", true},
		{"main.b", text + 0x30, "", false}, // past the function
		{"main.a", text + 0x10, "", false},
	} {
		file, ok := tab.fileAt(got[tt.fn], tt.pc)
		require.Equal(t, tt.ok, ok, "%s at %#x", tt.fn, tt.pc)
		require.Equal(t, tt.want, file, "%s at %#x", tt.fn, tt.pc)
	}
	for _, bad := range [][]byte{nil, synthPclntab()[:20], append([]byte{0xfb, 0xff, 0xff, 0xff}, synthPclntab()[4:]...)} {
		_, err := parsePclntab(bad, text)
		require.Error(t, err, "% x", bad[:min(len(bad), 8)])
	}
}

// FuzzPclntab: whatever a .gopclntab holds, reading it neither panics
// nor runs without bound.
func FuzzPclntab(f *testing.F) {
	f.Add(synthPclntab(), uint64(0x401000))
	f.Add([]byte{0xf1, 0xff, 0xff, 0xff, 0, 0, 1, 8, 2, 0, 0, 0, 0, 0, 0, 0}, uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, text uint64) {
		tab, err := parsePclntab(data, text)
		if err != nil {
			return
		}
		funcs := tab.lookup(map[string]bool{"main.a": true, "main.b": true, "runtime.memmove": true})
		for i := 0; i < min(tab.nfunc, 64); i++ {
			fn := pclnFunc{goFunc{tab.entry(i), tab.entry(i + 1)}, i}
			tab.fileAt(fn, fn.entry)
			tab.fileAt(fn, fn.entry+(fn.end-fn.entry)/2)
		}
		for _, fn := range funcs {
			tab.fileAt(fn, fn.entry)
		}
	})
}

// BenchmarkPclntab: finding testing.(*T).Run and runtime.memmove
// in a Go binary's pclntab (this test binary's), with debug/gosym's table
// (what goFuncs used) and with the pclntab reader, in one run: time and
// bytes allocated per lookup, and their ratios.
func BenchmarkPclntab(b *testing.B) {
	f, err := os.Open(os.Args[0])
	require.NoError(b, err)
	defer f.Close()
	ef, err := elf.NewFile(f)
	require.NoError(b, err)
	wanted := map[string]bool{"testing.(*T).Run": true, "runtime.memmove": true}
	measure := func(lookup func()) (ns, bytes float64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		const n = 20
		for range n {
			lookup()
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		return float64(elapsed.Nanoseconds()) / n, float64(after.TotalAlloc-before.TotalAlloc) / n
	}
	gosymNs, gosymBytes := measure(func() {
		data, err := ef.Section(".gopclntab").Data()
		require.NoError(b, err)
		tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, ef.Section(".text").Addr))
		require.NoError(b, err)
		for name := range wanted {
			require.NotNil(b, tab.LookupFunc(name))
		}
	})
	oursNs, oursBytes := measure(func() {
		funcs, err := goFuncs(f, ef, wanted)
		require.NoError(b, err)
		require.Len(b, funcs, len(wanted))
	})
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(gosymNs, "gosym-ns/lookup")
	b.ReportMetric(oursNs, "ours-ns/lookup")
	b.ReportMetric(gosymBytes, "gosym-B/lookup")
	b.ReportMetric(oursBytes, "ours-B/lookup")
	b.ReportMetric(gosymNs/oursNs, "gosym/ours-time")
	b.ReportMetric(gosymBytes/oursBytes, "gosym/ours-bytes")
}

// Only names a Go function can have send a lookup to the pclntab.
func TestIsGoName(t *testing.T) {
	for name, want := range map[string]bool{
		"crypto/tls.(*Conn).Read": true, "main.main": true, "runtime.memmove": true,
		"cudaLaunchKernel": false, "SSL_write": false, "_ZN4core3fmt5write17h": false,
	} {
		require.Equal(t, want, isGoName(name), name)
	}
}

// A Go binary cut short while its mapped pclntab is read (cp over it, say)
// makes an error, not a fault that ends the process.
func TestPclntabFileCutShort(t *testing.T) {
	testutil.Native(t, "the kernel's SIGBUS address, which QEMU leaves out")
	src, err := os.ReadFile(buildGo(t, "-s -w"))
	require.NoError(t, err)
	exe := filepath.Join(t.TempDir(), "gotls")
	require.NoError(t, os.WriteFile(exe, src, 0o755))
	f, err := os.Open(exe)
	require.NoError(t, err)
	defer f.Close()
	ef, err := elf.NewFile(f)
	require.NoError(t, err)
	wanted := map[string]bool{"crypto/tls.(*Conn).Read": true}
	funcs, err := goFuncs(f, ef, wanted)
	require.NoError(t, err)
	require.Len(t, funcs, 1)

	err = faultSafe(func() error {
		tab, release, err := goTable(f, ef)
		require.NoError(t, err)
		defer release()
		require.NoError(t, os.Truncate(exe, 0))
		tab.lookup(wanted) // past the file's end now
		return nil
	})
	require.ErrorContains(t, err, "the file changed while it was read")
}
