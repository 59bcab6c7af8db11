// Package ncclinspector reads what the NCCL Inspector writes, where a job
// already loads it: NVIDIA's profiler plugin for NCCL
// (NCCL_PROFILER_PLUGIN=…/libnccl-profiler-inspector.so with
// NCCL_INSPECTOR_ENABLE=1), which times each collective and
// point-to-point operation on the GPU. Nothing here requires the plugin.
//
// It writes in one of two modes. By default, per process, one JSON object
// a line to <dump dir>/<hostname>-pid<pid>.log, a line per operation;
// each record names its communicator by NCCL's commHash and its rank,
// which is how cudatrace names the series of its NCCL probes: the figures
// join them. With NCCL_INSPECTOR_PROM_DUMP=1, per GPU, a textfile for
// node_exporter's textfile collector,
// <dump dir>/nccl_inspector_metrics_<GPU UUID>.prom, which the Inspector
// holds open, truncates and writes again whole once an interval (at least
// 30 s), and removes at its end. Its labels depend on the version
// (prom.go): NCCL 2.29's samples name the communicator (comm_id, its
// commHash) and the rank, with the last collective's execution time, bus
// and algorithm bandwidths; NCCL 2.30's are an interval's operations of
// every communicator on the GPU by communicator size, operation, message
// size range and the algorithm and protocol NCCL chose (algo_proto), with
// their mean execution time and the geometric mean of their bus
// bandwidths, and name neither the communicator's hash nor the rank.
//
// The parts, each apart from the others: the allowed environment
// variables of a process (ReadEnv: five names, no other value copied) and
// what they say of the Inspector (Locate); the JSON dump opened in the
// process's root or working directory, never out of it (OpenDumps); a
// JSON record (Parse, pure, with table tests and a fuzz target), the dump
// tailed with package linetail, a bounded reader of a growing file; the
// textfiles the process holds open, found through its descriptors
// (OpenPromFiles: in a directory shared by every process of the node,
// only a descriptor says whose a file is); a textfile's samples
// (ParsePromFile, pure, on expfmt's text parser, with table tests over
// both label sets and a fuzz target); and a reader of a file rewritten
// whole, which reads it once each time it changed and never while it is
// being written (Snapshot).
package ncclinspector
