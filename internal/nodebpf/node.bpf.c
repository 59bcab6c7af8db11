//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// The kernel's view of the connections and model files of AI workloads,
// for package genai/node. Tracepoints only (BTF tracepoints: no kprobes,
// no fentry, no tracefs), and their arguments, never the current task
// where the event is not the task's own:
//
//   - TCP: tcp_retransmit_skb (its err argument on kernels that have it:
//     a second program), tcp_retransmit_synack (a listener's SYN-ACK
//     sent again, from its request socket: owned by the listener's
//     owner), tcp_send_reset and tcp_receive_reset fire in
//     softirq and timer context as often as in the owner's, so an event is
//     attributed to its socket: the socket's inode number (what
//     /proc/<pid>/fd shows as socket:[ino], the key other Sources join
//     on), its addresses, its cgroup, and the owner that
//     inet_sock_set_state saw in process context (connect, listen).
//     Each event is one ring buffer record; a retransmit's time is also
//     kept by socket (sock_retransmits), for the calls that ask.
//   - Model files: the files of `files` (watched by device and inode, put
//     there by user space, or here by an open whose path names a model
//     file), and nothing else. The page cache (mm_filemap_add_to_page_cache,
//     mm_filemap_delete_from_page_cache), page faults (mm_filemap_fault,
//     and fault-around's mm_filemap_map_pages) and readahead
//     (page_cache_sync_ra, page_cache_async_ra) look a file up in
//     `files` and return at once for any other; a watched file's counts
//     are kept in the map, per file and per file and process
//     (`file_procs`), and read by user space on its own time.
//   - The read syscalls (read, pread64, readv, preadv, preadv2) on a
//     watched file's descriptors, and the opens (open, openat, openat2)
//     whose path ends in a model file's extension, through the raw
//     syscall tracepoints sys_enter and sys_exit. Their numbers and the
//     registers of their arguments are the only architecture-specific
//     part of this file (below).
//   - Where the kernel has x86's exceptions:page_fault_user, the address
//     ranges each process maps a watched file at (mmap's sys_exit, with
//     the descriptor a watched file's; dropped at munmap, mremap, a
//     MAP_FIXED mapping over them, exec and exit), against which a user
//     fault's address is matched: no mmap lock is taken.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "../bpfsource/fd.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// ---- Architecture ----------------------------------------------------------
// The syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl;
// include/uapi/asm-generic/unistd.h for arm64, which has no open) and where
// sys_enter finds a syscall's first two arguments.
#if defined(__TARGET_ARCH_x86)
#define NR_read 0
#define NR_open 2
#define NR_pread64 17
#define NR_readv 19
#define NR_openat 257
#define NR_preadv 295
#define NR_preadv2 327
#define NR_openat2 437
#define NR_mmap 9
#define NR_munmap 11
#define NR_mremap 25
struct pt_regs___k {
	unsigned long di, si, dx, r8;
} __attribute__((preserve_access_index));
#define SYSCALL_ARG1(regs) BPF_CORE_READ(regs, di)
#define SYSCALL_ARG2(regs) BPF_CORE_READ(regs, si)
#define SYSCALL_ARG3(regs) BPF_CORE_READ(regs, dx)
#define SYSCALL_ARG5(regs) BPF_CORE_READ(regs, r8)
#elif defined(__TARGET_ARCH_arm64)
#define NR_openat 56
#define NR_read 63
#define NR_readv 65
#define NR_pread64 67
#define NR_preadv 69
#define NR_preadv2 286
#define NR_openat2 437
#define NR_munmap 215
#define NR_mremap 216
#define NR_mmap 222
struct pt_regs___k {
	unsigned long regs[31];
	unsigned long orig_x0;
} __attribute__((preserve_access_index));
#define SYSCALL_ARG1(regs) BPF_CORE_READ(regs, orig_x0)
#define SYSCALL_ARG2(regs) BPF_CORE_READ(regs, regs[1])
#define SYSCALL_ARG3(regs) BPF_CORE_READ(regs, regs[2])
#define SYSCALL_ARG5(regs) BPF_CORE_READ(regs, regs[4])
#else
#error "node.bpf.c: no syscall table for this architecture"
#endif

// ---- Records ----------------------------------------------------------------

enum record_kind {
	RECORD_TCP = 1,
	RECORD_OPEN = 2,
};

enum tcp_event {
	TCP_RETRANSMIT = 1,
	TCP_RESET_SENT = 2,
	TCP_RESET_RECEIVED = 3,
};

// Which end of its connection a socket is, as inet_sock_set_state saw it
// begin.
enum role {
	ROLE_UNKNOWN = 0, // it began before the programs were attached
	ROLE_CLIENT = 1,  // it connected (SYN_SENT)
	ROLE_SERVER = 2,  // a listener accepted it (SYN_RECV)
};

// Model-file formats, by extension.
enum format {
	FORMAT_NONE = 0,
	FORMAT_SAFETENSORS = 1, // .safetensors
	FORMAT_GGUF = 2,        // .gguf
	FORMAT_PYTORCH = 3,     // .pt, .pth
	FORMAT_BIN = 4,         // .bin: PyTorch's pytorch_model.bin, OpenVINO's weights
	FORMAT_CHECKPOINT = 5,  // .ckpt
	FORMAT_ONNX = 6,        // .onnx
	FORMAT_TENSORRT = 7,    // .engine, .plan, .trt
	FORMAT_MAX,
};

enum counter {
	COUNTER_DROPS = 0,      // records the ring buffer had no room for
	COUNTER_FILES_FULL = 1, // model files opened with no room left in `files`
	COUNTER_PROCS_FULL = 2, // (file, process) pairs with no room left in `file_procs`
	COUNTER_LONG_PATH = 3,  // opens whose path was longer than PATH_BYTES: not looked at
	COUNTER_MAPPINGS_FULL = 4, // processes whose mappings of watched files were not kept: `mappings` was full (one past MAX_MAPPINGS of a process is counted by user space's scans, which see it in its maps)
	COUNTER_MAX,
};

struct tcp_record {
	__u8 kind;  // RECORD_TCP
	__u8 event; // enum tcp_event
	__u8 role;  // enum role
	__u8 state; // the socket's TCP state
	__u32 pid;  // the socket's owner, where known; 0 else
	__u64 ts;   // CLOCK_MONOTONIC ns
	__u64 ino;  // the socket's inode number; 0 for a socket its process closed already
	__u64 cgroup; // the socket's cgroup (v2) id; 0 if none
	__s32 err;  // a retransmit: the kernel's error (0: sent), on kernels that say
	__u16 family;
	__u16 sport; // local port, host order
	__u16 dport; // remote port, host order
	__u16 _pad[3];
	__u8 saddr[16]; // local address (IPv4: the first 4 bytes)
	__u8 daddr[16]; // remote address
};

#define NAME_BYTES 64

struct open_record {
	__u8 kind;     // RECORD_OPEN
	__u8 format;   // enum format
	__u8 name_len; // bytes of name
	__u8 _pad;
	__u32 pid;
	__u64 ts;   // CLOCK_MONOTONIC ns of the open's entry
	__u64 dev;  // the kernel's dev_t of the file's superblock (major << 20 | minor)
	__u64 ino;
	__u64 size; // bytes, at the open
	char name[NAME_BYTES]; // the last component of the path the process opened (its last NAME_BYTES bytes)
};

// ---- Maps -------------------------------------------------------------------

volatile const __u64 wakeup_bytes = 64 << 10;
// The smallest model file, by format (user space sets them: the rule is
// package genai/node's).
volatile const __u64 min_size[FORMAT_MAX] = {};
// A pause in a process's reads and faults of a file this long ends a
// burst of them (user space sets it).
volatile const __u64 burst_gap_ns = 2000000000;
// Set while `files` holds a file: until then the read syscalls are not
// looked at.
volatile __u32 files_watched = 0;
// Threads between a watched syscall's entry and its exit; while 0, sys_exit
// returns at once.
volatile __u64 pending_syscalls = 0;
// What sys_enter looks at (user space sets them): the opens of model files
// and the reads of watched ones; the mappings of watched files (where
// page_fault_user counts faults).
volatile const __u32 track_io = 1;
volatile const __u32 track_mappings = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);
} records SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

// A socket's owner, from when inet_sock_set_state saw it begin, by its
// address. The entry stays when the socket closes (the LRU drops it): a
// close clears the socket's local port before the reset an abortive close
// sends, so the entry keeps the port the socket had when it was
// established. A socket that takes the address of a closed one begins
// with a state change that replaces the entry.
struct sock_owner {
	__u32 pid;
	__u16 role;  // enum role
	__u16 sport; // the local port, kept at the close; 0 before
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct sock_owner);
} socks SEC(".maps");

// The listening sockets' owners, by network namespace and port: the
// owner of the sockets each accepts.
struct listener_key {
	__u32 netns; // the namespace's inode number
	__u16 port;  // host order
	__u16 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct listener_key);
	__type(value, __u32);
} listeners SEC(".maps");

#define RETRANSMIT_TIMES 16

// A socket's retransmits, by inode number: how many, and the times of the
// last RETRANSMIT_TIMES.
struct retransmit_times {
	__u64 count;
	__u64 ts[RETRANSMIT_TIMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct retransmit_times);
} sock_retransmits SEC(".maps");

struct file_key {
	__u64 dev; // the kernel's dev_t
	__u64 ino;
};

// A watched file's counts, since it was watched.
struct file_stats {
	__u64 added;        // pages added to the page cache
	__u64 evicted;      // pages removed from it
	__u64 faults;       // page faults served from the file
	__u64 around;       // pages mapped by fault-around
	__u64 sync_ra;      // synchronous readaheads (a read or fault that waited)
	__u64 async_ra;     // asynchronous readaheads
	__u64 ra_pages;     // pages the readaheads asked for
	__u64 read_bytes;   // bytes the read syscalls returned
	__u64 reads;        // read syscalls
	__u64 last_add;     // CLOCK_MONOTONIC ns of the last page added
	__u64 last_evict;   // ... of the last page removed
	__u64 last_io;      // ... of the last read or fault
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct file_key);
	__type(value, struct file_stats);
} files SEC(".maps");

#define MAX_MAPPINGS 16

// A mapping of a watched file: the addresses [start, end).
struct mapping {
	__u64 start, end; // end 0: a free slot
	struct file_key file;
};

// A process's mappings of watched files, for page_fault_user: the
// addresses it mapped them at (mmap's sys_exit, or a scan of its maps),
// less what it unmapped since. Any other process's fault costs this
// lookup and returns.
struct proc_mappings {
	struct bpf_spin_lock lock;
	__u32 _pad;
	struct mapping m[MAX_MAPPINGS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct proc_mappings);
} mappings SEC(".maps");

// A process's first mapping's entry is made from this, never written
// (too large for the stack).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, char[sizeof(struct proc_mappings)]);
} mappings_zero SEC(".maps");

struct file_proc_key {
	struct file_key file;
	__u32 pid;
	__u32 _pad;
};

// A process's use of a watched file.
struct proc_stats {
	__u64 read_bytes;
	__u64 reads;
	__u64 faults;
	__u64 first;   // CLOCK_MONOTONIC ns of its open (or its first read or fault)
	__u64 last_io; // ... of its last read or fault
	__u64 burst;   // ... of the start of its last burst of reads and faults: first, or the first after a pause of burst_gap_ns
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct file_proc_key);
	__type(value, struct proc_stats);
} file_procs SEC(".maps");

enum pending_kind {
	PENDING_NONE = 0,
	PENDING_OPEN = 1,
	PENDING_READ = 2,
	PENDING_MMAP = 3,   // a mmap: of a watched file (mapped), or by a process that maps one
	PENDING_UNMAP = 4,  // a munmap
	PENDING_REMAP = 5,  // a mremap by a process that maps a watched file
};

// A thread's state: its watched syscall between entry and exit, and the
// last fault-around it made, so that a fault it made with it is counted
// once.
struct thread {
	__u32 pending; // enum pending_kind
	__u8 format;
	__u8 name_len;
	__u16 _pad;
	__u64 ts;
	struct file_key file;
	char name[NAME_BYTES];
	__u64 around_mapping; // the address_space of the last fault-around
	__u64 around_start, around_end;
	__u64 around_ts; // CLOCK_MONOTONIC ns of it
	__u64 addr, len;  // a pending munmap's or mremap's (old) range; a pending mmap's length
	__u64 new_len;    // a pending mremap's new length
	__u32 mapped;     // a pending mmap maps file
	__u32 _pad2;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread);
} threads SEC(".maps");

#define PATH_BYTES 512

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, char[PATH_BYTES + NAME_BYTES]);
} path_scratch SEC(".maps");

// ---- Kernel structures (CO-RE) --------------------------------------------

struct kernfs_node___k {
	__u64 id;
} __attribute__((preserve_access_index));

struct cgroup___k {
	struct kernfs_node___k *kn;
} __attribute__((preserve_access_index));

struct sock_cgroup_data___k {
	struct cgroup___k *cgroup;
} __attribute__((preserve_access_index));

struct in6_addr___k {
	__u8 bytes[16]; // a union in the kernel: read whole
};

struct ns_common___k {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct net___k {
	struct ns_common___k ns;
} __attribute__((preserve_access_index));

struct possible_net___k {
	struct net___k *net;
};

struct sock_common___k {
	struct possible_net___k skc_net;
	unsigned short skc_family;
	volatile unsigned char skc_state;
	__u32 skc_daddr;     // network order
	__u32 skc_rcv_saddr; // network order
	__u16 skc_dport;     // network order
	__u16 skc_num;       // host order
	struct in6_addr___k skc_v6_daddr;
	struct in6_addr___k skc_v6_rcv_saddr;
} __attribute__((preserve_access_index));

struct super_block___k {
	__u32 s_dev;
} __attribute__((preserve_access_index));

struct inode___k {
	unsigned short i_mode;
	unsigned long i_ino;
	long long i_size;
	struct super_block___k *i_sb;
} __attribute__((preserve_access_index));

struct socket___k {
	short type;
} __attribute__((preserve_access_index));

struct socket_alloc___k {
	struct socket___k socket;
	struct inode___k vfs_inode;
} __attribute__((preserve_access_index));

struct sock___k {
	struct sock_common___k __sk_common;
	struct socket___k *sk_socket;
	struct sock_cgroup_data___k sk_cgrp_data;
} __attribute__((preserve_access_index));

struct address_space___k {
	struct inode___k *host;
} __attribute__((preserve_access_index));

struct file___k {
	struct address_space___k *f_mapping;
} __attribute__((preserve_access_index));

// A process's shared state: live counts its threads not yet exiting
// (atomic_t).
struct signal_struct___k {
	struct {
		int counter;
	} live;
} __attribute__((preserve_access_index));

struct task_struct___k {
	int pid;
	int tgid;
	struct signal_struct___k *signal;
} __attribute__((preserve_access_index));

// A folio's flags: an unsigned long, or (Linux 6.17+) memdesc_flags_t,
// a struct of one.
struct memdesc_flags___k {
	unsigned long f;
};

struct folio___new {
	struct memdesc_flags___k flags;
} __attribute__((preserve_access_index));

struct folio___k {
	unsigned long flags;
	struct address_space___k *mapping;
	unsigned long _flags_1;
	unsigned int _nr_pages;
} __attribute__((preserve_access_index));

enum pageflags___k {
	PG_head___k = 6,
};

#define AF_INET 2
#define AF_INET6 10
#define TCP_ESTABLISHED 1
#define TCP_SYN_SENT 2
#define TCP_SYN_RECV 3
#define TCP_CLOSE 7
#define TCP_LISTEN 10
#define TCP_TIME_WAIT 6
#define TCP_NEW_SYN_RECV 12
#define S_IFMT 00170000
#define S_IFREG 0100000

// ---- Helpers ------------------------------------------------------------

static __always_inline void count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &c);
	if (v)
		*v += 1;
}

static __always_inline __u64 submit_flags(void)
{
	return bpf_ringbuf_query(&records, BPF_RB_AVAIL_DATA) > wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline __u32 tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

static __always_inline __u64 sock_cgroup(struct sock___k *sk)
{
	if (!bpf_core_field_exists(sk->sk_cgrp_data.cgroup))
		return 0;
	return BPF_CORE_READ(sk, sk_cgrp_data.cgroup, kn, id);
}

// sock_ino is the inode number of sk's socket; 0 when its process has
// closed it (an orphan still sending its last segments).
static __always_inline __u64 sock_ino(struct sock___k *sk)
{
	struct socket___k *sock = BPF_CORE_READ(sk, sk_socket);
	if (!sock)
		return 0;
	return BPF_CORE_READ((struct socket_alloc___k *)sock, vfs_inode.i_ino);
}

// ---- TCP ----------------------------------------------------------------

// listener_of is the key of the listener on sk's namespace and local port.
static __always_inline struct listener_key listener_of(struct sock___k *sk)
{
	struct listener_key k = {
		.netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum),
		.port = BPF_CORE_READ(sk, __sk_common.skc_num),
	};
	return k;
}

// tcp_event records event on sk. Nothing here reads the current task: a
// retransmit timer or a segment's softirq runs on behalf of whoever the
// CPU was running.
static __always_inline int tcp_event(struct sock___k *sk, __u8 event, int err)
{
	struct tcp_record *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		count(COUNTER_DROPS);
		return 0;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->kind = RECORD_TCP;
	r->event = event;
	r->ts = bpf_ktime_get_ns();
	r->err = err;
	if (!sk) { // a reset sent in answer to a segment no socket took
		bpf_ringbuf_submit(r, submit_flags());
		return 0;
	}
	__u64 key = (__u64)sk;
	r->state = BPF_CORE_READ(sk, __sk_common.skc_state);
	r->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	r->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	r->dport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (r->family == AF_INET6) {
		BPF_CORE_READ_INTO(&r->saddr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&r->daddr, sk, __sk_common.skc_v6_daddr);
	} else {
		BPF_CORE_READ_INTO((__u32 *)r->saddr, sk, __sk_common.skc_rcv_saddr);
		BPF_CORE_READ_INTO((__u32 *)r->daddr, sk, __sk_common.skc_daddr);
	}
	struct sock_owner *o = bpf_map_lookup_elem(&socks, &key);
	if (o) {
		r->pid = o->pid;
		r->role = o->role;
		if (!r->sport)
			r->sport = o->sport;
	} else if (r->state == TCP_NEW_SYN_RECV) {
		// A listener's request socket (a SYN-ACK sent again): owned by
		// the listener's owner.
		struct listener_key lk = listener_of(sk);
		__u32 *pid = bpf_map_lookup_elem(&listeners, &lk);
		r->pid = pid ? *pid : 0;
		r->role = ROLE_SERVER;
	}
	// A time-wait or request socket has only the common part: no
	// socket, no cgroup.
	if (r->state != TCP_TIME_WAIT && r->state != TCP_NEW_SYN_RECV) {
		r->cgroup = sock_cgroup(sk);
		r->ino = sock_ino(sk);
	}
	if (event == TCP_RETRANSMIT && err == 0 && r->ino) {
		struct retransmit_times *s = bpf_map_lookup_elem(&sock_retransmits, &r->ino);
		if (!s) {
			struct retransmit_times zero = {};
			bpf_map_update_elem(&sock_retransmits, &r->ino, &zero, BPF_NOEXIST);
			s = bpf_map_lookup_elem(&sock_retransmits, &r->ino);
		}
		if (s) {
			// A socket's retransmits are made under its lock: one at a time.
			s->ts[s->count & (RETRANSMIT_TIMES - 1)] = r->ts;
			s->count++;
		}
	}
	bpf_ringbuf_submit(r, submit_flags());
	return 0;
}

// tcp_retransmit_skb(sk, skb) before Linux 6.14.
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit, struct sock___k *sk)
{
	return tcp_event(sk, TCP_RETRANSMIT, 0);
}

// tcp_retransmit_skb(sk, skb, err) from Linux 6.14: err says whether the
// segment left (0), or why not.
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_err, struct sock___k *sk, void *skb, int err)
{
	return tcp_event(sk, TCP_RETRANSMIT, err);
}

// tcp_retransmit_synack(sk, req): a listener sent a SYN-ACK again, from
// its request socket req (not through tcp_retransmit_skb, though the
// kernel counts it in RetransSegs). A request socket is the common part
// of a socket only: its addresses, namespace and local port.
SEC("tp_btf/tcp_retransmit_synack")
int BPF_PROG(tcp_retransmit_synack, struct sock___k *sk, struct sock___k *req)
{
	return tcp_event(req, TCP_RETRANSMIT, 0);
}

SEC("tp_btf/tcp_send_reset")
int BPF_PROG(tcp_send_reset, struct sock___k *sk)
{
	return tcp_event(sk, TCP_RESET_SENT, 0);
}

SEC("tp_btf/tcp_receive_reset")
int BPF_PROG(tcp_receive_reset, struct sock___k *sk)
{
	return tcp_event(sk, TCP_RESET_RECEIVED, 0);
}

// A TCP socket changed state. A connect (CLOSE to SYN_SENT) and a listen
// are made by the owner, in its own context: the current process owns
// the socket. A listener's child begins in softirq, cloned from the
// listener (LISTEN to SYN_RECV): it is owned by the listener's owner.
// Established, a socket's local port is kept; a listener's entry goes
// when it closes.
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(sock_state, struct sock___k *sk, int oldstate, int newstate)
{
	__u64 key = (__u64)sk;
	struct sock_owner o = {};
	switch (newstate) {
	case TCP_CLOSE:
		if (oldstate == TCP_LISTEN) {
			struct listener_key lk = listener_of(sk);
			bpf_map_delete_elem(&listeners, &lk);
		}
		return 0;
	case TCP_ESTABLISHED: {
		struct sock_owner *e = bpf_map_lookup_elem(&socks, &key);
		if (e)
			e->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
		return 0;
	}
	case TCP_SYN_SENT:
		if (oldstate != TCP_CLOSE)
			return 0;
		o.pid = tgid();
		o.role = ROLE_CLIENT;
		break;
	case TCP_LISTEN: {
		struct listener_key lk = listener_of(sk);
		__u32 pid = tgid();
		bpf_map_update_elem(&listeners, &lk, &pid, BPF_ANY);
		return 0;
	}
	case TCP_SYN_RECV: {
		struct listener_key lk = listener_of(sk);
		__u32 *pid = bpf_map_lookup_elem(&listeners, &lk);
		o.pid = pid ? *pid : 0;
		o.role = ROLE_SERVER;
		break;
	}
	default:
		return 0;
	}
	bpf_map_update_elem(&socks, &key, &o, BPF_ANY);
	return 0;
}

// ---- Model files: page cache, faults, readahead ---------------------------

static __always_inline struct file_stats *watched_inode(struct inode___k *inode, struct file_key *k)
{
	if (!inode)
		return 0;
	k->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	k->ino = BPF_CORE_READ(inode, i_ino);
	return bpf_map_lookup_elem(&files, k);
}

static __always_inline struct file_stats *watched_mapping(struct address_space___k *mapping, struct file_key *k)
{
	if (!mapping)
		return 0;
	return watched_inode(BPF_CORE_READ(mapping, host), k);
}

// folio_pages is the number of pages of folio f.
static __always_inline __u64 folio_pages(struct folio___k *f)
{
	unsigned long flags;
	if (bpf_core_field_exists(((struct folio___new *)f)->flags.f))
		flags = BPF_CORE_READ((struct folio___new *)f, flags.f);
	else
		flags = BPF_CORE_READ(f, flags);
	if (!(flags & (1UL << bpf_core_enum_value(enum pageflags___k, PG_head___k))))
		return 1;
	if (bpf_core_field_exists(f->_nr_pages))
		return BPF_CORE_READ(f, _nr_pages);
	if (bpf_core_field_exists(f->_flags_1))
		return 1UL << (BPF_CORE_READ(f, _flags_1) & 0xff);
	return 1;
}

SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(cache_add, struct folio___k *folio)
{
	struct file_key k;
	struct file_stats *s = watched_mapping(BPF_CORE_READ(folio, mapping), &k);
	if (!s)
		return 0;
	__sync_fetch_and_add(&s->added, folio_pages(folio));
	s->last_add = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/mm_filemap_delete_from_page_cache")
int BPF_PROG(cache_delete, struct folio___k *folio)
{
	struct file_key k;
	struct file_stats *s = watched_mapping(BPF_CORE_READ(folio, mapping), &k);
	if (!s)
		return 0;
	__sync_fetch_and_add(&s->evicted, folio_pages(folio));
	s->last_evict = bpf_ktime_get_ns();
	return 0;
}

static __always_inline struct thread *current_thread(__u64 flags)
{
	return bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0, flags);
}

// proc_stats returns the entry of the current process's use of file k,
// made at ts if there is none.
static __always_inline struct proc_stats *proc_stats(struct file_key *k, __u64 ts)
{
	struct file_proc_key pk = {.file = *k, .pid = tgid()};
	struct proc_stats *p = bpf_map_lookup_elem(&file_procs, &pk);
	if (p)
		return p;
	struct proc_stats n = {.first = ts, .burst = ts};
	if (bpf_map_update_elem(&file_procs, &pk, &n, BPF_NOEXIST) == -7) // E2BIG: full
		count(COUNTER_PROCS_FULL);
	return bpf_map_lookup_elem(&file_procs, &pk);
}

// How soon after a thread's fault-around a fault of it on the same pages
// is the same fault: filemap_fault follows filemap_map_pages within
// microseconds; the bound keeps a fault-around that served its fault from
// hiding a later fault of the thread on those pages.
#define AROUND_NS 10000000

// proc_io notes a read or fault of the process at now.
static __always_inline void proc_io(struct proc_stats *p, __u64 now)
{
	if (p->last_io && now - p->last_io > burst_gap_ns)
		p->burst = now;
	p->last_io = now;
}

// A fault on a file mapping that fault-around did not serve (made by the
// faulting task). One that follows the same thread's fault-around over
// its page is the same fault, counted there.
SEC("tp_btf/mm_filemap_fault")
int BPF_PROG(filemap_fault, struct address_space___k *mapping, unsigned long index)
{
	struct file_key k;
	struct file_stats *s = watched_mapping(mapping, &k);
	if (!s)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	s->last_io = now;
	struct thread *t = current_thread(0);
	if (t && t->around_mapping == (__u64)mapping && index >= t->around_start && index <= t->around_end &&
	    now - t->around_ts < AROUND_NS) {
		t->around_mapping = 0;
		return 0;
	}
	__sync_fetch_and_add(&s->faults, 1);
	struct proc_stats *p = proc_stats(&k, now);
	if (p) {
		__sync_fetch_and_add(&p->faults, 1);
		proc_io(p, now);
	}
	return 0;
}

// Fault-around: a fault maps the file's cached pages from start to end
// around its own. It is one fault.
SEC("tp_btf/mm_filemap_map_pages")
int BPF_PROG(filemap_map_pages, struct address_space___k *mapping, unsigned long start, unsigned long end)
{
	struct file_key k;
	struct file_stats *s = watched_mapping(mapping, &k);
	if (!s)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	s->last_io = now;
	__sync_fetch_and_add(&s->faults, 1);
	__sync_fetch_and_add(&s->around, end - start + 1);
	struct proc_stats *p = proc_stats(&k, now);
	if (p) {
		__sync_fetch_and_add(&p->faults, 1);
		proc_io(p, now);
	}
	struct thread *t = current_thread(BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t) {
		t->around_mapping = (__u64)mapping;
		t->around_start = start;
		t->around_end = end;
		t->around_ts = now;
	}
	return 0;
}

SEC("tp_btf/page_cache_sync_ra")
int BPF_PROG(sync_ra, struct inode___k *inode, unsigned long index, void *ra, unsigned long req_count)
{
	struct file_key k;
	struct file_stats *s = watched_inode(inode, &k);
	if (!s)
		return 0;
	__sync_fetch_and_add(&s->sync_ra, 1);
	__sync_fetch_and_add(&s->ra_pages, req_count);
	return 0;
}

SEC("tp_btf/page_cache_async_ra")
int BPF_PROG(async_ra, struct inode___k *inode, unsigned long index, void *ra, unsigned long req_count)
{
	struct file_key k;
	struct file_stats *s = watched_inode(inode, &k);
	if (!s)
		return 0;
	__sync_fetch_and_add(&s->async_ra, 1);
	__sync_fetch_and_add(&s->ra_pages, req_count);
	return 0;
}

// A user page fault (x86's exceptions:page_fault_user), once per fault as
// the kernel's own fault counts (getrusage) have it, whatever served it:
// filemap_fault, fault-around of small or large folios, or a PMD mapping
// of a huge one, which mm_filemap_fault and mm_filemap_map_pages do not
// all see. Where the kernel has it, it replaces those two (nodebpf.Load).
// Until a file is watched it returns at once; then it looks the faulting
// process up in `mappings`, and for those that map a watched file, the
// address among their mappings' ranges.
SEC("tp_btf/page_fault_user")
int BPF_PROG(page_fault_user, unsigned long address, void *regs, unsigned long error_code)
{
	if (!files_watched)
		return 0;
	__u32 pid = tgid();
	struct proc_mappings *pm = bpf_map_lookup_elem(&mappings, &pid);
	if (!pm)
		return 0;
	struct file_key k = {};
	int hit = 0;
	bpf_spin_lock(&pm->lock);
	for (int i = 0; i < MAX_MAPPINGS; i++) {
		if (address >= pm->m[i].start && address < pm->m[i].end) {
			k = pm->m[i].file;
			hit = 1;
			break;
		}
	}
	bpf_spin_unlock(&pm->lock);
	if (!hit)
		return 0;
	struct file_stats *s = bpf_map_lookup_elem(&files, &k);
	if (!s)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	s->last_io = now;
	__sync_fetch_and_add(&s->faults, 1);
	struct proc_stats *p = proc_stats(&k, now);
	if (p) {
		__sync_fetch_and_add(&p->faults, 1);
		proc_io(p, now);
	}
	return 0;
}

// ---- Model files: opens and reads -----------------------------------------

// fd_inode returns the inode whose page cache the current task's file fd
// reads (its mapping's host), or NULL.
static __always_inline struct inode___k *fd_inode(__u64 fd)
{
	struct file___k *f = fd_file(fd);
	return f ? BPF_CORE_READ(f, f_mapping, host) : 0;
}

static __always_inline char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

// extension_format is the format a file extension (n bytes at e, without
// the dot) names.
static __always_inline __u8 extension_format(const char *e, __u32 n)
{
	char c0 = lower(e[0]), c1 = lower(e[1]), c2 = lower(e[2]), c3 = lower(e[3]);
	switch (n) {
	case 2:
		return c0 == 'p' && c1 == 't' ? FORMAT_PYTORCH : FORMAT_NONE;
	case 3:
		if (c0 == 'p' && c1 == 't' && c2 == 'h')
			return FORMAT_PYTORCH;
		if (c0 == 'b' && c1 == 'i' && c2 == 'n')
			return FORMAT_BIN;
		if (c0 == 't' && c1 == 'r' && c2 == 't')
			return FORMAT_TENSORRT;
		return FORMAT_NONE;
	case 4:
		if (c0 == 'g' && c1 == 'g' && c2 == 'u' && c3 == 'f')
			return FORMAT_GGUF;
		if (c0 == 'c' && c1 == 'k' && c2 == 'p' && c3 == 't')
			return FORMAT_CHECKPOINT;
		if (c0 == 'o' && c1 == 'n' && c2 == 'n' && c3 == 'x')
			return FORMAT_ONNX;
		if (c0 == 'p' && c1 == 'l' && c2 == 'a' && c3 == 'n')
			return FORMAT_TENSORRT;
		return FORMAT_NONE;
	case 6:
		return c0 == 'e' && c1 == 'n' && c2 == 'g' && c3 == 'i' && lower(e[4]) == 'n' && lower(e[5]) == 'e'
			? FORMAT_TENSORRT : FORMAT_NONE;
	case 11: {
		const char want[] = "safetensors";
		for (int i = 0; i < 11; i++)
			if (lower(e[i]) != want[i])
				return FORMAT_NONE;
		return FORMAT_SAFETENSORS;
	}
	}
	return FORMAT_NONE;
}

#define EXT_MAX 12

// set_pending makes the thread's syscall pending, counted once.
static __always_inline void set_pending(struct thread *t, __u32 kind)
{
	if (t->pending == PENDING_NONE)
		__sync_fetch_and_add(&pending_syscalls, 1);
	t->pending = kind;
}

// open_enter looks at the path an open names: one that ends in a model
// file's extension makes the thread's open pending, with the path's last
// component, for sys_exit.
static __always_inline void open_enter(__u64 upath)
{
	__u32 zero = 0;
	char *p = bpf_map_lookup_elem(&path_scratch, &zero);
	if (!p)
		return;
	long n = bpf_probe_read_user_str(p, PATH_BYTES, (void *)upath);
	if (n <= 1)
		return;
	if (n >= PATH_BYTES) {
		count(COUNTER_LONG_PATH);
		return;
	}
	__u32 end = n - 1; // the terminating NUL
	// The last dot, within EXT_MAX bytes of the end.
	__u32 dot = PATH_BYTES;
	for (int i = 1; i <= EXT_MAX; i++) {
		if (i > end)
			break;
		char c = p[(end - i) & (PATH_BYTES - 1)];
		if (c == '/')
			break;
		if (c == '.') {
			dot = end - i;
			break;
		}
	}
	if (dot == PATH_BYTES)
		return;
	char e[EXT_MAX] = {};
	bpf_probe_read_kernel(e, sizeof(e), p + ((dot + 1) & (PATH_BYTES - 1)));
	__u8 format = extension_format(e, end - dot - 1);
	if (format == FORMAT_NONE)
		return;
	struct thread *t = current_thread(BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return;
	// The last component, its last NAME_BYTES bytes.
	__u32 start = end > NAME_BYTES ? end - NAME_BYTES : 0;
	for (int i = 1; i <= NAME_BYTES; i++) {
		if (i > end)
			break;
		if (p[(end - i) & (PATH_BYTES - 1)] == '/') {
			start = end - i + 1;
			break;
		}
	}
	// path_scratch has NAME_BYTES to spare past PATH_BYTES.
	bpf_probe_read_kernel(t->name, NAME_BYTES, p + (start & (PATH_BYTES - 1)));
	t->name_len = end - start;
	t->format = format;
	t->ts = bpf_ktime_get_ns();
	set_pending(t, PENDING_OPEN);
}

// open_exit watches the file a pending open returned, if it is a regular
// file as large as its format's smallest model, and tells user space.
static __always_inline void open_exit(struct thread *t, long fd)
{
	if (fd < 0)
		return;
	struct inode___k *inode = fd_inode(fd);
	if (!inode || (BPF_CORE_READ(inode, i_mode) & S_IFMT) != S_IFREG)
		return;
	__u64 size = BPF_CORE_READ(inode, i_size);
	__u8 format = t->format;
	if (format >= FORMAT_MAX || size < min_size[format & (FORMAT_MAX - 1)])
		return;
	struct file_key k = {.dev = BPF_CORE_READ(inode, i_sb, s_dev), .ino = BPF_CORE_READ(inode, i_ino)};
	struct file_stats zero = {};
	long err = bpf_map_update_elem(&files, &k, &zero, BPF_NOEXIST);
	if (err == -7) { // E2BIG: full
		count(COUNTER_FILES_FULL);
		return;
	}
	files_watched = 1;
	struct file_proc_key pk = {.file = k, .pid = tgid()};
	struct proc_stats n = {.first = t->ts, .burst = t->ts};
	if (bpf_map_update_elem(&file_procs, &pk, &n, BPF_NOEXIST) == -7)
		count(COUNTER_PROCS_FULL);
	struct open_record *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		count(COUNTER_DROPS);
		return;
	}
	r->kind = RECORD_OPEN;
	r->format = format;
	r->name_len = t->name_len;
	r->_pad = 0;
	r->pid = pk.pid;
	r->ts = t->ts;
	r->dev = k.dev;
	r->ino = k.ino;
	r->size = size;
	__builtin_memcpy(r->name, t->name, NAME_BYTES);
	bpf_ringbuf_submit(r, submit_flags());
}

// read_enter makes the thread's read pending when fd is a watched file.
static __always_inline void read_enter(__u64 fd)
{
	struct file_key k;
	if (!watched_inode(fd_inode(fd), &k))
		return;
	struct thread *t = current_thread(BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return;
	t->file = k;
	t->ts = bpf_ktime_get_ns();
	set_pending(t, PENDING_READ);
}

static __always_inline void read_exit(struct thread *t, long ret)
{
	if (ret <= 0)
		return;
	struct file_stats *s = bpf_map_lookup_elem(&files, &t->file);
	if (!s)
		return;
	__u64 now = bpf_ktime_get_ns();
	__sync_fetch_and_add(&s->read_bytes, ret);
	__sync_fetch_and_add(&s->reads, 1);
	s->last_io = now;
	struct proc_stats *p = proc_stats(&t->file, t->ts);
	if (p) {
		__sync_fetch_and_add(&p->read_bytes, ret);
		__sync_fetch_and_add(&p->reads, 1);
		proc_io(p, now);
	}
}

// ---- Model files: mappings --------------------------------------------------

#define PAGE_END(a) (((a) + 4095) & ~4095UL)

// map_locked adds [a, b) of file to pm's mappings, under its lock, where
// it has room: a mapping past MAX_MAPPINGS is left out, and the next scan
// of the process's maps counts it (xpuscope.node.overflow).
static __always_inline void map_locked(struct proc_mappings *pm, __u64 a, __u64 b, struct file_key *file)
{
	for (int i = 0; i < MAX_MAPPINGS; i++) {
		if (!pm->m[i].end) {
			pm->m[i].start = a;
			pm->m[i].end = b;
			pm->m[i].file = *file;
			return;
		}
	}
}

// unmap_locked takes [a, b) out of pm's ranges: a range within it goes,
// one it overlaps is cut, one it splits keeps its head and takes a free
// slot for its tail (map_locked: with none free the tail is left out, and
// the next scan counts it).
static __always_inline void unmap_locked(struct proc_mappings *pm, __u64 a, __u64 b)
{
	int split = 0;
	__u64 tail_start = 0, tail_end = 0;
	struct file_key tail_file = {};
	for (int i = 0; i < MAX_MAPPINGS; i++) {
		__u64 s = pm->m[i].start, e = pm->m[i].end;
		if (!e || b <= s || a >= e)
			continue;
		if (a <= s && b >= e) {
			pm->m[i].start = 0;
			pm->m[i].end = 0;
		} else if (a <= s) {
			pm->m[i].start = b;
		} else if (b >= e) {
			pm->m[i].end = a;
		} else {
			pm->m[i].end = a;
			split = 1;
			tail_start = b;
			tail_end = e;
			tail_file = pm->m[i].file;
		}
	}
	if (split)
		map_locked(pm, tail_start, tail_end, &tail_file);
}

// mmap_enter makes a mmap pending when its fd is a watched file's, or when
// its process maps one (a MAP_FIXED mapping may replace part of it).
static __always_inline void mmap_enter(__u64 len, __u64 fd)
{
	struct file_key k = {};
	int watched = (int)fd >= 0 && watched_inode(fd_inode((int)fd), &k);
	__u32 pid = tgid();
	if (!watched && !bpf_map_lookup_elem(&mappings, &pid))
		return;
	struct thread *t = current_thread(BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return;
	t->file = k;
	t->mapped = watched;
	t->len = len;
	set_pending(t, PENDING_MMAP);
}

// unmap_enter makes a munmap (kind PENDING_UNMAP) of [addr, addr+len),
// or a mremap of it to new_len bytes (PENDING_REMAP), pending when its
// process maps a watched file.
static __always_inline void unmap_enter(__u32 kind, __u64 addr, __u64 len, __u64 new_len)
{
	__u32 pid = tgid();
	if (!bpf_map_lookup_elem(&mappings, &pid))
		return;
	struct thread *t = current_thread(BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return;
	t->addr = addr;
	t->len = len;
	t->new_len = new_len;
	set_pending(t, kind);
}

// mmap_exit takes the new mapping's range out of the process's (a
// MAP_FIXED mapping replaces what was there) and, for a watched file's,
// adds it.
static __always_inline void mmap_exit(struct thread *t, long ret)
{
	if (ret < 0 && ret > -4096) // an error
		return;
	__u64 a = ret, b = PAGE_END(a + t->len);
	__u32 pid = tgid();
	struct proc_mappings *pm = bpf_map_lookup_elem(&mappings, &pid);
	if (!pm && t->mapped) {
		__u32 z = 0;
		void *zero = bpf_map_lookup_elem(&mappings_zero, &z);
		if (zero)
			bpf_map_update_elem(&mappings, &pid, zero, BPF_NOEXIST);
		pm = bpf_map_lookup_elem(&mappings, &pid);
	}
	if (!pm) {
		if (t->mapped)
			count(COUNTER_MAPPINGS_FULL);
		return;
	}
	// One past the process's MAX_MAPPINGS is counted by the next scan
	// (map_locked): once each, however many scans and whoever saw it made.
	bpf_spin_lock(&pm->lock);
	unmap_locked(pm, a, b);
	if (t->mapped)
		map_locked(pm, a, b, &t->file);
	bpf_spin_unlock(&pm->lock);
}

// unmap_exit takes a munmap's range, or a mremap's old range, out of the
// process's mappings. A mremap (remap) moved or resized it: where the old
// range lay in a mapping of a watched file, the new range, at the address
// mremap returned, maps that file. (With MREMAP_DONTUNMAP the old range
// stays mapped; its faults are not counted.)
static __always_inline void unmap_exit(struct thread *t, long ret, int remap)
{
	if (ret < 0 && ret > -4096)
		return;
	__u32 pid = tgid();
	struct proc_mappings *pm = bpf_map_lookup_elem(&mappings, &pid);
	if (!pm)
		return;
	__u64 a = t->addr, b = PAGE_END(t->addr + t->len);
	__u64 to = ret, to_end = PAGE_END(to + t->new_len);
	struct file_key file = {};
	int mapped = 0;
	bpf_spin_lock(&pm->lock);
	for (int i = 0; remap && i < MAX_MAPPINGS; i++) {
		if (pm->m[i].end && a >= pm->m[i].start && a < pm->m[i].end) {
			file = pm->m[i].file;
			mapped = 1;
			break;
		}
	}
	unmap_locked(pm, a, b);
	if (mapped)
		map_locked(pm, to, to_end, &file);
	bpf_spin_unlock(&pm->lock);
}

// A process's address space goes at exec and at its exit: so do its
// mappings. Its exit is its last thread's, which need not be its leader
// (a leader may end with pthread_exit while other threads run on): do_exit
// has taken the thread out of signal->live before this tracepoint, so
// the last thread sees 0 there.
SEC("tp_btf/sched_process_exec")
int BPF_PROG(mappings_exec, struct task_struct___k *p)
{
	__u32 pid = BPF_CORE_READ(p, tgid);
	bpf_map_delete_elem(&mappings, &pid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(mappings_exit, struct task_struct___k *p)
{
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	__u32 pid = BPF_CORE_READ(p, tgid);
	bpf_map_delete_elem(&mappings, &pid);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs___k *regs, long id)
{
	switch (id) {
#ifdef NR_open
	case NR_open:
		if (track_io)
			open_enter(SYSCALL_ARG1(regs));
		return 0;
#endif
	case NR_openat:
	case NR_openat2:
		if (track_io)
			open_enter(SYSCALL_ARG2(regs));
		return 0;
	case NR_read:
	case NR_pread64:
	case NR_readv:
	case NR_preadv:
	case NR_preadv2:
		if (track_io && files_watched)
			read_enter(SYSCALL_ARG1(regs));
		return 0;
	case NR_mmap:
		if (track_mappings && files_watched)
			mmap_enter(SYSCALL_ARG2(regs), SYSCALL_ARG5(regs));
		return 0;
	case NR_munmap:
		if (track_mappings && files_watched)
			unmap_enter(PENDING_UNMAP, SYSCALL_ARG1(regs), SYSCALL_ARG2(regs), 0);
		return 0;
	case NR_mremap:
		if (track_mappings && files_watched)
			unmap_enter(PENDING_REMAP, SYSCALL_ARG1(regs), SYSCALL_ARG2(regs), SYSCALL_ARG3(regs));
		return 0;
	}
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs___k *regs, long ret)
{
	if (!pending_syscalls)
		return 0;
	struct thread *t = current_thread(0);
	if (!t || t->pending == PENDING_NONE)
		return 0;
	__u32 kind = t->pending;
	t->pending = PENDING_NONE;
	__sync_fetch_and_add(&pending_syscalls, -1);
	switch (kind) {
	case PENDING_OPEN:
		open_exit(t, ret);
		break;
	case PENDING_READ:
		read_exit(t, ret);
		break;
	case PENDING_MMAP:
		mmap_exit(t, ret);
		break;
	case PENDING_UNMAP:
	case PENDING_REMAP:
		unmap_exit(t, ret, kind == PENDING_REMAP);
		break;
	}
	return 0;
}

// Keep the types in BTF for bpf2go -type.
const enum record_kind *unused_record_kind __attribute__((unused));
const enum tcp_event *unused_tcp_event __attribute__((unused));
const enum role *unused_role __attribute__((unused));
const enum format *unused_format __attribute__((unused));
const enum counter *unused_counter __attribute__((unused));
const struct tcp_record *unused_tcp_record __attribute__((unused));
const struct open_record *unused_open_record __attribute__((unused));
const struct file_stats *unused_file_stats __attribute__((unused));
const struct proc_stats *unused_proc_stats __attribute__((unused));
const struct file_proc_key *unused_file_proc_key __attribute__((unused));
const struct retransmit_times *unused_sock_retransmits __attribute__((unused));
const struct mapping *unused_mapping __attribute__((unused));
