// Package intelpt captures Intel Processor Trace on demand: the exact
// control flow of a process (or of everything on a CPU) for a few
// seconds, which shows after the fact what a stalled data loader or the
// CPU side of a slow collective did. It opens the intel_pt PMU through
// perf_event_open itself and copies its AUX area out, with hard caps; it
// never runs perf.
//
//	src, err := intelpt.New()
//	if errors.Is(err, xpuscope.ErrUnavailable) {
//		// No Intel PT here (an AMD CPU, a VM): err says which.
//	}
//	defer src.Close()
//	res, err := src.Capture(ctx, intelpt.Request{Target: intelpt.Process(pid), Duration: 2 * time.Second})
//
// # On demand, capped, fail closed
//
// Nothing is traced until Capture is called. Each capture keeps within
// the Source's caps: its duration (WithMaxDuration), its AUX area, the
// locked kernel memory the trace goes to (WithMaxAUXBytes), what it
// writes (WithMaxBytes), and how many run at once (WithMaxConcurrent). A
// request past a cap is refused (ErrRefused) before anything is opened; a
// capture stops at the first of its duration, its byte cap, its context,
// or its process's exit. A capture that cannot start is an error with the
// reason (no CAP_PERFMON, the PMU refusing the configuration, no room for
// the AUX area), never a silent no-op; the event is disabled, unmapped
// and closed on every path.
//
// The configuration is perf's default for the PMU, worked out from its
// format/ and caps/ files: tsc, mtc with the MTC period nearest 3, the
// PSB period nearest 3, pt and branch; user space only unless
// Request.Kernel.
//
// # What a capture writes
//
// Each capture is a directory of its own under WithCaptureDir: trace.pt,
// the raw Intel PT packet stream (the AUX area's bytes in order), which
// libipt's ptdump and ptxed read; sideband.pevent, the kernel's
// perf_event records (mmap, comm, fork, exit, context switches,
// itrace_start, aux, lost) as they were in the ring, which libipt's perf
// sideband reader takes; and capture.json, the Manifest: the
// configuration, the CPU's family, model and stepping, the TSC
// conversion, the caps, and what was lost. docs/intelpt.md gives the
// format and the decoding commands. Decoding is never done here: it is
// a separate step, with libipt's tools or internal/cmd/ptdecode.
//
// The self-metrics count captures by outcome (done, refused, failed) and
// stop, the bytes written, and the trace and sideband lost.
package intelpt
