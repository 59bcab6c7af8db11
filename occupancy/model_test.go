package occupancy

import (
	"testing"

	"github.com/xpuscope/xpuscope/semconv"
)

func TestNamesComeFromSemconv(t *testing.T) {
	for c, want := range map[Completion]string{
		CompletionEvent: semconv.KernelCompletionEvent,
		CompletionSync:  semconv.KernelCompletionSyncFallback,
		CompletionExit:  semconv.KernelCompletionExit,
	} {
		if c.String() != want {
			t.Errorf("%d: %q, want %q", c, c, want)
		}
	}
	for r, want := range map[DropReason]string{
		DropPendingCap: semconv.DropReasonPendingCap,
		DropStreamCap:  semconv.DropReasonStreamCap,
		DropProcessCap: semconv.DropReasonProcessCap,
		DropEventCap:   semconv.DropReasonEventCap,
	} {
		if r.String() != want {
			t.Errorf("%d: %q, want %q", r, r, want)
		}
	}
	for s, want := range map[CapacitySource]string{
		CapacityDefault:    semconv.CapacitySourceDefault,
		CapacityConfigured: semconv.CapacitySourceConfigured,
		CapacityNVML:       semconv.CapacitySourceNVML,
		CapacityKFD:        semconv.CapacitySourceKFD,
	} {
		if s.String() != want {
			t.Errorf("%d: %q, want %q", s, s, want)
		}
	}
}

// Stream handles: 0 and cudaStreamLegacy are one stream per device;
// per-thread default streams are one per thread; a created stream is
// found whatever device the syncing thread has current.
func TestStreamKeys(t *testing.T) {
	var got []uint64
	m := New(WithKernelHandler(func(k *Kernel) { got = append(got, k.ID) }))
	g, b := [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}
	m.Launch(0, 1, 0, 0, g, b, 1)
	m.Launch(1, 1, 1, 0, g, b, 2) // the legacy stream of device 1
	m.Launch(2, 1, 0, PerThreadStream(10), g, b, 3)
	m.Launch(3, 1, 0, PerThreadStream(11), g, b, 4)
	m.Launch(4, 1, 0, s1, g, b, 5)
	m.StreamSync(5, 6, 1, 0, 1) // cudaStreamLegacy: stream 0 of device 0
	m.StreamSync(7, 8, 1, 0, PerThreadStream(11))
	m.StreamSync(9, 10, 1, 3, s1) // current device 3: still s1
	if want := []uint64{1, 4, 5}; !equal(got, want) {
		t.Fatalf("completed %v, want %v", got, want)
	}
	if s := m.Size(); s.Streams != 5 || s.Pending != 2 {
		t.Fatalf("size %+v, want 5 streams, 2 pending", s)
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDefaultsAndIgnoredInput(t *testing.T) {
	n := 0
	m := New(WithKernelHandler(func(*Kernel) { n++ }), WithCapacity(func(uint32, int32) (Capacity, CapacitySource) {
		return Capacity{}, CapacityNVML // invalid: the default replaces it
	}))
	if us := m.Report(0, nil); len(us) != 0 {
		t.Fatalf("report of an empty model: %+v", us)
	}
	m.Launch(10, 1, 0, 0, [3]uint32{0, 1, 1}, [3]uint32{32, 1, 1}, 1) // empty grid: fails without running
	m.StreamSync(20, 30, 2, 0, 0)                                     // unknown process
	m.EventComplete(30, 1, 0xe)                                       // unknown event
	m.Launch(40, 1, 0, 0, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 2)
	m.DeviceSync(50, 60, 1, 0)
	us := m.Report(100, nil)
	if n != 1 || len(us) != 1 || us[0].Capacity != DefaultCapacity || us[0].CapacitySource != CapacityDefault || us[0].Interval != 100 {
		t.Fatalf("%d kernels, usage %+v", n, us)
	}
	if us[0].ThreadSeconds != 32*20/1e9 {
		t.Fatalf("thread-seconds %v, want 32 threads × 20 ns", us[0].ThreadSeconds)
	}
	// Sizes saturate.
	if size3([3]uint32{1 << 31, 1 << 31, 1 << 31}) != 1<<63-1 || mulSat(1<<62, 4) != 1<<63-1 {
		t.Fatal("sizes do not saturate")
	}
	var k Kernel
	k.Start, k.End = 5, 2005
	if k.Duration().Microseconds() != 2 {
		t.Fatal(k.Duration())
	}
	if m.Dropped(NumDropReasons) != 0 {
		t.Fatal("an unknown reason counts")
	}
}
