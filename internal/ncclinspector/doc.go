// Package ncclinspector reads what the NCCL Inspector writes, where a job
// already loads it: NVIDIA's profiler plugin for NCCL
// (NCCL_PROFILER_PLUGIN=…/libnccl-profiler-inspector.so with
// NCCL_INSPECTOR_ENABLE=1), which times each collective and
// point-to-point operation on the GPU and writes, per process, one JSON
// object a line to <dump dir>/<hostname>-pid<pid>.log. Each record names
// its communicator by NCCL's commHash and its rank, which is how
// cudatrace names the series of its NCCL probes: the figures join them.
// Nothing here requires the plugin.
//
// The parts, each apart from the others: the allowed environment
// variables of a process (ReadEnv: five names, no other value copied) and
// where they say the dump is (Locate); the dump opened in the process's
// root or working directory, never out of it (OpenDumps); a record (Parse,
// pure, with table tests and a fuzz target). The dump is tailed with
// package linetail, a bounded reader of a growing file.
//
// The Inspector's Prometheus mode (NCCL_INSPECTOR_PROM_DUMP=1) writes
// per-GPU textfiles for node_exporter, with the communicator's name and
// size but neither its hash, the rank nor the process: they cannot be
// joined to a rank's series and are not read (Locate says so); serve them
// with node_exporter's textfile collector.
package ncclinspector
