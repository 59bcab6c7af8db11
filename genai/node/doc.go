// Package node counts what the kernel sees of a node's AI workloads and
// the applications and GPU APIs cannot: TCP retransmits and resets on the
// connections of LLM calls and model servers, and the I/O of model
// weights: their reads, the page faults that load them, and the page
// cache that keeps them, whose evictions force reloads.
//
// Everything comes from tracepoints (BTF tracepoints: no kprobes, no
// fentry, no tracefs), in three parts, each an option:
//
//   - TCP (WithTCP): tcp_retransmit_skb, tcp_retransmit_synack,
//     tcp_send_reset and tcp_receive_reset, attributed by the socket they
//     name, never by the task the CPU ran (a retransmit runs in a timer
//     or softirq): the socket's server end, which end it is, and the pod
//     of the process that connected or listened (inet_sock_set_state, in
//     that process's own context). xpuscope.tcp.retransmits,
//     .retransmit.failures and .resets carry server.address and
//     server.port for the connections to or from a model server's or a
//     local LLM endpoint's port (WithServerPorts) and those a caller
//     named through CallRetransmits; the others, their pod only. The
//     kernel keeps each socket's last 16 retransmit times by the
//     socket's inode number, which CallRetransmits reads: the count of a
//     call's retransmits, for its span: the genai capture asks it for
//     each call over TCP, plaintext or TLS, when given it
//     (genai.WithRetransmits, which says how it finds a TLS socket),
//     and puts the count on the call's span
//     (xpuscope.tcp.call.retransmits).
//   - Page cache, faults and readahead of model files (WithPageCache):
//     mm_filemap_add_to_page_cache and mm_filemap_delete_from_page_cache,
//     page_cache_sync_ra and page_cache_async_ra, and the page faults:
//     on x86, exceptions:page_fault_user, once per fault as getrusage
//     counts them (the faulting address matched against the ranges the
//     process mapped watched files at, kept from its mmap and munmap
//     calls and the scans: the faults of a process that maps none cost
//     a hash lookup); elsewhere (arm64) mm_filemap_fault
//     and mm_filemap_map_pages, which miss a fault that maps a huge folio
//     by its PMD and see a retried fault twice. The programs look the
//     page's inode up among the watched files, and return for any other:
//     the cost on a busy page cache is one hash lookup per page added or
//     removed.
//   - Opens and reads (WithFileSyscalls): the raw syscall tracepoints
//     sys_enter and sys_exit. An open, openat or openat2 whose path ends
//     in a model file's extension, of a regular file of that format's
//     size, is watched from there, in the kernel (a file the process
//     named model.safetensors is watched even when the path is a link to
//     a blob named by its hash); read, pread64, readv, preadv and preadv2
//     of a watched file count the bytes they return.
//
// Files open or mapped before the Source started, or while the syscalls
// are not watched, are found by reading every process's mappings and
// descriptors (WithScanInterval).
//
// # The model-file rule
//
// A regular file is a model file when its name ends in a format's
// extension, in any case, and it is at least that format's size; nothing
// configures it:
//
//	format       extensions              smallest
//	safetensors  .safetensors            1 MiB
//	gguf         .gguf                   1 MiB
//	pytorch      .pt .pth                1 MiB
//	bin          .bin                    16 MiB (the extension is not only a model's)
//	checkpoint   .ckpt                   1 MiB
//	onnx         .onnx                   1 MiB
//	tensorrt     .engine .plan .trt      1 MiB
//
// A scan, which sees only the resolved name, also takes a Hugging Face
// cache's blob (.../blobs/<64 hexadecimal digits>) whose first bytes are a
// safetensors header, GGUF's magic or a PyTorch zip archive's.
// ModelFormat applies the rule.
//
// # Loads and reloads
//
// A process's load of a model file runs from its open (or, for a file
// found by a scan, its first read or fault) to the end of its burst of
// reads and faults: a pause of 2 s ends it (xpuscope.model.file.load.duration).
// A reload is a quarter or more of a loaded file's pages evicted from the
// page cache, then a quarter or more added back: it is counted
// (xpuscope.model.file.reloads), made a span (model.file.reload, with an
// event model.file.evicted) on the process that read the file back, and
// logged where the Source has a logger (WithLogger).
//
// # Errors
//
// New wraps xpuscope.ErrUnavailable when the kernel refuses the programs
// for privilege (CAP_BPF and CAP_PERFMON, or root) or lacks BTF
// tracepoints; a part whose optional tracepoints the kernel lacks (the
// fault ones before Linux 6.10, the readahead ones before 6.12) runs
// without them, and Status says which. A bad option is a fault. Nothing
// that fails while running stops the Source: records the ring buffer had
// no room for are xpuscope.node.records.dropped, what the caps left out
// xpuscope.node.overflow.
package node
