// Package gputrace is the tracer that cudatrace and hiptrace share: the
// eBPF uprobes of internal/gputracebpf on a Runtime's libraries, the
// aggregation into the cuda.* metrics, the sampled spans, kernel naming
// and the occupancy model. The public packages pick the Runtime (CUDA,
// HIP) and re-export the Source and its options.
package gputrace
