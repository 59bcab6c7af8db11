package nodebpf

import (
	"cmp"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/bpfsource"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// load loads parts, skipping (failing in CI) where privilege or the
// kernel's support is missing, and attaches every program loaded.
func load(t *testing.T, o LoadOptions) *Objects {
	t.Helper()
	testutil.Native(t, "the kernel's BPF")
	objs, err := Load(o)
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		t.Fatalf("the verifier refused a program: %+v", ve)
	}
	if err != nil {
		if c := bpfsource.Classify("nodebpf", err); errors.Is(c, ebpf.ErrNotSupported) || bpfsource.Denied(err) {
			testutil.SkipOrFail(t, "%v", c)
		}
		require.NoError(t, err)
	}
	t.Cleanup(func() { assert.NoError(t, objs.Close()) })
	for _, p := range objs.Attach {
		l, err := link.AttachTracing(link.TracingOptions{Program: objs.Program(p.Name)})
		require.NoError(t, err, "attach %s to tp_btf/%s", p.Name, p.Tracepoint)
		t.Cleanup(func() { l.Close() })
	}
	return objs
}

// Every program of every part loads and attaches on this kernel (6.18:
// it has every optional tracepoint), the retransmit program that reads
// the tracepoint's err where the kernel has it (6.14+), and the user page
// fault program in place of the filemap fault ones (x86).
func TestLoadAttachAll(t *testing.T) {
	objs := load(t, LoadOptions{Parts: PartTCP | PartPageCache | PartFaults | PartSyscalls})
	var tracepoints []string
	for _, p := range objs.Attach {
		tracepoints = append(tracepoints, p.Tracepoint)
	}
	var want []string
	for _, p := range Programs {
		// page_fault_user replaces the filemap fault tracepoints (x86).
		if p.Name != nodeProgFilemapFault && p.Name != nodeProgFilemapMapPages {
			want = append(want, p.Tracepoint)
		}
	}
	assert.Equal(t, want, tracepoints)
	assert.Empty(t, objs.Missing, "tracepoints this kernel lacks")
	n, ok, err := tracepointArgs("tcp_retransmit_skb")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, n >= 3, objs.Loaded(nodeProgTcpRetransmitErr), "the program that reads err, on a tracepoint of %d arguments", n)
	assert.NotEqual(t, objs.Loaded(nodeProgTcpRetransmit), objs.Loaded(nodeProgTcpRetransmitErr), "one retransmit program")

	// A part left out loads none of its programs.
	tcp := load(t, LoadOptions{Parts: PartTCP})
	for _, p := range tcp.Attach {
		assert.Equal(t, PartTCP, p.Part, p.Name)
	}
	assert.Nil(t, tcp.Program(nodeProgSysEnter))
}

// The syscall programs fire: an open of a file named like a model, as
// large as its format's smallest, is watched in the kernel and told to
// user space with the file's identity as stat(2) gives it; its reads are
// counted, by file and by process; a file of another extension, or one
// too small, is not.
func TestOpenAndReadOfAModelFile(t *testing.T) {
	var min [NumFormats]uint64
	for i := range min {
		min[i] = 1 << 20
	}
	// WakeupBytes 1: every record wakes the reader.
	objs := load(t, LoadOptions{Parts: PartSyscalls | PartPageCache, MinSize: min, WakeupBytes: 1})
	rd, err := ringbuf.NewReader(objs.Ring())
	require.NoError(t, err)
	defer rd.Close()

	dir := t.TempDir()
	write := func(name string, size int) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, make([]byte, size), 0o600))
		return p
	}
	small := write("tiny.safetensors", 4096)
	other := write("weights.txt", 2<<20)
	model := write("Model-00001.SafeTensors", 2<<20) // any case
	for _, p := range []string{small, other} {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NotEmpty(t, b)
	}
	f, err := os.Open(model)
	require.NoError(t, err)
	defer f.Close()
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(int(f.Fd()), &st))
	buf := make([]byte, 256<<10)
	var read int64
	for range 3 {
		n, err := f.Read(buf)
		require.NoError(t, err)
		read += int64(n)
	}

	// The programs see every process of the node: only this one's
	// records and counts are the test's. Its one record is the model's
	// open (the other files made none).
	self := uint32(os.Getpid())
	want := FileKey{Dev: KernelDev(st.Dev), Ino: st.Ino}
	var opens []OpenRecord
	for deadline := time.Now().Add(5 * time.Second); ; {
		rd.SetDeadline(deadline)
		rec, err := rd.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		require.NoError(t, err)
		var o OpenRecord
		require.NoError(t, DecodeOpen(rec.RawSample, &o))
		if o.PID == self {
			o.Name = append([]byte(nil), o.Name...)
			opens = append(opens, o)
			// Past the model's open, wait only a little for a record of
			// the others.
			deadline = time.Now().Add(200 * time.Millisecond)
		}
	}
	require.Len(t, opens, 1, "records of this process's opens: %+v", opens)
	o := opens[0]
	assert.Equal(t, FormatSafetensors, o.Format)
	assert.Equal(t, "Model-00001.SafeTensors", string(o.Name))
	assert.Equal(t, want, o.File)
	assert.Equal(t, uint64(2<<20), o.Size)

	var stats *FileStats
	require.NoError(t, objs.EachFile(func(k FileKey, s *FileStats) {
		if k == want {
			c := *s
			stats = &c
		}
	}))
	require.NotNil(t, stats, "the model is not watched")
	assert.Equal(t, uint64(read), stats.ReadBytes)
	assert.Equal(t, uint64(3), stats.Reads)
	var procs int
	require.NoError(t, objs.EachProc(func(k FileKey, pid uint32, p *ProcStats) {
		if pid != self {
			return
		}
		procs++
		assert.Equal(t, want, k)
		assert.Equal(t, uint64(read), p.ReadBytes)
		assert.Equal(t, o.TS, p.First, "a process's use begins at its open")
	}))
	assert.Equal(t, 1, procs)
	c, err := objs.Counters()
	require.NoError(t, err)
	assert.Zero(t, c[CounterDrops])

	require.NoError(t, objs.Unwatch(want))
	require.NoError(t, objs.EachFile(func(k FileKey, _ *FileStats) { assert.NotEqual(t, want, k, "still watched") }))
	require.NoError(t, objs.EachProc(func(k FileKey, pid uint32, _ *ProcStats) { assert.NotEqual(t, want, k, "still counted for %d", pid) }))
}

// The mappings of a watched file are kept from mmap and munmap, where
// page_fault_user counts faults (x86): a mapping of the model is kept
// with the model's identity; a munmap in its middle splits it, a
// MAP_FIXED anonymous mapping over its tail cuts it, a munmap of the rest
// drops it; faults on the model's pages are counted, and none on the
// anonymous memory mapped where the model was.
func TestMappingsOfAWatchedFile(t *testing.T) {
	var min [NumFormats]uint64
	for i := range min {
		min[i] = 1 << 20
	}
	objs := load(t, LoadOptions{Parts: PartSyscalls | PartPageCache | PartFaults, MinSize: min})
	if !objs.UserFaults {
		testutil.SkipOrFail(t, "the kernel has no page_fault_user (x86): faults are not matched by mapping")
	}
	const page, pages = 4096, 512 // 2 MiB: a gguf's smallest is 1 MiB
	p := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, os.WriteFile(p, make([]byte, pages*page), 0o600))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(int(f.Fd()), &st))
	key := FileKey{Dev: KernelDev(st.Dev), Ino: st.Ino}
	self := uint32(os.Getpid())
	watched := false
	require.NoError(t, objs.EachFile(func(k FileKey, _ *FileStats) { watched = watched || k == key }))
	require.True(t, watched, "the open did not watch the model")

	mem, err := unix.MmapPtr(int(f.Fd()), 0, nil, pages*page, unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	b := unsafe.Slice((*byte)(mem), pages*page)
	base := uint64(uintptr(mem))
	unmap := func(from, to uint64) {
		require.NoError(t, unix.MunmapPtr(unsafe.Pointer(&b[from*page]), uintptr((to-from)*page)))
	}
	at := func(i uint64) uint64 { return base + i*page }
	mine := func() []Mapping {
		ms, err := objs.Mappings(self)
		require.NoError(t, err)
		var out []Mapping
		for _, m := range ms {
			if m.Start >= base && m.End <= at(pages) {
				out = append(out, m)
			}
		}
		slices.SortFunc(out, func(a, b Mapping) int { return cmp.Compare(a.Start, b.Start) })
		return out
	}
	require.Equal(t, []Mapping{{base, at(pages), key}}, mine())

	faults := func() uint64 {
		var n uint64
		require.NoError(t, objs.EachProc(func(k FileKey, pid uint32, s *ProcStats) {
			if k == key && pid == self {
				n = s.Faults
			}
		}))
		return n
	}
	var sum byte
	for i := 0; i < pages; i += 64 {
		sum += b[i*page]
	}
	touched := faults()
	assert.NotZero(t, touched, "faults on the model's pages")

	// A hole in the middle: two ranges.
	unmap(16, 24)
	assert.Equal(t, []Mapping{{base, at(16), key}, {at(24), at(pages), key}}, mine())
	// Anonymous memory mapped over the tail replaces it.
	anon, err := unix.MmapPtr(-1, 0, unsafe.Add(mem, (pages-16)*page), 16*page, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
	require.NoError(t, err)
	require.Equal(t, uintptr(at(pages-16)), uintptr(anon))
	assert.Equal(t, []Mapping{{base, at(16), key}, {at(24), at(pages - 16), key}}, mine())
	// Its faults are not the model's.
	for i := range 16 {
		*(*byte)(unsafe.Add(anon, i*page)) = 1
	}
	assert.Equal(t, touched, faults(), "faults on anonymous memory counted as the model's")
	// The rest unmapped: nothing is left.
	unmap(0, 16)
	unmap(24, pages-16)
	require.NoError(t, unix.MunmapPtr(anon, 16*page))
	assert.Empty(t, mine())
	c, err := objs.Counters()
	require.NoError(t, err)
	assert.Zero(t, c[CounterMappingsFull])
	assert.Zero(t, sum, "the model is zeros")
}
