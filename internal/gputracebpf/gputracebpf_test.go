package gputracebpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// encode writes e as the BPF side lays out struct event (and, for
// KindFuncName, struct name_event with name NUL-padded to nameLen bytes,
// or not terminated when name fills it; for KindGraphExecNodeParams,
// struct wide_event). It returns the record.
func encode(e Event, name string) []byte {
	size := EventSize
	switch e.Kind {
	case KindFuncName:
		size = NameEventSize
	case KindGraphExecNodeParams:
		size = WideEventSize
	}
	b := make([]byte, size)
	le := binary.LittleEndian
	le.PutUint64(b[0:], e.TS)
	le.PutUint32(b[8:], e.PID)
	le.PutUint32(b[12:], e.TID)
	le.PutUint16(b[16:], uint16(e.Kind))
	le.PutUint16(b[18:], uint16(e.API))
	le.PutUint32(b[20:], uint32(e.Device))
	le.PutUint32(b[24:], uint32(e.Ret))
	le.PutUint32(b[28:], 0xdeadbeef) // units, the lanes' framing: must be ignored
	for i, a := range e.A {
		le.PutUint64(b[32+8*i:], a)
	}
	if e.Kind == KindFuncName {
		copy(b[EventSize:], name)
	}
	if e.Kind == KindGraphExecNodeParams {
		le.PutUint64(b[EventSize:], e.Wide)
		le.PutUint64(b[EventSize+8:], 0xdeadbeef) // padding: must be ignored
	}
	return b
}

// TestLayout pins the record sizes to the generated Go mirrors of the C
// structs, so that a change to gputrace.bpf.c without a regenerate (or the
// reverse) fails here.
func TestLayout(t *testing.T) {
	assert.Equal(t, EventSize, binary.Size(gputraceEvent{}), "the size of struct event, against EventSize")
	assert.Equal(t, NameEventSize, binary.Size(gputraceNameEvent{}), "the size of struct name_event, against NameEventSize")
	assert.Equal(t, WideEventSize, binary.Size(gputraceWideEvent{}), "the size of struct wide_event, against WideEventSize")
	assert.Equal(t, uintptr(EventSize), reflect.TypeOf(gputraceWideEvent{}).Field(2).Offset, "where Decode reads a wide record's node")
	// The offsets Decode reads, against the generated struct.
	var ev gputraceEvent
	for _, f := range []struct {
		name string
		off  uintptr
		want uintptr
	}{
		{"ts", reflect.TypeOf(ev).Field(1).Offset, 0},
		{"pid", reflect.TypeOf(ev).Field(2).Offset, 8},
		{"tid", reflect.TypeOf(ev).Field(3).Offset, 12},
		{"kind", reflect.TypeOf(ev).Field(4).Offset, 16},
		{"api", reflect.TypeOf(ev).Field(5).Offset, 18},
		{"device", reflect.TypeOf(ev).Field(6).Offset, 20},
		{"ret", reflect.TypeOf(ev).Field(7).Offset, 24},
		{"a", reflect.TypeOf(ev).Field(9).Offset, 32},
	} {
		assert.Equal(t, f.want, f.off, "the offset of field %s (actual), where Decode reads it (expected)", f.name)
	}
}

func TestDecodeKinds(t *testing.T) {
	const (
		fn     = 0x5555_5555_1234
		stream = 0x1000_0100
	)
	// grid (4, 2, 3), block (128, 2, 1): a1 = x|y<<32, a2 = gz|bz<<32, a3 = bx|by<<32.
	launchA := [6]uint64{fn, 4 | 2<<32, 3 | 1<<32, 128 | 2<<32, 4096, stream}
	tests := []struct {
		name string
		in   Event
		// The accessors' values for the kind; the kind-aware ones
		// (kindAware) are 0 where not given.
		grid, block [3]uint32
		want        map[string]uint64
	}{
		{name: "launch", in: Event{Kind: KindLaunch, API: API(gputraceApiAPI_cudaLaunchKernel), A: launchA},
			grid: [3]uint32{4, 2, 3}, block: [3]uint32{128, 2, 1}, want: map[string]uint64{"Func": fn, "SharedMem": 4096, "Stream": stream}},
		{name: "launch max dims", in: Event{Kind: KindLaunch, API: API(gputraceApiAPI_cuLaunchKernel),
			A: [6]uint64{1, 0x7fffffff | 0xffff<<32, 0xffff | 64<<32, 1024 | 1024<<32, 0xffffffff, 0}},
			grid: [3]uint32{0x7fffffff, 0xffff, 0xffff}, block: [3]uint32{1024, 1024, 64}, want: map[string]uint64{"Func": 1, "SharedMem": 0xffffffff}},
		{name: "memcpy", in: Event{Kind: KindMemcpy, API: API(gputraceApiAPI_cudaMemcpyAsync),
			A: [6]uint64{0xd00000000, 0x7fff0000, 1 << 20, MemcpyHostToDevice, stream}},
			want: map[string]uint64{"Bytes": 1 << 20, "CopyKind": MemcpyHostToDevice, "Stream": stream}},
		{name: "memset", in: Event{Kind: KindMemset, API: API(gputraceApiAPI_cudaMemsetAsync),
			A: [6]uint64{0xd00000000, 0xff, 1 << 10, 0, stream}}, want: map[string]uint64{"Bytes": 1 << 10, "Stream": stream}},
		{name: "malloc", in: Event{Kind: KindMalloc, API: API(gputraceApiAPI_cudaMallocAsync), Ret: 2,
			A: [6]uint64{0, 1 << 30, 12345, 0, stream}}, want: map[string]uint64{"Pointer": 0, "Bytes": 1 << 30, "Duration": 12345, "Stream": stream}},
		{name: "free", in: Event{Kind: KindFree, API: API(gputraceApiAPI_cuMemFreeV2), A: [6]uint64{0xd00100000}},
			want: map[string]uint64{"Pointer": 0xd00100000}},
		{name: "sync", in: Event{Kind: KindSync, API: API(gputraceApiAPI_cudaStreamSynchronize), Ret: 100,
			A: [6]uint64{stream, 2_000_000}}, want: map[string]uint64{"Waited": stream, "Duration": 2_000_000}},
		{name: "copy done", in: Event{Kind: KindCopyDone, API: API(gputraceApiAPI_cudaMemcpy),
			A: [6]uint64{stream, 3_000, 0, MemcpyDeviceToHost}}, want: map[string]uint64{"Stream": stream, "Duration": 3_000, "CopyKind": MemcpyDeviceToHost}},
		{name: "event record", in: Event{Kind: KindEventRecord, API: API(gputraceApiAPI_cudaEventRecord), A: [6]uint64{0x10000800, stream}},
			want: map[string]uint64{"EventHandle": 0x10000800, "Stream": stream}},
		{name: "stream wait", in: Event{Kind: KindStreamWait, API: API(gputraceApiAPI_cudaStreamWaitEvent), A: [6]uint64{stream, 0x10000800}},
			want: map[string]uint64{"EventHandle": 0x10000800, "Stream": stream}},
		{name: "event query", in: Event{Kind: KindEventQuery, API: API(gputraceApiAPI_cudaEventQuery), A: [6]uint64{0x10000800}},
			want: map[string]uint64{"EventHandle": 0x10000800}},
		{name: "set device", in: Event{Kind: KindSetDevice, API: API(gputraceApiAPI_cudaSetDevice), Device: 7, A: [6]uint64{7}}},
		{name: "negative device", in: Event{Kind: KindSetDevice, API: API(gputraceApiAPI_cudaSetDevice), Device: -1,
			A: [6]uint64{0xffffffffffffffff}}},
		{name: "graph launch", in: Event{Kind: KindGraphLaunch, API: API(gputraceApiAPI_cuGraphLaunch), A: [6]uint64{0x10000900, stream}},
			want: map[string]uint64{"Stream": stream, "GraphExec": 0x10000900}},
		{name: "kernel handle", in: Event{Kind: KindKernelHandle, API: API(gputraceApiAPI_cudaGetKernel), A: [6]uint64{0xabc, fn}},
			want: map[string]uint64{"KernelHandle.kernel": 0xabc, "KernelHandle.hostFunc": fn}},
		{name: "capture", in: Event{Kind: KindCaptureBegin, API: API(gputraceApiAPI_cudaStreamBeginCapture), A: [6]uint64{stream}},
			want: map[string]uint64{"Stream": stream}},
		{name: "capture to graph", in: Event{Kind: KindCaptureBegin, API: API(gputraceApiAPI_cuStreamBeginCaptureToGraph), A: [6]uint64{stream, 0x6100}},
			want: map[string]uint64{"Stream": stream, "Graph": 0x6100}},
		{name: "capture end", in: Event{Kind: KindCaptureEnd, API: API(gputraceApiAPI_cudaStreamEndCapture), A: [6]uint64{stream, 0x6100}},
			want: map[string]uint64{"Stream": stream, "Graph": 0x6100}},
		{name: "kernel node", in: Event{Kind: KindGraphKernelNode, API: API(gputraceApiAPI_cuGraphAddNode), A: [6]uint64{fn, 4 | 2<<32, 3 | 1<<32, 128 | 2<<32, 4096, 0x6100}},
			grid: [3]uint32{4, 2, 3}, block: [3]uint32{128, 2, 1}, want: map[string]uint64{"Func": fn, "SharedMem": 4096, "Graph": 0x6100}},
		{name: "kernel node made", in: Event{Kind: KindGraphNode, API: API(gputraceApiAPI_cudaGraphAddKernelNode), A: [6]uint64{0x6100, 0x9100}},
			want: map[string]uint64{"Graph": 0x6100, "GraphNode": 0x9100}},
		{name: "node params", in: Event{Kind: KindGraphNodeParams, API: API(gputraceApiAPI_hipGraphKernelNodeSetParams), A: [6]uint64{fn, 4 | 2<<32, 3 | 1<<32, 128 | 2<<32, 4096, 0x9100}},
			grid: [3]uint32{4, 2, 3}, block: [3]uint32{128, 2, 1}, want: map[string]uint64{"Func": fn, "SharedMem": 4096, "GraphNode": 0x9100}},
		{name: "exec node params", in: Event{Kind: KindGraphExecNodeParams, API: API(gputraceApiAPI_cuGraphExecKernelNodeSetParamsV2),
			A: [6]uint64{fn, 4 | 2<<32, 3 | 1<<32, 128 | 2<<32, 4096, 0x7100}, Wide: 0x9100},
			grid: [3]uint32{4, 2, 3}, block: [3]uint32{128, 2, 1}, want: map[string]uint64{"Func": fn, "SharedMem": 4096, "GraphExec": 0x7100, "GraphNode": 0x9100}},
		{name: "exec update", in: Event{Kind: KindGraphExecUpdate, API: API(gputraceApiAPI_cudaGraphExecUpdate), Ret: 910, A: [6]uint64{0x7100, 0x6100}},
			want: map[string]uint64{"GraphExec": 0x7100, "Graph": 0x6100}},
		{name: "unknown kind", in: Event{Kind: 0xffff, API: 0xffff, Ret: -1, A: [6]uint64{1, 2, 3, 4, 5, 6}}},
	}
	accessors := map[string]func(*Event) uint64{
		"Func": (*Event).Func, "SharedMem": (*Event).SharedMem, "Stream": (*Event).Stream, "Waited": (*Event).Waited,
		"Duration": (*Event).Duration, "Bytes": (*Event).Bytes, "CopyKind": (*Event).CopyKind, "Pointer": (*Event).Pointer,
		"EventHandle":           (*Event).EventHandle,
		"Graph":                 (*Event).Graph,
		"GraphExec":             (*Event).GraphExec,
		"GraphNode":             (*Event).GraphNode,
		"KernelHandle.kernel":   func(e *Event) uint64 { k, _ := e.KernelHandle(); return k },
		"KernelHandle.hostFunc": func(e *Event) uint64 { _, f := e.KernelHandle(); return f },
	}
	kindAware := []string{"Stream", "Duration", "Bytes", "EventHandle", "Graph", "GraphExec", "GraphNode"}
	seen := map[Kind]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.TS, in.PID, in.TID = 0x0123456789abcdef, 4242, 4343
			// A reused Event: a previous name must not survive.
			got := Event{Name: []byte("stale")}
			require.NoError(t, Decode(encode(in, ""), &got))
			require.Equal(t, in, got, "Decode")
			assert.Nil(t, got.Name, "Name = %q, want nil for kind %d", got.Name, got.Kind)
			if tc.grid != [3]uint32{} {
				assert.Equal(t, tc.grid, got.Grid(), "Grid()")
				assert.Equal(t, tc.block, got.Block(), "Block()")
			}
			for name, want := range tc.want {
				v := accessors[name](&got)
				assert.Equal(t, want, v, "%s() = %#x, want %#x", name, v, want)
			}
			for _, name := range kindAware {
				if _, given := tc.want[name]; !given {
					v := accessors[name](&got)
					assert.Zero(t, v, "%s() = %#x for kind %d, want 0", name, v, got.Kind)
				}
			}
		})
		seen[tc.in.Kind] = true
	}
	seen[KindFuncName] = true // TestDecodeName
	for k := KindLaunch; k <= KindKernelHandle; k++ {
		assert.True(t, seen[k], "kind %d has no Decode case", k)
	}
}

func TestDecodeName(t *testing.T) {
	long := strings.Repeat("x", nameLen) // fills the field: no NUL
	tests := []struct {
		name string
		raw  string // written at offset EventSize
		want string
	}{
		{"terminated", "_Z9vectorAddPfS_S_i", "_Z9vectorAddPfS_S_i"},
		{"garbage after NUL", "_Z4gemmv\x00leftover", "_Z4gemmv"},
		{"empty", "", ""},
		{"unterminated", long, long},
		{"terminated at the last byte", long[:nameLen-1], long[:nameLen-1]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := Event{TS: 1, PID: 2, TID: 3, Kind: KindFuncName, API: API(gputraceApiAPI___cudaRegisterFunction),
				A: [6]uint64{0x401000, 0}}
			b := encode(in, tc.raw)
			// Ring buffer samples can be longer than the record.
			for _, rec := range [][]byte{b, append(b, 0xaa, 0xbb, 0, 0, 0, 0, 0, 0)} {
				var got Event
				require.NoError(t, Decode(rec, &got))
				assert.Equal(t, tc.want, string(got.Name), "Name")
				assert.NotNil(t, got.Name, "Name is nil, want an empty or non-empty slice")
				if len(got.Name) > 0 {
					assert.Same(t, &rec[EventSize], &got.Name[0], "Name does not alias the record")
				}
				got.Name = nil
				assert.Equal(t, in, got, "header")
			}
		})
	}
	// A driver name: a1 = 1.
	var got Event
	in := Event{Kind: KindFuncName, API: API(gputraceApiAPI_cuModuleGetFunction), A: [6]uint64{0xf00, 1}}
	err := Decode(encode(in, "kern"), &got)
	assert.NoError(t, err, "driver name: %v, %+v", err, got)
	assert.Equal(t, "kern", string(got.Name), "driver name: %v, %+v", err, got)
	assert.Equal(t, uint64(1), got.A[1], "driver name: %v, %+v", err, got)
}

func TestDecodeShort(t *testing.T) {
	name := encode(Event{Kind: KindFuncName}, "abc")
	launch := encode(Event{Kind: KindLaunch}, "")
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"one byte", []byte{1}},
		{"header minus one", launch[:EventSize-1]},
		{"name record header only", name[:EventSize]},
		{"name record minus one", name[:NameEventSize-1]},
		{"wide record minus one", encode(Event{Kind: KindGraphExecNodeParams}, "")[:WideEventSize-1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e Event
			err := Decode(tc.b, &e)
			require.ErrorIs(t, err, ErrShort, "Decode(%d bytes)", len(tc.b))
		})
	}
	// Exactly the size is enough.
	var e Event
	assert.NoError(t, Decode(launch, &e), "Decode(%d bytes)", len(launch))
}

func TestDecodeDoesNotAllocate(t *testing.T) {
	launch := encode(Event{Kind: KindLaunch, A: [6]uint64{1, 2, 3, 4, 5, 6}}, "")
	name := encode(Event{Kind: KindFuncName}, "_Z9vectorAddPfS_S_i")
	var e Event
	for _, b := range [][]byte{launch, name} {
		n := testing.AllocsPerRun(100, func() { _ = Decode(b, &e) })
		assert.Equal(t, 0.0, n, "Decode of kind %d allocates %v times per record", binary.LittleEndian.Uint16(b[16:]), n)
	}
}

// goAPIConsts parses the generated gputrace_x86_bpfel.go for the values of
// its gputraceApi constants, by name.
func goAPIConsts(t *testing.T) map[string]uint64 {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "gputrace_x86_bpfel.go", nil, 0)
	require.NoError(t, err)
	out := map[string]uint64{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "gputraceApi" {
				continue
			}
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				require.True(t, ok, "%s: not a literal", n.Name)
				v, err := strconv.ParseUint(lit.Value, 0, 64)
				require.NoError(t, err)
				out[n.Name] = v
			}
		}
	}
	require.NotEmpty(t, out, "no gputraceApi constants in gputrace_x86_bpfel.go")
	return out
}

// cAPIEnum parses enum api in gputrace.bpf.c: the C symbol (without API_) of
// each value.
func cAPIEnum(t *testing.T) map[uint64]string {
	t.Helper()
	src, err := os.ReadFile("gputrace.bpf.c")
	require.NoError(t, err)
	_, body, ok := bytes.Cut(src, []byte("enum api {"))
	require.True(t, ok, "no enum api in gputrace.bpf.c")
	body, _, _ = bytes.Cut(body, []byte("};"))
	re := regexp.MustCompile(`^\s*API_(\w+)\s*(?:=\s*(\d+))?\s*,?\s*(?://.*)?$`)
	out := map[uint64]string{}
	next := uint64(0)
	for line := range strings.Lines(string(body)) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		m := re.FindStringSubmatch(line)
		require.NotNil(t, m, "gputrace.bpf.c: cannot read enum api line %q", line)
		if m[2] != "" {
			next, _ = strconv.ParseUint(m[2], 10, 64)
		}
		out[next] = m[1]
		next++
	}
	return out
}

// TestProbesCoverEnum: every value of enum api but MAX is probed exactly
// once, under the symbol the C enum names it for, and every probe's API
// is such a value.
func TestProbesCoverEnum(t *testing.T) {
	consts := goAPIConsts(t)
	enum := cAPIEnum(t)
	maxAPI, ok := consts["gputraceApiAPI_MAX"]
	require.True(t, ok, "no gputraceApiAPI_MAX")
	require.Equal(t, maxAPI, uint64(gputraceApiAPI_MAX), "MAX compiled (actual), parsed (expected)")
	assert.Len(t, enum, len(consts), "gputrace.bpf.c's enum api has %d values, gputrace_x86_bpfel.go %d: regenerate (go generate)", len(enum), len(consts))
	assert.Equal(t, "MAX", enum[maxAPI], "value %d is API_%s in gputrace.bpf.c, MAX in gputrace_x86_bpfel.go: regenerate", maxAPI, enum[maxAPI])
	byAPI := map[API][]Probe{}
	for _, p := range Probes {
		byAPI[p.API] = append(byAPI[p.API], p)
	}
	values := map[uint64]string{}
	for name, v := range consts {
		if name == "gputraceApiAPI_MAX" {
			continue
		}
		prev, dup := values[v]
		assert.False(t, dup, "%s and %s share value %d", prev, name, v)
		values[v] = name
		ps := byAPI[API(v)]
		if assert.Len(t, ps, 1, "%s (%d) is in %d Probes, want 1", name, v, len(ps)) {
			assert.Equal(t, enum[v], ps[0].Symbol, "value %d is API_%s in gputrace.bpf.c but probes %s", v, enum[v], ps[0].Symbol)
		}
		assert.NotZero(t, v, "%s = %d is outside 1..MAX-1", name, v)
		assert.Less(t, v, maxAPI, "%s = %d is outside 1..MAX-1", name, v)
	}
	symbols := map[string]bool{}
	for _, p := range Probes {
		_, ok := values[uint64(p.API)]
		assert.True(t, ok, "probe %s has API %d, no gputraceApi value", p.Symbol, p.API)
		assert.False(t, symbols[p.Symbol], "symbol %s is probed twice", p.Symbol)
		symbols[p.Symbol] = true
		assert.Equal(t, p.Symbol, p.API.String(), "API(%d).String()", p.API)
		assert.NotEmpty(t, p.Entry, "probe %s has no Entry", p.Symbol)
	}
	assert.Len(t, Probes, int(maxAPI)-1, "%d Probes, %d API values", len(Probes), maxAPI-1)
	assert.Equal(t, "api(?)", API(0).String(), "unknown API name of 0")
	assert.Equal(t, "api(?)", API(maxAPI).String(), "unknown API name of MAX")
	for lib, anchor := range Anchors {
		found := false
		for _, p := range Probes {
			found = found || (p.Symbol == anchor && p.Library == lib)
		}
		assert.True(t, found, "anchor %s of %v is not a probed symbol of that library", anchor, lib)
	}
}

// TestLaunchProgramsKnowTheirAPI: the runtime launch programs, which
// write their API without reading the attach cookie, each probe the one
// symbol whose API they write (gputrace.bpf.c's calls of runtime_launch).
func TestLaunchProgramsKnowTheirAPI(t *testing.T) {
	src, err := os.ReadFile("gputrace.bpf.c")
	require.NoError(t, err)
	re := regexp.MustCompile(`int (\w+)\(struct pt_regs \*ctx\)\n\{\n\treturn runtime_launch\(ctx, API_(\w+), [01]\);`)
	writes := map[string]string{} // program → the symbol of the API it writes
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		writes[m[1]] = m[2]
	}
	require.Len(t, writes, 6, "runtime launch programs in gputrace.bpf.c")
	probed := map[string][]string{}
	for _, p := range Probes {
		if _, ok := writes[p.Entry]; ok {
			probed[p.Entry] = append(probed[p.Entry], p.Symbol)
		}
	}
	for prog, sym := range writes {
		assert.Equal(t, []string{sym}, probed[prog], "the symbols %s probes", prog)
	}
}

// The cookie readers of gputrace.bpf.c, in Go: api_of, stream_of (the 1-based
// register argument; arg() reads 1..6 and 0 otherwise) and copy_kind_of.
func bpfAPIOf(cookie uint64) uint32     { return uint32(cookie & 0xffff) }
func bpfStreamArg(cookie uint64) uint32 { return uint32((cookie >> 16) & 0xf) }
func bpfCopyKindOf(cookie uint64) int   { return int(uint32((cookie>>20)&0xf)) - 1 }

// bpfIsDriver is IS_DRIVER(api) of gputrace.bpf.c.
func bpfIsDriver(api uint32) bool {
	return api >= uint32(gputraceApiAPI_cuLaunchKernel) && api < uint32(gputraceApiAPI_hipLaunchKernel)
}

func TestCookieRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		p    Probe
		want uint64
	}{
		{Probe{API: 1, StreamArg: 0, CopyKind: NoCopyKind}, 1},
		{Probe{API: 0xffff, StreamArg: 6, CopyKind: NoCopyKind}, 0xffff | 6<<16},
		{Probe{API: 39, StreamArg: 4, CopyKind: MemcpyDefault}, 39 | 4<<16 | 5<<20},
		{Probe{API: 40, StreamArg: 0, CopyKind: MemcpyHostToHost}, 40 | 1<<20},
		{Probe{API: 6, CopyKind: NoCopyKind, SyncCopy: true}, 6 | 1<<24},
	} {
		got := tc.p.Cookie()
		assert.Equal(t, tc.want, got, "%+v.Cookie() = %#x, want %#x", tc.p, got, tc.want)
	}
	for _, p := range Probes {
		c := p.Cookie()
		assert.Equal(t, uint32(p.API), bpfAPIOf(c), "%s: api_of", p.Symbol)
		assert.Equal(t, uint32(p.StreamArg), bpfStreamArg(c), "%s: the argument stream_of reads", p.Symbol)
		assert.LessOrEqual(t, p.StreamArg, uint8(6), "%s: stream argument %d is not in a register: arg() returns 0", p.Symbol, p.StreamArg)
		assert.Equal(t, int(p.CopyKind), bpfCopyKindOf(c), "%s: copy_kind_of", p.Symbol)
		assert.Zero(t, c>>25, "%s: cookie %#x has bits above 24", p.Symbol, c)
		// sync_copy reads bit 24; a synchronous copy has the return probe
		// that makes its KIND_COPY_DONE record, and no stream argument.
		assert.Equal(t, p.SyncCopy, c>>24&1 == 1, "%s: sync_copy", p.Symbol)
		if p.SyncCopy {
			assert.NotEmpty(t, p.Return, "%s: a synchronous copy needs its return probe and takes no stream", p.Symbol)
			assert.Zero(t, p.StreamArg, "%s: a synchronous copy needs its return probe and takes no stream", p.Symbol)
		}
		assert.Equal(t, p.Library == Driver, bpfIsDriver(uint32(p.API)), "%s: library %v but IS_DRIVER(%d) = %v, API.Driver() = %v",
			p.Symbol, p.Library, p.API, bpfIsDriver(uint32(p.API)), p.API.Driver())
		assert.Equal(t, p.Library == Driver, p.API.Driver(), "%s: library %v but IS_DRIVER(%d) = %v, API.Driver() = %v",
			p.Symbol, p.Library, p.API, bpfIsDriver(uint32(p.API)), p.API.Driver())
		// Only the driver's copies carry a direction; driver_memcpy turns
		// "none" into MEMCPY_DEFAULT, runtime_memcpy reads the argument.
		isDriverCopy := p.Library == Driver && strings.HasPrefix(p.Symbol, "cuMemcpy")
		assert.Equal(t, isDriverCopy, p.CopyKind != NoCopyKind, "%s: CopyKind %d", p.Symbol, p.CopyKind)
		assert.GreaterOrEqual(t, p.CopyKind, int8(NoCopyKind), "%s: CopyKind %d out of range", p.Symbol, p.CopyKind)
		assert.LessOrEqual(t, p.CopyKind, int8(MemcpyDefault), "%s: CopyKind %d out of range", p.Symbol, p.CopyKind)
		// The direction in the name.
		for sub, k := range map[string]int8{"HtoD": MemcpyHostToDevice, "DtoH": MemcpyDeviceToHost, "DtoD": MemcpyDeviceToDevice} {
			if isDriverCopy && strings.Contains(p.Symbol, sub) {
				assert.Equal(t, k, p.CopyKind, "%s: CopyKind", p.Symbol)
			}
		}
		// Async and per-thread-stream variants take a stream; plain copies
		// and launches pass theirs elsewhere.
		if strings.Contains(p.Symbol, "Async") {
			assert.NotZero(t, p.StreamArg, "%s: an async call without a stream argument", p.Symbol)
		}
	}
}

// programSections maps each loaded program of o to its ELF section's name.
func programSections(t *testing.T, o *Objects) map[*ebpf.Program]string {
	t.Helper()
	spec, err := loadGputrace()
	require.NoError(t, err)
	out := map[*ebpf.Program]string{}
	for name, ps := range spec.Programs {
		if p := o.Program(name); p != nil {
			out[p] = ps.SectionName
		}
	}
	return out
}

// TestLoad loads every program into the kernel, as perf-event uprobes and
// as uprobe_multi programs: the verifier accepts them all, and each Probe
// picks a uprobe for its entry and a uretprobe for its return.
func TestLoad(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "loading BPF programs needs root")
	}
	for _, multi := range []bool{false, true} {
		t.Run(map[bool]string{false: "uprobe", true: "uprobe_multi"}[multi], func(t *testing.T) {
			if multi {
				if err := features.HaveBPFLinkUprobeMulti(); err != nil {
					testutil.SkipOrFail(t, "uprobe_multi links: %v", err)
				}
			}
			objs, err := Load(LoadOptions{UprobeMulti: multi, Bench: true})
			if err != nil {
				var ve *ebpf.VerifierError
				if errors.As(err, &ve) {
					require.Failf(t, "verifier", "%+v", ve)
				}
				require.NoError(t, err)
			}
			defer objs.Close()
			checkPrograms(t, objs)
			if multi {
				checkMultiAttach(t, objs)
			}
		})
	}

	// The options reach the kernel objects: a lane per CPU (a power of
	// two of them, at most 16), sharing the ring bytes, each with its
	// header and the slack a name record runs on into.
	cpus, err := ebpf.PossibleCPU()
	require.NoError(t, err)
	laneBytes := func(o *Objects) uint32 {
		lanes := o.Lanes().MaxEntries()
		assert.Zero(t, lanes&(lanes-1), "%d lanes, want a power of two", lanes)
		assert.GreaterOrEqual(t, lanes, uint32(min(cpus, 16)), "%d lanes for %d CPUs", lanes, cpus)
		assert.Less(t, lanes, uint32(max(2*cpus, 2)), "%d lanes for %d CPUs", lanes, cpus)
		// The slack holds a stage's 16 launch records, copied at
		// once (lanes.bpf.h), more than the largest record.
		return o.Lanes().ValueSize() - 128 - 16*EventSize
	}
	objs, err := Load(LoadOptions{})
	require.NoError(t, err)
	defer objs.Close()
	assert.Equal(t, uint32(4096), laneBytes(objs), "bytes per lane, want a page by default")
	c, err := objs.Counters()
	require.NoError(t, err)
	assert.Equal(t, [NumCounters]uint64{}, c, "fresh counters")
	small, err := Load(LoadOptions{RingBytes: 1 << 20, WakeupBytes: 1 << 12})
	require.NoError(t, err)
	defer small.Close()
	assert.Equal(t, uint32(1<<20)/small.Lanes().MaxEntries(), laneBytes(small), "bytes per lane, want 1 MiB split")
	var wake, units uint64
	require.NoError(t, small.WakeupBytes.Get(&wake))
	assert.Equal(t, uint64(1<<12), wake, "wakeup_bytes")
	require.NoError(t, small.LaneUnits.Get(&units))
	assert.Equal(t, uint64(laneBytes(small)/16), units, "lane_units")
}

// TestLoadOnlyWhatIsUsed: a Source's load leaves out the benchmark
// programs, and the programs of the libraries it does not trace.
func TestLoadOnlyWhatIsUsed(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "loading BPF programs needs root")
	}
	objs, err := Load(LoadOptions{Libraries: []Library{HIP}})
	require.NoError(t, err)
	defer objs.Close()
	for _, name := range BenchPrograms {
		assert.Nil(t, objs.Program(name), "benchmark program %s loaded", name)
	}
	assert.Nil(t, objs.Program(gputraceProgDriverLaunchKernelEx), "a CUDA driver program loaded for HIP")
	for _, p := range Probes {
		if p.Library == HIP {
			assert.NotNil(t, objs.Program(p.Entry), "%s: entry program not loaded", p.Symbol)
		}
	}
	spec, err := loadGputrace()
	require.NoError(t, err)
	for name := range spec.Programs {
		assert.Equal(t, slices.Contains(Programs(HIP), name), objs.Program(name) != nil, "program %s loaded", name)
	}
}

// checkPrograms: every Probe's programs are loaded uprobes of the right
// section.
func checkPrograms(t *testing.T, objs *Objects) {
	t.Helper()
	sections := programSections(t, objs)
	for _, p := range Probes {
		entry := objs.Program(p.Entry)
		if !assert.NotNil(t, entry, "%s: nil entry program", p.Symbol) {
			continue
		}
		assert.Equal(t, ebpf.Kprobe, entry.Type(), "%s: the entry program's type", p.Symbol)
		assert.Equal(t, "uprobe", sections[entry], "%s: the entry program's section", p.Symbol)
		if p.Return == "" {
			continue
		}
		ret := objs.Program(p.Return)
		if !assert.NotNil(t, ret, "%s: nil return program", p.Symbol) {
			continue
		}
		assert.Equal(t, ebpf.Kprobe, ret.Type(), "%s: the return program's type", p.Symbol)
		assert.Equal(t, "uretprobe", sections[ret], "%s: the return program's section", p.Symbol)
	}
	for _, name := range BenchPrograms {
		p := objs.Program(name)
		if assert.NotNil(t, p, "bench program %s: %v", name, p) {
			assert.Equal(t, ebpf.Kprobe, p.Type(), "bench program %s: %v", name, p)
		}
	}
}

// checkMultiAttach attaches every probe program of objs, loaded for
// uprobe_multi, to a libc function nothing here calls (a program loaded
// for perf-event uprobes cannot be): each was loaded with the multi
// attach type. The links are closed at once.
func checkMultiAttach(t *testing.T, objs *Objects) {
	t.Helper()
	const libc, sym = "/lib/x86_64-linux-gnu/libc.so.6", "ptrace"
	ex, err := link.OpenExecutable(libc)
	if err != nil {
		t.Logf("no %s (%v): the attach type is not checked", libc, err)
		return
	}
	done := map[*ebpf.Program]bool{}
	try := func(p Probe, prog *ebpf.Program, ret bool) {
		if done[prog] {
			return
		}
		done[prog] = true
		opts := &link.UprobeMultiOptions{Cookies: []uint64{p.Cookie()}}
		attach := ex.UprobeMulti
		if ret {
			attach = ex.UretprobeMulti
		}
		l, err := attach([]string{sym}, prog, opts)
		if !assert.NoError(t, err, "%s: uprobe_multi attach (return %v)", p.Symbol, ret) {
			return
		}
		_ = l.Close()
	}
	for _, p := range Probes {
		try(p, objs.Program(p.Entry), false)
		if p.Return != "" {
			try(p, objs.Program(p.Return), true)
		}
	}
	// The bench programs stay perf-event uprobes.
	l, err := ex.UprobeMulti([]string{sym}, objs.Program(gputraceProgBenchEmpty), nil)
	if err == nil {
		_ = l.Close()
	}
	assert.Error(t, err, "bench_empty attached as uprobe_multi: it should stay a plain uprobe")
}

func FuzzDecode(f *testing.F) {
	f.Add(encode(Event{Kind: KindLaunch, A: [6]uint64{1, 2, 3, 4, 5, 6}}, ""))
	f.Add(encode(Event{Kind: KindFuncName, A: [6]uint64{1}}, "_Z9vectorAddPfS_S_i"))
	f.Add(encode(Event{Kind: KindFuncName}, strings.Repeat("y", nameLen)))
	f.Add(encode(Event{Kind: KindFuncName}, "")[:EventSize+10])
	f.Add([]byte{})
	f.Add(make([]byte, EventSize-1))
	f.Add(encode(Event{Kind: KindGraphExecNodeParams, A: [6]uint64{1, 2, 3, 4, 5, 6}, Wide: 7}, ""))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Event
		err := Decode(b, &e)
		if err != nil {
			require.ErrorIs(t, err, ErrShort)
			short := len(b) < EventSize ||
				(binary.LittleEndian.Uint16(b[16:]) == uint16(KindFuncName) && len(b) < NameEventSize) ||
				(binary.LittleEndian.Uint16(b[16:]) == uint16(KindGraphExecNodeParams) && len(b) < WideEventSize)
			require.True(t, short, "ErrShort for a %d-byte record", len(b))
			return
		}
		require.GreaterOrEqual(t, len(b), EventSize, "decoded a %d-byte record", len(b))
		// Every field is the little-endian value at its offset.
		le := binary.LittleEndian
		want := Event{TS: le.Uint64(b), PID: le.Uint32(b[8:]), TID: le.Uint32(b[12:]), Kind: Kind(le.Uint16(b[16:])),
			API: API(le.Uint16(b[18:])), Device: int32(le.Uint32(b[20:])), Ret: int32(le.Uint32(b[24:]))}
		for i := range want.A {
			want.A[i] = le.Uint64(b[32+8*i:])
		}
		if want.Kind == KindGraphExecNodeParams {
			want.Wide = le.Uint64(b[EventSize:])
		}
		name := e.Name
		e.Name = nil
		require.Equal(t, want, e, "Decode")
		if want.Kind != KindFuncName {
			require.Nil(t, name, "Name %q for kind %d", name, want.Kind)
		} else {
			field := b[EventSize:NameEventSize]
			require.LessOrEqual(t, len(name), nameLen, "Name %q from field %q", name, field)
			require.True(t, bytes.Equal(name, field[:len(name)]), "Name %q from field %q", name, field)
			require.Negative(t, bytes.IndexByte(name, 0), "Name %q from field %q", name, field)
			if len(name) < nameLen {
				require.Zero(t, field[len(name)], "Name %q from field %q", name, field)
			}
			if len(name) > 0 {
				require.Same(t, &b[EventSize], &name[0], "Name does not alias the record")
			}
		}
		// The success path allocates nothing: Name is a sub-slice.
		n := testing.AllocsPerRun(1, func() { _ = Decode(b, &e) })
		require.Equal(t, 0.0, n, "Decode allocated %v times", n)
	})
}

func BenchmarkDecode(b *testing.B) {
	for _, bc := range []struct {
		name string
		rec  []byte
	}{
		{"launch", encode(Event{TS: 1, PID: 2, TID: 3, Kind: KindLaunch, API: API(gputraceApiAPI_cudaLaunchKernel),
			A: [6]uint64{0x401000, 4 | 2<<32, 1 | 1<<32, 128 | 1<<32, 0, 0x10000100}}, "")},
		{"name", encode(Event{Kind: KindFuncName, API: API(gputraceApiAPI___cudaRegisterFunction), A: [6]uint64{0x401000}},
			"_ZN7cutlass6KernelINS_4gemm6kernel4GemmIEEEEvNT_6ParamsE")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var e Event
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.rec)))
			for b.Loop() {
				if err := Decode(bc.rec, &e); err != nil {
					require.NoError(b, err)
				}
			}
		})
	}
}
