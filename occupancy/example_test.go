package occupancy_test

import (
	"fmt"

	"github.com/xpuscope/xpuscope/occupancy"
)

// A process launches two kernels on a stream, records an event after
// them and waits for it, launches a third and synchronises the stream.
// The event bounds the first two (completion=event), the sync the third
// (completion=sync_fallback). Times are nanoseconds.
func Example() {
	const us = 1000
	a100 := occupancy.Capacity{SMs: 108, ThreadsPerSM: 2048}
	m := occupancy.New(
		occupancy.WithCapacity(func(pid uint32, device int32) (occupancy.Capacity, occupancy.CapacitySource) {
			return a100, occupancy.CapacityNVML
		}),
		occupancy.WithKernelHandler(func(k *occupancy.Kernel) {
			fmt.Printf("kernel %d: %v, completion=%v\n", k.ID, k.Duration(), k.Completion)
		}),
	)
	const pid, dev, stream, event = 4121, 0, 0x7f00aa00, 0x7f00bb00
	grid, block := [3]uint32{216, 1, 1}, [3]uint32{512, 1, 1} // 110592 threads: half the device

	m.Launch(0*us, pid, dev, stream, grid, block, 1)
	m.Launch(10*us, pid, dev, stream, grid, block, 2)
	m.EventRecord(20*us, pid, dev, stream, event)
	m.Launch(30*us, pid, dev, stream, grid, block, 3)
	m.EventComplete(400*us, pid, event)             // cudaEventSynchronize returned
	m.StreamSync(410*us, 1000*us, pid, dev, stream) // cudaStreamSynchronize

	for _, u := range m.Report(1000*us, nil) {
		fmt.Printf("pid %d device %d: %.4f thread-s, thread ratio %.2f, SM-active ratio %.2f, kernels %v (event, sync, exit)\n",
			u.PID, u.Device, u.ThreadSeconds, u.ThreadRatio, u.SMActiveRatio, u.Kernels)
	}
	// Output:
	// kernel 1: 200µs, completion=event
	// kernel 2: 200µs, completion=event
	// kernel 3: 600µs, completion=sync_fallback
	// pid 4121 device 0: 110.5920 thread-s, thread ratio 0.50, SM-active ratio 1.00, kernels [2 1 0] (event, sync, exit)
}
