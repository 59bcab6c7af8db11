package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/nodebpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// A busy page cache of files that are no models: 16 dd processes at once
// write 4 MiB each to files of their own (conv=fsync: to disk) and read
// them back, with every part of the Source on. Half the files are named
// as PyTorch's .bin but smaller than a .bin model (16 MiB), half .dat.
// None of them is watched in the kernel or has a series. A 2 MiB
// .safetensors written and read by dd beside them is watched: the
// programs did see dd's opens.
func TestBusyUnwatchedFiles(t *testing.T) {
	dd, err := exec.LookPath("dd")
	if err != nil {
		testutil.SkipOrFail(t, "dd (coreutils): %v", err)
	}
	h := start(t, WithTCP(false))
	dir := diskDir(t)
	var names []string
	for i := range 16 {
		ext := "dat"
		if i%2 == 0 {
			ext = "bin"
		}
		names = append(names, fmt.Sprintf("shard-%02d.%s", i, ext))
	}
	model := "control.safetensors"
	run := func(args ...string) {
		out, err := exec.Command(dd, append(args, "status=none")...).CombinedOutput()
		assert.NoError(t, err, "dd %v: %s", args, out)
	}
	var wg sync.WaitGroup
	for _, n := range append(names, model) {
		count := "4"
		if n == model {
			count = "2"
		}
		p := filepath.Join(dir, n)
		wg.Go(func() {
			run("if=/dev/zero", "of="+p, "bs=1M", "count="+count, "conv=fsync")
			run("if="+p, "of=/dev/null", "bs=1M")
		})
	}
	wg.Wait()

	key := func(n string) nodebpf.FileKey {
		var st unix.Stat_t
		require.NoError(t, unix.Stat(filepath.Join(dir, n), &st))
		return nodebpf.FileKey{Dev: nodebpf.KernelDev(st.Dev), Ino: st.Ino}
	}
	// The control is watched (the kernel side watched dd's open of it);
	// then every read of it was counted.
	controlKey := key(model)
	eventually(t, 10*time.Second, func() (bool, string) {
		ps := testutil.Collect(t, h.reader)
		read := sumPoints(ps.Find(semconv.XpuscopeModelFileRead.Name, semconv.XpuscopeModelFileName.String(model)))
		return read == 2<<20, fmt.Sprintf("%d bytes of the control read", read)
	})
	watched := map[nodebpf.FileKey]bool{}
	require.NoError(t, h.s.objs.EachFile(func(k nodebpf.FileKey, _ *nodebpf.FileStats) { watched[k] = true }))
	assert.True(t, watched[controlKey], "the control is not watched in the kernel")
	ps := testutil.Collect(t, h.reader)
	for _, n := range names {
		assert.False(t, watched[key(n)], "%s is watched in the kernel", n)
		for _, m := range []string{semconv.XpuscopeModelFileRead.Name, semconv.XpuscopeModelFilePageCacheAdded.Name,
			semconv.XpuscopeModelFilePageCacheEvicted.Name, semconv.XpuscopeModelFileFaults.Name} {
			assert.Empty(t, ps.Find(m, semconv.XpuscopeModelFileName.String(n)), "%s has a %s series", n, m)
		}
	}
	for _, f := range h.s.Status().Files {
		assert.Equal(t, model, f.Name, "a file watched besides the control")
	}
}

// BenchmarkParallelDDOverhead: what TestBusyUnwatchedFiles does, as a
// Go equivalent of parallel dd with no disk I/O to hide the cost: 16
// files of 4 MiB, each written (pages added to the page cache), read
// back 1 MiB at a time, and truncated (pages removed), by as many
// goroutines as GOMAXPROCS, with the Source off and on (every part, and
// each part alone). The
// files are no models: the programs' cost is the page cache's hash
// lookups and the read and write syscalls' sys_enter and sys_exit.
func BenchmarkParallelDDOverhead(b *testing.B) {
	dir := diskDir(b)
	const files, size, block = 16, 4 << 20, 1 << 20
	fds := make([]*os.File, files)
	for i := range fds {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("shard-%02d.bin", i)))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fds[i] = f
	}
	b.SetBytes(files * size)
	op := func(b *testing.B) {
		next := make(chan *os.File, files)
		for _, f := range fds {
			next <- f
		}
		close(next)
		var wg sync.WaitGroup
		for range max(1, min(files, runtimeProcs())) {
			wg.Go(func() {
				buf := make([]byte, block)
				for f := range next {
					for off := int64(0); off < size; off += block {
						if _, err := f.WriteAt(buf, off); err != nil {
							b.Error(err)
							return
						}
					}
					for off := int64(0); off < size; off += block {
						if _, err := f.ReadAt(buf, off); err != nil {
							b.Error(err)
							return
						}
					}
					if err := f.Truncate(0); err != nil {
						b.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}
	// Every part, and each part of the model files alone.
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"all", nil},
		{"page_cache", []Option{WithTCP(false), WithFileSyscalls(false)}},
		{"file_syscalls", []Option{WithTCP(false), WithPageCache(false)}},
		{"tcp", []Option{WithPageCache(false), WithFileSyscalls(false)}},
	} {
		b.Run(bc.name, func(b *testing.B) { overhead(b, false, op, bc.opts...) })
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
