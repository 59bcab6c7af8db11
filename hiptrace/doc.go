// Package hiptrace reports what every HIP process on the host does on the
// HIP runtime API of ROCm (libamdhip64), with eBPF uprobes: no SDK in the
// workload, no code change. It is cudatrace's tracer with HIP's files and
// entry points.
//
// It probes hipLaunchKernel, hipExtLaunchKernel and hipModuleLaunchKernel,
// hipGraphLaunch, hipMemcpy and hipMemcpyAsync, hipMalloc and hipFree,
// hipStreamSynchronize, hipDeviceSynchronize and hipEventSynchronize,
// hipEventRecord, hipStreamWaitEvent and hipSetDevice, and takes the names
// of module kernels from hipModuleGetFunction (other kernels are named by
// the ELF symbol of the launched host function). Each takes its CUDA
// counterpart's arguments, at the same x86-64 positions.
//
// # Output
//
// The metrics and spans are cudatrace's (docs/metrics.md: cuda.kernel.*,
// cuda.memcpy.*, cuda.memory.*, cuda.sync.*, cuda.api.*, the occupancy
// model's gpu.* estimates), with cuda.api.name the HIP function
// ("hipLaunchKernel") and cuda.device the device of hipSetDevice. The
// occupancy model uses the capacity WithDeviceCapacity sets (compute units
// × threads per CU, which package gpu reads from the KFD topology as
// Device.SMs and ThreadsPerSM, occupancy.CapacityKFD),
// occupancy.DefaultCapacity otherwise. The series are bounded under
// process churn, and the histograms best reported through a Producer
// (NewProducer, WithProducer), as cudatrace's are.
//
// # Requirements
//
// Those of cudatrace: Linux 5.15+, root or CAP_BPF, CAP_PERFMON and
// CAP_SYS_ADMIN, x86-64. Without privilege New returns an error wrapping
// xpuscope.ErrUnavailable; no HIP library mapped anywhere is not an error
// (processes are watched as they start and dlopen); a BPF object the
// kernel rejects is a fault.
package hiptrace

//go:generate go run ../internal/cmd/tracerpkg -runtime hiptrace
