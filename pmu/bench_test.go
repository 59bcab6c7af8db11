package pmu

import (
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/perfevent"
	"github.com/xpuscope/xpuscope/internal/perfevent/perfeventtest"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// benchCounter advances by one CAS a nanosecond on every read, without a
// lock: the cost measured is the Source's, not the fake's.
type benchCounter struct{ v perfevent.Value }

func (c *benchCounter) Read(v *perfevent.Value) error {
	c.v.Count += 1000
	c.v.Enabled += 1000
	c.v.Running += 1000
	*v = c.v
	return nil
}
func (c *benchCounter) Close() error { return nil }

type benchOpener struct{}

func (benchOpener) Open(perfevent.Attr) (perfevent.Counter, error) { return &benchCounter{}, nil }

// msrOpener opens, for whatever the Source asks, this machine's msr/tsc
// on a CPU it has: the read(2) of a real perf event per counter, where
// the uncore PMUs are missing.
type msrOpener struct{ typ uint32 }

func (o msrOpener) Open(a perfevent.Attr) (perfevent.Counter, error) {
	return perfevent.KernelOpener{}.Open(perfevent.Attr{Type: o.typ, PID: -1, CPU: a.CPU % runtime.NumCPU()})
}

// BenchmarkReadCycle is one interval of a two-socket Ice Lake-SP with
// twelve DDR4 channels each, read through its IMC channel PMUs: 24
// controllers, 48 counters (read and write). fake: the Source's own work
// (reads of counters that answer at once, scaling, accumulating,
// publishing the snapshot); kernel: the same through 48 real perf event
// reads (this machine's msr PMU standing in, since it has no uncore);
// kernel+rescan: with the cpumasks read every DefaultRescan cycles, as
// the Source does; sdk: that, and an OpenTelemetry SDK collection of the
// Source's metrics, what a user's exporter runs. cpu_%_at_10s is the
// cycle's time over DefaultInterval.
func BenchmarkReadCycle(b *testing.B) {
	tree := perfeventtest.Write(b, "icx")
	for i := range 4 {
		tree.Set(b, "sys/bus/event_source/devices/uncore_imc_free_running_"+string(rune('0'+i)), nil)
	}
	msr, err := perfevent.ReadPMU(os.DirFS("/sys"), "msr")
	for _, tc := range []struct {
		name    string
		opener  perfevent.Opener
		collect bool
		rescan  int
	}{
		{"fake", benchOpener{}, false, 1 << 30},
		{"kernel", msrOpener{}, false, 1 << 30},
		{"kernel+rescan", msrOpener{}, false, DefaultRescan},
		{"sdk", msrOpener{}, true, DefaultRescan},
	} {
		b.Run(tc.name, func(b *testing.B) {
			op := tc.opener
			if o, ok := op.(msrOpener); ok {
				if err != nil {
					testutil.SkipOrFail(b, "no msr PMU here: %v", err)
				}
				o.typ = msr.Type
				op = o
			}
			src, reader, serr := startOn(b, tree, op, withRescan(tc.rescan))
			var oe *perfevent.OpenError
			if errors.As(serr, &oe) && (oe.Errno == unix.EACCES || oe.Errno == unix.EPERM) {
				testutil.SkipOrFail(b, "needs CAP_PERFMON: %v", serr)
			}
			if serr != nil {
				b.Fatal(serr)
			}
			if n := src.Status().Counters; n != 48 {
				b.Fatalf("%d counters, want 48", n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				src.poll()
				if tc.collect {
					testutil.Collect(b, reader)
				}
			}
			per := time.Since(start) / time.Duration(b.N)
			b.ReportMetric(float64(per.Nanoseconds())/1e3, "µs/cycle")
			b.ReportMetric(100*per.Seconds()/DefaultInterval.Seconds(), "cpu_%_at_10s")
		})
	}
}
