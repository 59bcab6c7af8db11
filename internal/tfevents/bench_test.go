package tfevents

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/xpuscope/xpuscope/internal/testutil/trainlog"
)

// BenchmarkReadDecode: the 100,000 simple-value records of the Python
// writer's file (PyTorch's default form, one scalar an event), read from
// the page cache through a Reader with the Source's 64 KiB buffer, each
// decoded with DecodeEvent and its scalar summed: what tailing a job
// costs per record. It reports records a second on one core and the
// bytes allocated per record.
func BenchmarkReadDecode(b *testing.B) {
	path := filepath.Join(b.TempDir(), "events.out.tfevents.bench")
	m := trainlog.Big(b, path, 100_000)
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	sum := 0.0
	records := 0
	decode := func(data []byte) {
		records++
		if _, err := DecodeEvent(data, func(_ Event, s Scalar) { sum += s.Value }); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		rd := NewReader(f, 0)
		if _, err := rd.Read(buf, st.Size(), -1, decode); err != nil {
			b.Fatal(err)
		}
	}
	if records != m.Records*b.N {
		b.Fatalf("%d records, want %d", records, m.Records*b.N)
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(records), "B/record")
}
