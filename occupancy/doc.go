// Package occupancy is a pure model of how busy a GPU is, and with whom,
// estimated from the CUDA API calls a tracer sees from outside the
// application: kernel launches, stream/device synchronisation, event
// record and completion, stream waits and synchronous copies. No I/O, no
// eBPF, no OpenTelemetry SDK: events in, estimates out.
//
// Feed a [Model] with the calls of each process, in time order:
//
//	m := occupancy.New(occupancy.WithKernelHandler(func(k *occupancy.Kernel) {
//		// record k.Duration() in gpu.kernel.duration{gpu.kernel.completion=k.Completion}
//	}))
//	m.Launch(ts, pid, device, stream, grid, block, fn)
//	m.EventRecord(ts, pid, device, stream, event)
//	m.EventComplete(ts, pid, event)          // cudaEventSynchronize returned, cudaEventQuery succeeded
//	m.StreamSync(begin, end, pid, device, stream)
//	usage = m.Report(now, usage[:0])          // per process and device, once per interval
//
// # The model
//
// Kernels on one stream run one after the other, in launch order. A kernel
// cannot start before its launch call, before the previous kernel of its
// stream ends, nor before the event a cudaStreamWaitEvent made its stream
// wait for completes: that blocked time is not busy. Its end is bounded by
// the tightest edge observed after it:
//
//   - completion=event: an event recorded after it on its stream was seen
//     complete (cudaEventSynchronize returned, cudaEventQuery succeeded);
//   - completion=sync_fallback: otherwise the return of the
//     cudaStreamSynchronize, cudaDeviceSynchronize (or cuCtxSynchronize) or
//     synchronous host↔device copy that covered it;
//   - completion=exit: the process exited with it pending.
//
// An edge completes every kernel of the stream it covers at once. Between
// the covered kernels the model assumes the stream was never idle (a
// kernel runs at least until the next item of its stream is enqueued) and
// shares the time evenly. Only the edges are observed: the busy time of a
// stream between two edges is an upper bound, exact when the host waits at
// each edge; per-kernel durations are tight only for kernels with an edge
// of their own. docs/occupancy.md gives the assumptions, the error bars
// and worked examples.
//
// # Outputs
//
// For each kernel, when an edge completes it, the handler set with
// [WithKernelHandler] receives a [Kernel]: launch, estimated start and end,
// the bound, and the completion source. [Model.Report] returns, per process
// and device, the busy thread-seconds (Σ min(grid × block threads,
// capacity) × duration, clamped to capacity × wall time), the estimated
// thread and SM-active ratios of the interval, and kernel counts by
// completion. Every output is modelled: emit it with
// gpu.measurement.source=ebpf_model (semconv.MeasurementSourceEBPFModel).
//
// # Bounds
//
// State is bounded: processes, streams per process, pending items per
// stream and in total, and tracked events each have a cap ([Limits]). Past
// a cap the least recently used entry (or a stream's oldest pending
// launch) is dropped and counted ([Model.Dropped]). A process that never
// synchronises costs at most its streams' pending caps.
//
// A Model is not safe for concurrent use: feed it, and call Report, from
// one goroutine. Feeding an event and reporting do not allocate in steady
// state.
package occupancy
