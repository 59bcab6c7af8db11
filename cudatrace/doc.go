// Package cudatrace reports what every CUDA process on the host does on
// the CUDA runtime and driver APIs, with eBPF uprobes: no SDK in the
// workload, no code change.
//
// It probes kernel launches (cudaLaunchKernel and its variants,
// cuLaunchKernel, graph launches: each replay of a graph it saw captured
// counts the graph's kernels), copies and memsets, allocations and
// frees, synchronisations, events and cudaSetDevice, in libcudart (shared
// or statically linked into an application) and libcuda. Kernel names come
// from __cudaRegisterFunction and cuModuleGetFunction, or else from the
// ELF symbol of the launched host stub, C++-demangled.
//
// It probes NCCL too (libnccl.so.2, or a program that links it): each
// collective and point-to-point call with its bytes, by communicator,
// named by NCCL's own commHash (the same on every node, in NCCL's logs
// and in the NCCL Inspector's records), and rank; a sequence per rank for
// finding the one a hung job waits for; a span per group. Where a traced
// job loads NVIDIA's NCCL Inspector, the time and the bus and algorithm
// bandwidths it measured are read from its JSON dump (each operation) or
// its Prometheus textfiles (an interval's summary, with the algorithm and
// protocol NCCL chose) and joined to the same series (docs/cudatrace.md,
// "NCCL collectives").
//
// # Cost to the workload
//
// Each probe writes one fixed-size record to its CPU's ring buffer (a lane:
// no helper call, no lock shared between CPUs) without waking the reader,
// which drains the lanes on a short timer (WithPollInterval) or when one
// is a quarter full, and hands the records out in the order they were
// made; a call whose record finds no room is counted in a BPF map. Return
// probes exist only for allocations (the pointer), synchronisations (the
// wait), the calls that map kernel handles to names and those that make a
// graph handle (a capture's end, an instantiation). A runtime launch
// that goes on to the driver is counted once.
//
// # Output
//
// Metrics (docs/metrics.md): launches by kernel name, grid, block and
// shared-memory histograms, copy bytes by direction, allocated, freed and
// outstanding device memory, synchronisation waits, API calls (the records
// received plus the calls the kernel side counted as dropped, so exact
// under drops) and errors. Spans (cuda.kernel.launch,
// cuda.memcpy, cuda.malloc, cuda.sync, …) are sampled under a per-process
// rate cap (WithSpanRate). LeakSuspects lists a process's oldest
// outstanding allocations.
//
// # Bounded under churn
//
// The histograms carry no process.pid: the processes of one executable in
// one container share them. At most WithMaxProcesses processes have
// series of their own; the rest fold into series with
// process.executable.name=_OTHER, counted in
// xpuscope.cuda.process.overflow. An exited process's series go once a
// collection has reported their last values (WithExitGrace keeps them
// longer, for a reader that collects less often than another).
//
// # Histograms through a Producer
//
// Four histograms are recorded per launch. Through the OpenTelemetry SDK
// each record costs ~200 ns; with a Producer (NewProducer, registered on
// the SDK's readers, and WithProducer) the Source keeps them itself and
// the Producer reports them at collection, for a few ns a record. Without
// one they are recorded into the MeterProvider's histograms, the slower
// path. See ExampleWithProducer.
//
// With WithResolver (a *podjoin.Resolver, or any xpuscope.ProcessResolver), a process's
// series and spans also carry the attributes of its container and pod,
// and its spans are children of the span context the resolver gives (a
// workload started with TRACEPARENT joins the trace that launched it). The
// resolver is asked once per process, when the Source first sees it, never
// per event, and hears of the process's exit.
//
// # Requirements
//
// Linux 5.15+ (uprobes, BPF ring buffers, task-local storage in tracing
// programs, attach cookies; uprobe_multi links on 6.6+), run as root or with
// CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN (for /proc/<pid>/map_files);
// without them New returns an error wrapping xpuscope.ErrUnavailable.
// x86-64 only: arguments are read by the System V calling convention.
package cudatrace

//go:generate go run ../internal/cmd/tracerpkg -runtime cudatrace
