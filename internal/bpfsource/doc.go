// Package bpfsource is the skeleton every eBPF-based Source shares
// (cudatrace and hiptrace through internal/gputrace, and the genai
// capture), written once:
//
//   - Load loads an embedded BPF object: only the programs the Source
//     names, its ring buffer sized and its wakeup threshold set, its uprobe
//     programs made uprobe_multi ones where the kernel has those links;
//   - Classify sorts what loading or attaching returned into the two
//     outcomes of the Source contract: missing privilege or kernel support
//     is xpuscope.ErrUnavailable, said once; anything else is a fault;
//   - Ring drains the ring buffer in a goroutine of its own, on the poll
//     of internal/ringpoll, hands every record to the Source's decoder,
//     runs the Source's housekeeping on time, and counts the records it
//     could not decode and the reads that failed;
//   - SumPerCPU reads the BPF side's per-CPU counters.
//
// The conventions an object follows for this: one BPF_MAP_TYPE_RINGBUF
// map, and a `volatile const __u64 wakeup_bytes` the programs pass to
// bpf_ringbuf_submit's wakeup decision.
package bpfsource
