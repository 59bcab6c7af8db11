package node

// Kernel-tier tests of the model-file parts: a process of the test's (the
// test binary run again as a child) opens, reads and maps a generated
// 256 MiB "model" on a disk file system, and says what it did; the
// Source's counts are held to that, and to the kernel's own counts of the
// child's page faults (getrusage).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

const childEnv = "XPUSCOPE_NODE_TEST_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		if err := modelChild(path, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childReport is what the child says it did in a step.
type childReport struct {
	Step      string `json:"step"`
	ReadBytes int64  `json:"read_bytes,omitempty"`
	Faults    int64  `json:"faults,omitempty"` // minor and major, getrusage's of the touching thread, around the touches
	Pages     int64  `json:"pages,omitempty"`  // pages touched
}

// modelChild does what each line of in says, on the model file at path,
// and writes a report of each step to out:
//
//	read   read(2) the first half of the file, 1 MiB at a time
//	touch  map the file and read a byte of each page of its second half
//	all    map the file and read a byte of each of its pages
//	unmap  unmap it
//	split  map pieces one page each, apart: as many mappings
//	move   map the file (if it is not), then move the mapping elsewhere
//	       with mremap (MREMAP_FIXED, onto a range it reserved)
func modelChild(path string, in io.Reader, out io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := int(st.Size())
	page := os.Getpagesize()
	var m []byte
	enc := json.NewEncoder(out)
	touch := func(from int) (childReport, error) {
		if m == nil {
			if m, err = unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED); err != nil {
				return childReport{}, err
			}
		}
		// The touching thread's faults only: the runtime's other threads
		// take faults of their own (anonymous memory) meanwhile. No
		// collection meanwhile either.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var before, after unix.Rusage
		sum := 0
		_ = unix.Getrusage(unix.RUSAGE_THREAD, &before)
		for i := from; i < size; i += page {
			sum += int(m[i])
		}
		_ = unix.Getrusage(unix.RUSAGE_THREAD, &after)
		if sum != 0 {
			return childReport{}, fmt.Errorf("the model is not zeros")
		}
		return childReport{Faults: after.Minflt - before.Minflt + after.Majflt - before.Majflt, Pages: int64((size - from + page - 1) / page)}, nil
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var r childReport
		switch step := sc.Text(); step {
		case "read":
			buf := make([]byte, 1<<20)
			for r.ReadBytes < int64(size/2) {
				n, err := f.Read(buf[:min(len(buf), size/2-int(r.ReadBytes))])
				if err != nil {
					return err
				}
				r.ReadBytes += int64(n)
			}
		case "touch":
			if r, err = touch(size / 2); err != nil {
				return err
			}
		case "all":
			if r, err = touch(0); err != nil {
				return err
			}
		case "split":
			// Every other page: neighbours in the file are not in
			// memory, so the kernel cannot merge the mappings.
			for i := range pieces {
				if _, err := unix.Mmap(int(f.Fd()), int64(2*i*page), page, unix.PROT_READ, unix.MAP_SHARED); err != nil {
					return err
				}
			}
		case "move":
			if m == nil {
				if m, err = unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED); err != nil {
					return err
				}
			}
			dst, err := unix.Mmap(-1, 0, size, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			if err != nil {
				return err
			}
			if _, _, e := unix.Syscall6(unix.SYS_MREMAP, uintptr(unsafe.Pointer(&m[0])), uintptr(size), uintptr(size),
				unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED, uintptr(unsafe.Pointer(&dst[0])), 0); e != 0 {
				return fmt.Errorf("mremap: %w", e)
			}
			m = dst // the file, where the reservation was
		case "unmap":
			if err := unix.Munmap(m); err != nil {
				return err
			}
			m = nil
		default:
			return fmt.Errorf("step %q", step)
		}
		r.Step = sc.Text()
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return sc.Err()
}

// child is a running modelChild.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *json.Decoder
}

func startChild(t *testing.T, path string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// Without asynchronous preemption the touching loop is not sent
	// signals, whose handling faults on the thread's own stacks: its
	// faults (getrusage) are the model's.
	cmd.Env = append(os.Environ(), childEnv+"="+path, "GODEBUG=asyncpreemptoff=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &child{cmd: cmd, in: in, out: json.NewDecoder(out)}
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	return c
}

func (c *child) do(t *testing.T, step string) childReport {
	t.Helper()
	_, err := fmt.Fprintln(c.in, step)
	require.NoError(t, err)
	var r childReport
	require.NoError(t, c.out.Decode(&r), "the child's report of %s", step)
	require.Equal(t, step, r.Step)
	return r
}

// writeModel writes a model of size bytes (zeros) named name in a
// directory on a disk file system, with none of its pages in the page
// cache.
func writeModel(t *testing.T, name string, size int64) (string, unix.Stat_t) {
	t.Helper()
	path := filepath.Join(diskDir(t), name)
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 4<<20)
	for w := int64(0); w < size; w += int64(len(buf)) {
		_, err := f.Write(buf)
		require.NoError(t, err)
	}
	require.NoError(t, f.Sync())
	require.NoError(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(int(f.Fd()), &st))
	require.Equal(t, size, st.Size)
	require.Zero(t, cachedPages(t, f, size), "pages of the new model still cached")
	return path, st
}

// diskDir returns a new directory, removed at the end of tb, on a disk
// file system: the test's temporary directory, or, where that is tmpfs
// (whose pages are the files': they never pass the page cache's
// tracepoints, and posix_fadvise cannot evict them), one in the working
// directory.
func diskDir(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		tb.Fatal(err)
	}
	if fs.Type != unix.TMPFS_MAGIC {
		return dir
	}
	wd, err := os.Getwd()
	if err == nil {
		dir, err = os.MkdirTemp(wd, "node-test")
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// cachedPages counts the pages of f in the page cache (mincore of a
// mapping of it).
func cachedPages(t *testing.T, f *os.File, size int64) int64 {
	t.Helper()
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer unix.Munmap(m)
	vec := make([]byte, (size+int64(os.Getpagesize())-1)/int64(os.Getpagesize()))
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	var n int64
	for _, v := range vec {
		n += int64(v & 1)
	}
	return n
}

// within says whether got is within 5% of want.
func within(got, want int64) bool {
	d := got - want
	return d*20 <= want && -d*20 <= want
}

// A process reads the first half of a 256 MiB model with read(2), and
// maps it and touches each page of the second half: its bytes read are
// what it read, to the byte; its faults within 5% of its own (getrusage);
// the file's pages added to the page cache, from cold, within 5% of its
// pages; its load ends once it pauses, and lasts no longer than its
// steps did.
func TestModelFileIO(t *testing.T) {
	const size = 256 << 20
	name := fmt.Sprintf("xpuscope-test-%d.safetensors", os.Getpid())
	path, st := writeModel(t, name, size)
	// Loads end after BurstGap (2 s): the steps never pause that long,
	// even on a loaded machine.
	h := start(t, WithTCP(false))
	id := fmt.Sprintf("%d:%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	file := semconv.XpuscopeModelFileID.String(id)

	began := time.Now()
	c := startChild(t, path)
	read := c.do(t, "read")
	touched := c.do(t, "touch")
	took := time.Since(began)
	require.Equal(t, int64(size/2), read.ReadBytes)
	t.Logf("the child read %d bytes and took %d faults touching %d pages", read.ReadBytes, touched.Faults, touched.Pages)
	pid := semconv.ProcessPID.Int(c.cmd.Process.Pid)
	pages := int64(size / os.Getpagesize())

	eventually(t, 10*time.Second, func() (bool, string) {
		ps := testutil.Collect(t, h.reader)
		readBytes := sumPoints(ps.Find(semconv.XpuscopeModelFileRead.Name, file, pid))
		faults := sumPoints(ps.Find(semconv.XpuscopeModelFileFaults.Name, file, pid))
		added := sumPoints(ps.Find(semconv.XpuscopeModelFilePageCacheAdded.Name, file))
		loads := ps.Find(semconv.XpuscopeModelFileLoadDuration.Name, semconv.XpuscopeModelFileName.String(name))
		ok := readBytes == read.ReadBytes && within(faults, touched.Faults) && within(added, pages) && len(loads) == 1 && loads[0].Count == 1
		return ok, fmt.Sprintf("read %d bytes (want %d), %d faults (the child's %d), %d pages added (of %d), loads %v",
			readBytes, read.ReadBytes, faults, touched.Faults, added, pages, loads)
	})
	ps := testutil.Collect(t, h.reader)
	t.Logf("counted %d faults", sumPoints(ps.Find(semconv.XpuscopeModelFileFaults.Name, file, pid)))
	load := ps.Find(semconv.XpuscopeModelFileLoadDuration.Name, semconv.XpuscopeModelFileName.String(name))[0]
	assert.Positive(t, load.Value)
	assert.LessOrEqual(t, load.Value, took.Seconds(), "the load lasted longer than the child's steps")
	assert.Equal(t, name, ps.Find(semconv.XpuscopeModelFileRead.Name, file)[0].Get(semconv.XpuscopeModelFileName))
	assert.Equal(t, semconv.ModelFormatSafetensors, ps.Find(semconv.XpuscopeModelFileRead.Name, file)[0].Get(semconv.XpuscopeModelFileFormat))
	var watched []string
	for _, f := range h.s.Status().Files {
		watched = append(watched, f.Name)
	}
	assert.Contains(t, watched, name)
}

// A process whose leader thread ends (pthread_exit) while another thread
// lives on and faults on the model the process mapped
// (testdata/leaderexit.c): those faults are counted, within 5% of the
// thread's own. The process's mappings go with its last thread, not with
// its leader.
func TestFaultsAfterTheLeaderExits(t *testing.T) {
	testutil.Native(t, "the kernel's BPF, and a child built by the host's compiler")
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testutil.SkipOrFail(t, "gcc: %v", err)
	}
	exe := filepath.Join(t.TempDir(), "leaderexit")
	out, err := exec.Command(gcc, "-O2", "-Wall", "-pthread", "-o", exe, "testdata/leaderexit.c").CombinedOutput()
	require.NoError(t, err, "gcc: %s", out)
	const size = 64 << 20
	path, st := writeModel(t, fmt.Sprintf("xpuscope-leader-%d.safetensors", os.Getpid()), size)
	h := start(t, WithTCP(false))

	cmd := exec.Command(exe, path)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "the child said nothing")
	require.Equal(t, "ready", lines.Text())
	pid := cmd.Process.Pid
	eventually(t, 10*time.Second, func() (bool, string) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, pid))
		if err != nil {
			return false, err.Error()
		}
		_, rest, _ := bytes.Cut(stat, []byte(") "))
		return bytes.HasPrefix(rest, []byte("Z")), "the leader has not exited: " + string(rest[:min(len(rest), 1)])
	})
	_, err = fmt.Fprintln(in, "touch")
	require.NoError(t, err)
	require.True(t, lines.Scan(), "the child did not say what it touched")
	var faults, pages, sum int64
	_, err = fmt.Sscan(lines.Text(), &faults, &pages, &sum)
	require.NoError(t, err)
	require.Equal(t, int64(size/os.Getpagesize()), pages)
	t.Logf("the surviving thread took %d faults touching %d pages", faults, pages)
	require.Positive(t, faults)

	file := semconv.XpuscopeModelFileID.String(fmt.Sprintf("%d:%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino))
	eventually(t, 10*time.Second, func() (bool, string) {
		got := sumPoints(testutil.Collect(t, h.reader).Find(semconv.XpuscopeModelFileFaults.Name, file, semconv.ProcessPID.Int(pid)))
		return within(got, faults), fmt.Sprintf("%d faults counted, the thread took %d", got, faults)
	})
}

// A process maps a model, moves the mapping with mremap, and touches each
// page at its new place: the faults are counted, within 5% of its own
// (the mapping is followed to where mremap put it).
func TestFaultsAfterMremap(t *testing.T) {
	testutil.Native(t, "the kernel's BPF, and a child that is this test binary")
	const size = 64 << 20
	path, st := writeModel(t, fmt.Sprintf("xpuscope-mremap-%d.safetensors", os.Getpid()), size)
	h := start(t, WithTCP(false))
	c := startChild(t, path)
	c.do(t, "move")
	touched := c.do(t, "all")
	t.Logf("the child took %d faults touching %d pages of the moved mapping", touched.Faults, touched.Pages)
	require.Positive(t, touched.Faults)
	file := semconv.XpuscopeModelFileID.String(fmt.Sprintf("%d:%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino))
	pid := semconv.ProcessPID.Int(c.cmd.Process.Pid)
	eventually(t, 10*time.Second, func() (bool, string) {
		got := sumPoints(testutil.Collect(t, h.reader).Find(semconv.XpuscopeModelFileFaults.Name, file, pid))
		return within(got, touched.Faults), fmt.Sprintf("%d faults counted, the child took %d", got, touched.Faults)
	})
}

// pieces is how many mappings the child's split step makes: more than
// the kernel side holds of a process (MAX_MAPPINGS, 16).
const pieces = 20

// A process that maps a model file in more pieces than the kernel side
// keeps, before the Source starts or while it runs: the kernel side keeps
// every piece it has room for, and each it has not is counted once,
// however many scans find them and whether the kernel side saw them made
// (it counted them, and the scans again, before).
func TestMappingsPastTheCapCountedOnce(t *testing.T) {
	testutil.Native(t, "the kernel's BPF, and a child that is this test binary")
	for _, before := range []bool{true, false} {
		t.Run(fmt.Sprintf("before=%v", before), func(t *testing.T) { mappingsPastTheCap(t, before) })
	}
}

func mappingsPastTheCap(t *testing.T, before bool) {
	name := fmt.Sprintf("xpuscope-test-%d-split.safetensors", os.Getpid())
	path, _ := writeModel(t, name, 4<<20)
	c := startChild(t, path)
	var h *harness
	if before {
		// Made before the Source started: its first scan finds them.
		c.do(t, "split")
		h = start(t, WithTCP(false))
	} else {
		// Made while it runs: the kernel side sees each mmap; a scan
		// then finds them all.
		h = start(t, WithTCP(false))
		c.do(t, "split")
		h.s.mu.Lock()
		h.s.scanProcess(c.cmd.Process.Pid)
		h.s.mu.Unlock()
	}
	if !h.s.objs.UserFaults {
		testutil.SkipOrFail(t, "the kernel has no page_fault_user (x86): faults are not matched by mapping")
	}
	overflow := func() int64 {
		ps := testutil.Collect(t, h.reader)
		return sumPoints(ps.Find(semconv.XpuscopeNodeOverflow.Name, semconv.XpuscopeNodeReason.String(semconv.NodeReasonMappings)))
	}
	// Housekeeping reads the kernel side's counts and publishes them
	// with the scans'.
	h.s.housekeep(time.Now())
	held, err := h.s.objs.Mappings(uint32(c.cmd.Process.Pid))
	require.NoError(t, err)
	require.Len(t, held, 16, "the kernel side holds as many as it has room for")
	require.Equal(t, int64(pieces-16), overflow(), "after the first scan")
	for range 3 {
		h.s.mu.Lock()
		h.s.scanProcess(c.cmd.Process.Pid)
		h.s.mu.Unlock()
		h.s.housekeep(time.Now())
	}
	require.Equal(t, int64(pieces-16), overflow(), "after three more scans")
}

func sumPoints(ps testutil.Points) int64 {
	var n int64
	for _, p := range ps {
		n += int64(p.Value)
	}
	return n
}

// A loaded 256 MiB model evicted from the page cache with
// posix_fadvise(POSIX_FADV_DONTNEED) (never drop_caches, which is the
// node's) and mapped and read again: its pages evicted and added back are
// within 5% of its pages, and the reload is told once: one count, one
// span with its event on the process that read it back, one log record.
func TestModelFileEvictedAndReloaded(t *testing.T) {
	const size = 256 << 20
	name := fmt.Sprintf("xpuscope-reload-%d.safetensors", os.Getpid())
	path, st := writeModel(t, name, size)
	logs := &testutil.SyncBuffer{}
	h := start(t, WithTCP(false), withBurstGap(time.Second), WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	file := semconv.XpuscopeModelFileID.String(fmt.Sprintf("%d:%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino))
	byName := semconv.XpuscopeModelFileName.String(name)
	pages := int64(size / os.Getpagesize())
	loads := func(ps testutil.Points) uint64 {
		var n uint64
		for _, p := range ps.Find(semconv.XpuscopeModelFileLoadDuration.Name, byName) {
			n += p.Count
		}
		return n
	}

	c := startChild(t, path)
	c.do(t, "all")
	eventually(t, 10*time.Second, func() (bool, string) {
		ps := testutil.Collect(t, h.reader)
		added := sumPoints(ps.Find(semconv.XpuscopeModelFilePageCacheAdded.Name, file))
		return loads(ps) == 1 && within(added, pages), fmt.Sprintf("%d loads, %d pages added (of %d)", loads(ps), added, pages)
	})
	c.do(t, "unmap") // mapped pages are not evicted

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
	require.Zero(t, cachedPages(t, f, size), "pages left in the page cache after POSIX_FADV_DONTNEED")
	eventually(t, 10*time.Second, func() (bool, string) {
		evicted := sumPoints(testutil.Collect(t, h.reader).Find(semconv.XpuscopeModelFilePageCacheEvicted.Name, file))
		return within(evicted, pages), fmt.Sprintf("%d pages evicted (of %d)", evicted, pages)
	})
	assert.Empty(t, h.spans.GetSpans(), "a reload before the model was read again")

	c.do(t, "all")
	eventually(t, 10*time.Second, func() (bool, string) {
		ps := testutil.Collect(t, h.reader)
		added := sumPoints(ps.Find(semconv.XpuscopeModelFilePageCacheAdded.Name, file))
		reloads := sumPoints(ps.Find(semconv.XpuscopeModelFileReloads.Name, file))
		// The second load ends after the reload was seen: nothing more
		// is to come.
		return reloads == 1 && within(added, 2*pages) && loads(ps) == 2,
			fmt.Sprintf("%d reloads, %d pages added (of %d twice), %d loads", reloads, added, pages, loads(ps))
	})
	ps := testutil.Collect(t, h.reader)
	t.Logf("pages: %d added, %d evicted, of %d", sumPoints(ps.Find(semconv.XpuscopeModelFilePageCacheAdded.Name, file)),
		sumPoints(ps.Find(semconv.XpuscopeModelFilePageCacheEvicted.Name, file)), pages)
	spans := h.spans.GetSpans()
	require.Len(t, spans, 1, "reload spans")
	sp := spans[0]
	assert.Equal(t, semconv.SpanModelFileReload.Name, sp.Name)
	attrs := map[string]attribute.Value{}
	for _, kv := range sp.Attributes {
		attrs[string(kv.Key)] = kv.Value
	}
	assert.Equal(t, int64(c.cmd.Process.Pid), attrs[string(semconv.ProcessPID)].AsInt64(), "the process that read it back")
	assert.True(t, within(attrs[string(semconv.XpuscopeModelFilePagesEvicted)].AsInt64(), pages), "pages evicted: %v", attrs)
	assert.True(t, attrs[string(semconv.XpuscopeModelFilePagesAdded)].AsInt64()*4 >= pages, "pages added when the reload was seen: %v", attrs)
	require.Len(t, sp.Events, 1)
	assert.Equal(t, "model.file.evicted", sp.Events[0].Name)
	assert.Equal(t, 1, strings.Count(logs.String(), "model file reloaded"), "log records: %s", logs.String())

	// The scope, and each metric's unit, kind, description and bounds, as
	// semconv has them.
	names := testutil.CheckScope(t, h.reader, ScopeName)
	assert.Subset(t, names, []string{semconv.XpuscopeModelFileRead.Name, semconv.XpuscopeModelFileFaults.Name,
		semconv.XpuscopeModelFilePageCacheAdded.Name, semconv.XpuscopeModelFilePageCacheEvicted.Name,
		semconv.XpuscopeModelFileSize.Name, semconv.XpuscopeModelFileLoadDuration.Name, semconv.XpuscopeModelFileReloads.Name,
		semconv.XpuscopeModelFileReadahead.Name, semconv.XpuscopeNodeWatchedFiles.Name})
}
