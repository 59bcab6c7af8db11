package procfs

import (
	"bytes"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	prometheus "github.com/prometheus/procfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

const (
	cudart = "/usr/lib/python3/dist-packages/nvidia/cuda_runtime/lib/libcudart.so.12"
	spaced = "/opt/My Models/lib kernels.so"
)

func readFixture(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "maps"))
	require.NoError(t, err)
	return b
}

func TestParseMapsFixture(t *testing.T) {
	ms, err := ParseMaps(bytes.NewReader(readFixture(t)))
	require.NoError(t, err)
	require.Len(t, ms, 31, "mappings")
	for i := 1; i < len(ms); i++ {
		require.GreaterOrEqual(t, ms[i].Start, ms[i-1].Start, "mapping %d starts before mapping %d", i, i-1)
	}
	byStart := map[uint64]Mapping{}
	for _, m := range ms {
		byStart[m.Start] = m
	}
	for _, want := range []Mapping{
		{Start: 0x55d0c4a5b000, End: 0x55d0c4d1d000, Perms: PermRead | PermExec | PermPrivate,
			Offset: 0x5b000, Dev: mkdev(0xfd, 1), Inode: 1048602, Path: "/usr/bin/python3.11"},
		{Start: 0x55d0c4fd9000, End: 0x55d0c5003000, Perms: PermRead | PermWrite | PermPrivate},
		{Start: 0x55d0c63a1000, End: 0x55d0c6c0f000, Perms: PermRead | PermWrite | PermPrivate, Path: "[heap]"},
		{Start: 0x7f2b10021000, End: 0x7f2b14000000, Perms: PermPrivate},
		{Start: 0x7f2b18000000, End: 0x7f2b38000000, Perms: PermPrivate, Path: "[anon:cuda:hostalloc]"},
		{Start: 0x7f2b3a000000, End: 0x7f2b3a010000, Perms: PermRead | PermWrite,
			Dev: mkdev(0, 5), Inode: 1033, Path: "/dev/nvidiactl"},
		{Start: 0x7f2b3a010000, End: 0x7f2b3a020000, Perms: PermRead | PermWrite,
			Dev: mkdev(0, 1), Inode: 2049, Path: "/memfd:cuda-ipc", Deleted: true},
		{Start: 0x7f2b3c00e000, End: 0x7f2b3c06e000, Perms: PermRead | PermExec | PermPrivate,
			Offset: 0xe000, Dev: mkdev(0x103, 2), Inode: 3932170, Path: cudart},
		{Start: 0x7f2b3d001000, End: 0x7f2b3d002000, Perms: PermRead | PermExec | PermPrivate,
			Offset: 0x1000, Dev: mkdev(0xfd, 1), Inode: 2359300, Path: spaced},
		{Start: 0x7f2b3e000000, End: 0x7f2b3e004000, Perms: PermRead | PermExec | PermPrivate,
			Offset: 0x3000, Dev: mkdev(0xfd, 1), Inode: 2359311,
			Path: "/tmp/torch_extensions/fused_adam.so", Deleted: true},
		{Start: 0x7ffd8a1b2000, End: 0x7ffd8a1d3000, Perms: PermRead | PermWrite | PermPrivate, Path: "[stack]"},
		{Start: 0x7ffd8a1ea000, End: 0x7ffd8a1ec000, Perms: PermRead | PermExec | PermPrivate, Path: "[vdso]"},
		{Start: 0xffffffffff600000, End: 0xffffffffff601000, Perms: PermExec | PermPrivate, Path: "[vsyscall]"},
	} {
		assert.Equal(t, want, byStart[want.Start], "mapping at %#x", want.Start)
	}
}

func TestParseMapsLine(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       Mapping
		err        string
	}{
		{name: "file", line: "7f00-7f10 r-xp 00001000 08:01 42    /lib/libx.so",
			want: Mapping{Start: 0x7f00, End: 0x7f10, Perms: PermRead | PermExec | PermPrivate,
				Offset: 0x1000, Dev: mkdev(8, 1), Inode: 42, Path: "/lib/libx.so"}},
		{name: "anonymous with trailing space", line: "1000-2000 rw-p 00000000 00:00 0 ",
			want: Mapping{Start: 0x1000, End: 0x2000, Perms: PermRead | PermWrite | PermPrivate}},
		{name: "anonymous without trailing space", line: "1000-2000 rw-p 00000000 00:00 0",
			want: Mapping{Start: 0x1000, End: 0x2000, Perms: PermRead | PermWrite | PermPrivate}},
		{name: "shared", line: "1000-2000 rw-s 00000000 00:05 7 /dev/zero",
			want: Mapping{Start: 0x1000, End: 0x2000, Perms: PermRead | PermWrite,
				Dev: mkdev(0, 5), Inode: 7, Path: "/dev/zero"}},
		{name: "spaces in path", line: "1000-2000 r--p 00000000 fd:00 9   /a b/c  d (x).so",
			want: Mapping{Start: 0x1000, End: 0x2000, Perms: PermRead | PermPrivate,
				Dev: mkdev(0xfd, 0), Inode: 9, Path: "/a b/c  d (x).so"}},
		{name: "deleted", line: "1000-2000 r--p 00000000 fd:00 9 /tmp/x.so (deleted)",
			want: Mapping{Start: 0x1000, End: 0x2000, Perms: PermRead | PermPrivate,
				Dev: mkdev(0xfd, 0), Inode: 9, Path: "/tmp/x.so", Deleted: true}},
		{name: "deleted twice", line: "1000-2000 r--p 00000000 fd:00 9 /tmp/x (deleted) (deleted)",
			want: Mapping{Start: 0x1000, End: 0x2000, Perms: PermRead | PermPrivate,
				Dev: mkdev(0xfd, 0), Inode: 9, Path: "/tmp/x (deleted)", Deleted: true}},
		{name: "escaped newline kept", line: `1000-2000 r--p 00000000 fd:00 9 /tmp/a\012b`,
			want: Mapping{Start: 0x1000, End: 0x2000, Perms: PermRead | PermPrivate,
				Dev: mkdev(0xfd, 0), Inode: 9, Path: `/tmp/a\012b`}},
		{name: "large device", line: "1000-2000 r--p 00000000 fff:fffff 1 /x",
			want: Mapping{Start: 0x1000, End: 0x2000, Perms: PermRead | PermPrivate,
				Dev: mkdev(0xfff, 0xfffff), Inode: 1, Path: "/x"}},
		{name: "upper-case hex", line: "7F00-7F10 r--p 0000ABCD FD:01 3 /x",
			want: Mapping{Start: 0x7f00, End: 0x7f10, Perms: PermRead | PermPrivate,
				Offset: 0xabcd, Dev: mkdev(0xfd, 1), Inode: 3, Path: "/x"}},
		{name: "max values", line: "ffffffffffff0000-ffffffffffffffff r--p ffffffffffffffff ffffffff:ffffffff 18446744073709551615 /x",
			want: Mapping{Start: 0xffffffffffff0000, End: 0xffffffffffffffff, Perms: PermRead | PermPrivate,
				Offset: 1<<64 - 1, Dev: mkdev(1<<32-1, 1<<32-1), Inode: 1<<64 - 1, Path: "/x"}},

		{name: "no dash", line: "1000 2000 r--p 0 00:00 0", err: "bad start address"},
		{name: "empty start", line: "-2000 r--p 0 00:00 0", err: "bad start address"},
		{name: "17 hex digits", line: "10000000000000000-2000 r--p 0 00:00 0", err: "bad start address"},
		{name: "bad end", line: "1000-20g0 r--p 0 00:00 0", err: "bad end address"},
		{name: "end before start", line: "2000-1000 r--p 0 00:00 0", err: "end address before start"},
		{name: "short perms", line: "1000-2000 r-p 0 00:00 0", err: "bad permissions"},
		{name: "bad perm letter", line: "1000-2000 rwzp 0 00:00 0", err: "bad permissions"},
		{name: "bad share letter", line: "1000-2000 rwxq 0 00:00 0", err: "bad permissions"},
		{name: "bad offset", line: "1000-2000 r--p 0x10 00:00 0", err: "bad offset"},
		{name: "bad major", line: "1000-2000 r--p 0 0g:00 0", err: "bad device major"},
		{name: "major over 32 bits", line: "1000-2000 r--p 0 100000000:00 0", err: "bad device major"},
		{name: "bad minor", line: "1000-2000 r--p 0 00:0g 0", err: "bad device minor"},
		{name: "no inode", line: "1000-2000 r--p 0 00:00 ", err: "bad inode"},
		{name: "bad inode", line: "1000-2000 r--p 0 00:00 12a /x", err: "bad inode"},
		{name: "inode overflow", line: "1000-2000 r--p 0 00:00 18446744073709551616 /x", err: "bad inode"},
		{name: "truncated", line: "7f2b3c00e000-7f2b3c06e000 r-x", err: "bad permissions"},
		{name: "truncated in device", line: "7f2b3c00e000-7f2b3c06e000 r-xp 0000e000 103:", err: "bad device minor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := ParseMaps(strings.NewReader(tc.line + "\n"))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.ErrorContains(t, err, "line 1")
				return
			}
			require.NoError(t, err)
			require.Len(t, ms, 1)
			require.Equal(t, tc.want, ms[0])
		})
	}
}

func TestParseMapsShapes(t *testing.T) {
	line := "1000-2000 r-xp 00000000 08:01 42 /lib/libx.so"
	for _, tc := range []struct {
		name, in string
		n        int
	}{
		{"empty", "", 0},
		{"only newlines", "\n\n", 0},
		{"no final newline", line, 1},
		{"blank lines skipped", line + "\n\n" + strings.Replace(line, "1000-2000", "2000-3000", 1) + "\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := ParseMaps(strings.NewReader(tc.in))
			require.NoError(t, err)
			require.Len(t, ms, tc.n, "mappings")
		})
	}
}

func TestParseMapsTruncatedFile(t *testing.T) {
	b := readFixture(t)
	// Cut inside the header of line 14.
	cut := bytes.Index(b, []byte("7f2b3c00e000-7f2b3c06e000 r-xp")) + len("7f2b3c00e000-7f2b3c06e000 r-")
	_, err := ParseMaps(bytes.NewReader(b[:cut]))
	require.ErrorContains(t, err, "line 14: bad permissions")
	// Cut inside a path: the shorter path is all that can be known.
	cut = bytes.Index(b, []byte("/opt/My Models")) + len("/opt/My Mod")
	ms, err := ParseMaps(bytes.NewReader(b[:cut]))
	require.NoError(t, err)
	require.Equal(t, "/opt/My Mod", ms[len(ms)-1].Path, "last path")
}

func TestParseMapsLongLine(t *testing.T) {
	head := "1000-2000 r-xp 00000000 08:01 42 "
	ok := head + "/" + strings.Repeat("a", MaxMapsLine-len(head)-2) // the newline makes MaxMapsLine
	ms, err := ParseMaps(strings.NewReader(ok + "\n"))
	require.NoError(t, err, "line of MaxMapsLine bytes")
	require.Len(t, ms, 1, "line of MaxMapsLine bytes")
	require.Equal(t, MaxMapsLine-len(head)-1, len(ms[0].Path), "line of MaxMapsLine bytes: path length")
	long := "1000-2000 r-xp 0 08:01 42 /x\n" + ok + "a\n"
	_, err = ParseMaps(strings.NewReader(long))
	require.ErrorContains(t, err, fmt.Sprintf("line 2 is longer than %d bytes", MaxMapsLine))
}

func TestParseMapsTooMany(t *testing.T) {
	var b strings.Builder
	for i := range 5 {
		fmt.Fprintf(&b, "%x-%x r--p 00000000 00:00 0\n", (i+1)*0x1000, (i+2)*0x1000)
	}
	ms, err := parseMaps(strings.NewReader(b.String()), 5)
	require.NoError(t, err, "5 of at most 5")
	require.Len(t, ms, 5, "5 of at most 5")
	_, err = parseMaps(strings.NewReader(b.String()), 4)
	require.ErrorContains(t, err, "line 5: more than 4 mappings")
}

func TestParseMapsUnsorted(t *testing.T) {
	in := "3000-4000 r--p 0 00:00 0 /c\n1000-2000 r--p 0 00:00 0 /a\n2000-3000 r--p 0 00:00 0 /b\n"
	ms, err := ParseMaps(strings.NewReader(in))
	require.NoError(t, err)
	var got []string
	for _, m := range ms {
		got = append(got, m.Path)
	}
	require.Equal(t, "/a,/b,/c", strings.Join(got, ","), "order")
}

type errReader struct{ n int }

func (r *errReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		r.n++
		return copy(p, "1000-2000 r--p 0 00:00 0 /a\n"), nil
	}
	return 0, syscall.EIO
}

func TestParseMapsReadError(t *testing.T) {
	_, err := ParseMaps(&errReader{})
	require.ErrorIs(t, err, syscall.EIO)
	require.ErrorContains(t, err, "line 2")
}

func TestPermsString(t *testing.T) {
	for p, want := range map[Perms]string{
		0:                                 "---s",
		PermRead | PermExec | PermPrivate: "r-xp",
		PermRead | PermWrite:              "rw-s",
		PermRead | PermWrite | PermExec | PermPrivate: "rwxp",
	} {
		assert.Equal(t, want, p.String(), "%08b.String()", p)
	}
}

func TestMapsFind(t *testing.T) {
	ms, err := ParseMaps(bytes.NewReader(readFixture(t)))
	require.NoError(t, err)
	for _, tc := range []struct {
		addr uint64
		path string // "" for no mapping
		off  uint64
	}{
		{0, "", 0},
		{0x55d0c4a00000, "/usr/bin/python3.11", 0},
		{0x55d0c4a5b123, "/usr/bin/python3.11", 0x5b123},
		{0x55d0c4f9bfff, "/usr/bin/python3.11", 0x59afff},
		{0x55d0c4f9a000, "", 0}, // the gap between two mappings
		{0x7f2b3c00e000 + 0x1234, cudart, 0xe000 + 0x1234},
		{0x7f2b3d001800, spaced, 0x1800},
		{0x7f2b3e000010, "/tmp/torch_extensions/fused_adam.so", 0x3010},
		{0x7ffd8a1ec000, "", 0}, // End is exclusive
		{0xffffffffff600000, "[vsyscall]", 0},
		{0xffffffffffffffff, "", 0},
	} {
		m, ok := ms.Find(tc.addr)
		if !assert.Equal(t, tc.path != "", ok, "Find(%#x) found a mapping", tc.addr) ||
			!assert.Equal(t, tc.path, m.Path, "Find(%#x)", tc.addr) {
			continue
		}
		if ok {
			assert.Equal(t, tc.off, m.FileOffset(tc.addr), "FileOffset(%#x)", tc.addr)
		}
	}
	_, ok := Maps(nil).Find(0x1000)
	assert.False(t, ok, "Find in no mappings found one")
}

func TestMapsFiles(t *testing.T) {
	ms, err := ParseMaps(bytes.NewReader(readFixture(t)))
	require.NoError(t, err)
	var got []string
	for _, m := range ms.Files() {
		got = append(got, fmt.Sprintf("%s@%x", m.Path, m.Offset))
	}
	want := []string{
		"/usr/bin/python3.11@0", "/dev/nvidiactl@0", "/memfd:cuda-ipc@0", cudart + "@0",
		spaced + "@0", "/tmp/torch_extensions/fused_adam.so@3000", "/usr/lib/x86_64-linux-gnu/libc.so.6@0",
	}
	assert.Equal(t, strings.Join(want, "\n"), strings.Join(got, "\n"), "Files")
	assert.Nil(t, Maps(nil).Files(), "Files of no mappings is not nil")
}

func TestPaths(t *testing.T) {
	m := Mapping{Start: 0x7f2b3c00e000, End: 0x7f2b3c06e000}
	assert.Equal(t, "/host/proc/4242/map_files/7f2b3c00e000-7f2b3c06e000", (FS{Root: "/host/proc"}).Proc(4242).mapFilesPath(m), "mapFilesPath")
	assert.Equal(t, "/proc/1/map_files/400000-ffffffffff601000", (FS{Root: "/proc"}).Proc(1).mapFilesPath(Mapping{Start: 0x400000, End: 0xffffffffff601000}), "mapFilesPath")
	for _, tc := range []struct{ path, want string }{
		{cudart, "/proc/7/root" + cudart},
		{spaced, "/proc/7/root/opt/My Models/lib kernels.so"},
		{"/../../etc/passwd", "/proc/7/root/etc/passwd"},
		{"../x", "/proc/7/root/x"},
		{"", "/proc/7/root"},
	} {
		assert.Equal(t, tc.want, (FS{Root: "/proc"}).Proc(7).rootPath(tc.path), "rootPath(%q)", tc.path)
	}
}

func TestMapsOfFixture(t *testing.T) {
	root := procfstest.New(t, procfstest.Process{PID: 123, Maps: string(readFixture(t))})
	fs := FS{Root: root}
	ms, err := fs.Proc(123).Maps()
	require.NoError(t, err, "Maps")
	require.Len(t, ms, 31, "Maps")
	_, err = fs.Proc(124).Maps()
	require.ErrorIs(t, err, iofs.ErrNotExist, "missing pid")
	require.ErrorContains(t, err, filepath.Join(root, "124", "maps"), "missing pid")
	procfstest.Write(t, root, procfstest.Process{PID: 123, Maps: "garbage\n"})
	_, err = fs.Proc(123).Maps()
	require.ErrorContains(t, err, filepath.Join(root, "123", "maps")+": line 1: bad start address", "bad file")
}

// OpenMapped falls back to the path under the process's root directory
// where map_files cannot be read, and names both tries when neither can.
func TestOpenMapped(t *testing.T) {
	m := Mapping{Start: 0x1000, End: 0x2000, Path: "/usr/lib/libx.so"}
	root := procfstest.New(t, procfstest.Process{PID: 7, Files: map[string]string{"root/usr/lib/libx.so": "ELF"}})
	f, err := FS{Root: root}.Proc(7).OpenMapped(m)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	assert.Equal(t, "ELF", string(b))

	_, err = FS{Root: root}.Proc(8).OpenMapped(m)
	require.ErrorIs(t, err, iofs.ErrNotExist)
	assert.ErrorContains(t, err, filepath.Join(root, "8", "map_files", "1000-2000"))
	assert.ErrorContains(t, err, filepath.Join(root, "8", "root", "usr", "lib", "libx.so"))
}

// TestMapsOfSelf reads the test binary's own maps and checks that the
// address of a Go function lands in the executable's text.
func TestMapsOfSelf(t *testing.T) {
	testutil.Native(t, "the kernel's own /proc/self/maps, which QEMU rewrites")
	self := FS{Root: DefaultRoot}.Proc(os.Getpid())
	ms, err := self.Maps()
	require.NoError(t, err)
	addr := uint64(reflect.ValueOf(TestMapsOfSelf).Pointer())
	m, ok := ms.Find(addr)
	require.True(t, ok, "no mapping contains TestMapsOfSelf at %#x", addr)
	exe, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	require.Equal(t, strings.TrimSuffix(exe, deletedSuffix), m.Path, "code mapping %+v, want an executable mapping of %s", m, exe)
	require.NotZero(t, m.Perms&PermExec, "code mapping %+v, want an executable mapping of %s", m, exe)
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat("/proc/self/exe", &st))
	assert.Equal(t, st.Ino, m.Inode, "inode, against stat's")
	if m.Dev != st.Dev {
		// Overlay and btrfs can report another device in maps than stat.
		t.Logf("device %#x, stat says %#x", m.Dev, st.Dev)
	}
	// The same file, opened through map_files, is the executable (needs
	// CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE).
	if fi, err := os.Stat(self.mapFilesPath(m)); err == nil {
		assert.Equal(t, st.Ino, fi.Sys().(*syscall.Stat_t).Ino, "the inode map_files points at")
	} else {
		t.Logf("map_files not readable: %v", err)
	}
	if fi, err := os.Stat(self.rootPath(m.Path)); assert.NoError(t, err, "rootPath") {
		assert.Equal(t, st.Ino, fi.Sys().(*syscall.Stat_t).Ino, "the inode rootPath names")
	}
	var stack, vdso bool
	for _, m := range ms {
		stack = stack || m.Path == "[stack]"
		vdso = vdso || m.Path == "[vdso]"
	}
	assert.True(t, stack, "[stack] found")
	assert.True(t, vdso, "[vdso] found")
}

// format writes m the way the kernel does.
func format(m Mapping) string {
	major := (m.Dev&0x00000000000fff00)>>8 | (m.Dev&0xfffff00000000000)>>32
	minor := m.Dev&0xff | (m.Dev&0x00000ffffff00000)>>12
	dev := fmt.Sprintf("%02x:%02x", major, minor)
	s := fmt.Sprintf("%08x-%08x %s %08x %s %d ", m.Start, m.End, m.Perms, m.Offset, dev, m.Inode)
	if m.Path != "" || m.Deleted {
		s += strings.Repeat(" ", max(0, 73-len(s))) + m.Path
		if m.Deleted {
			s += deletedSuffix
		}
	}
	return s
}

func FuzzParseMaps(f *testing.F) {
	f.Add(readFixture(f))
	f.Add([]byte("1000-2000 r-xp 00000000 08:01 42 /lib/libx.so (deleted)\n1000-2000 rw-s 0 0:0 0"))
	f.Add([]byte("ffffffffffffffff-ffffffffffffffff ---s ffffffffffffffff ffffffff:ffffffff 18446744073709551615 [x]\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := parseMaps(bytes.NewReader(b), 64)
		if err != nil {
			if ms != nil {
				require.Nil(t, ms, "mappings returned with an error")
			}
			return
		}
		if len(ms) > 64 {
			require.LessOrEqual(t, len(ms), 64, "mappings, cap 64")
		}
		if fs := ms.Files(); len(fs) > len(ms) {
			require.LessOrEqual(t, len(fs), len(ms), "files, against mappings")
		}
		for i, m := range ms {
			if m.End < m.Start || (i > 0 && m.Start < ms[i-1].Start) {
				require.GreaterOrEqual(t, m.End, m.Start, "mapping %d out of order: %+v", i, m)
				if i > 0 {
					require.GreaterOrEqual(t, m.Start, ms[i-1].Start, "mapping %d out of order: %+v", i, m)
				}
			}
			if got, ok := ms.Find(m.Start); ok && (m.Start < got.Start || m.Start >= got.End) {
				require.GreaterOrEqual(t, m.Start, got.Start, "Find(%#x) = %+v, which does not contain it", m.Start, got)
				require.Less(t, m.Start, got.End, "Find(%#x) = %+v, which does not contain it", m.Start, got)
			}
			// What the kernel would print for m parses back to m.
			again, err := ParseMaps(strings.NewReader(format(m)))
			if err != nil || len(again) != 1 || again[0] != m {
				require.NoError(t, err, "round trip of %+v", m)
				require.Len(t, again, 1, "round trip of %+v", m)
				require.Equal(t, m, again[0], "round trip of %+v", m)
			}
		}
	})
}

// benchMaps is a maps file of a large process: n libraries of five
// mappings each, plus anonymous mappings between them.
func benchMaps(n int) []byte {
	var b bytes.Buffer
	addr := uint64(0x7f0000000000)
	for i := range n {
		path := "/usr/lib/python3/dist-packages/nvidia/lib" + strconv.Itoa(i) + "/libkernels.so." + strconv.Itoa(i)
		for j, perms := range []string{"r--p", "r-xp", "r--p", "r--p", "rw-p"} {
			fmt.Fprintf(&b, "%x-%x %s %08x fd:01 %d", addr, addr+0x10000, perms, j*0x10000, 100000+i)
			b.WriteString(strings.Repeat(" ", 20))
			b.WriteString(path + "\n")
			addr += 0x10000
		}
		fmt.Fprintf(&b, "%x-%x rw-p 00000000 00:00 0 \n", addr, addr+0x200000)
		addr += 0x200000
	}
	return b.Bytes()
}

func BenchmarkParseMaps(b *testing.B) {
	in := benchMaps(500) // 3000 mappings, a PyTorch process
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	r := bytes.NewReader(in)
	for b.Loop() {
		r.Reset(in)
		if _, err := ParseMaps(r); err != nil {
			require.NoError(b, err)
		}
	}
}

// BenchmarkMaps reads a process's maps the way the uprobe hub does at
// every exec and dlopen, and for every process at each rescan: the
// 3000-mapping fixture of BenchmarkParseMaps, and this test binary's own,
// against prometheus/procfs's Proc.ProcMaps on the same file.
func BenchmarkMaps(b *testing.B) {
	fixture := procfstest.New(b, procfstest.Process{PID: 42, Maps: string(benchMaps(500))})
	for _, tc := range []struct {
		name, root string
		pid        int
	}{{"pytorch", fixture, 42}, {"self", DefaultRoot, os.Getpid()}} {
		b.Run(tc.name, func(b *testing.B) {
			p := FS{Root: tc.root}.Proc(tc.pid)
			procfstest.Versus(b, tc.root, tc.pid,
				func() error { _, err := p.Maps(); return err },
				func(p prometheus.Proc) error { _, err := p.ProcMaps(); return err })
		})
	}
}

func BenchmarkFind(b *testing.B) {
	ms, err := ParseMaps(bytes.NewReader(benchMaps(500)))
	require.NoError(b, err)
	addrs := make([]uint64, 1024)
	for i := range addrs {
		m := ms[(i*7919)%len(ms)]
		addrs[i] = m.Start + uint64(i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := ms.Find(addrs[i&1023]); !ok {
			require.True(b, ok, "not found")
		}
		i++
	}
}

var _ io.Reader = (*errReader)(nil)
