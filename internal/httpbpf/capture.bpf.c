//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// Captures the plaintext bytes of HTTP connections for the genai capture:
//
//   - TLS: uprobes on OpenSSL's ssl_write_internal and ssl_read_internal,
//     which SSL_write(_ex) and SSL_read(_ex) call, or on those four where
//     the internal ones are not found. The bytes are read on return, when
//     the count is known; the entry probe keeps the arguments in
//     task-local storage. SSL_free ends the connection.
//   - Go's crypto/tls: uprobes on crypto/tls.(*Conn).Write (the bytes are
//     read at entry: Go's register ABI passes the receiver in its first
//     integer register and the slice in the second and third: RAX, RBX,
//     RCX on x86-64, R0, R1, R2 on arm64), on (*Conn).Read's entry (the
//     receiver and buffer kept by goroutine, the g pointer in R14 or R28,
//     which a goroutine keeps across the threads it runs on) and on its
//     one call of runtime.memmove, which copies the plaintext out (from
//     the second register, the third's count of bytes), or, in a build
//     without that call, on each of its RET instructions (the count in
//     the first): a uretprobe would swap the return address on a
//     goroutine stack, which Go moves and walks. (*Conn).Close ends the
//     connection. The registers are args.bpf.h's GO_ARG1-8 and GO_G.
//   - Go's crypto/tls by connection, where user space attaches these
//     instead (a program seen from its exec): uprobes on
//     (*Conn).clientHandshake and serverHandshake mark the connection's
//     socket (CONN_WIRE), whose bytes the syscall programs then send as
//     they cross it, ciphertext (SOURCE_TLS_WIRE); one on
//     (*Config).writeKeyLog sends the traffic secrets (RECORD_KEY) for
//     user space to decrypt with. A few hits a connection, none a call.
//   - OpenSSL by connection, where user space attaches these instead (a
//     process seen from its exec or from its load of libssl): a uprobe on
//     SSL_do_handshake's entry has the syscall programs look, for a
//     while (SNIFF_WINDOW), at the process's new TCP sockets, and one
//     whose first bytes are a TLS handshake record is marked (CONN_WIRE)
//     and captured as ciphertext, whatever reads and writes it (a socket
//     BIO, or the program through memory BIOs); a uretprobe on its return
//     copies the connection's object (RECORD_STATE), where user space
//     finds the traffic secrets. SSL_free ends nothing then: the socket's
//     close does.
//   - Plaintext sockets: BTF raw tracepoints on sys_enter and sys_exit (no
//     kprobes, no tracefs) for write, writev, sendto, sendmsg, read, readv,
//     recvfrom and recvmsg; close ends the connection, and a read that
//     returns 0 tells user space the peer closed its end (RECORD_EOF). A descriptor is
//     classified once, at its first such call: a TCP socket with a watched
//     port at either end (user space fills `ports`), else ignored. Its first
//     bytes then say whether it speaks HTTP/1.x; if not it is ignored too.
//     The syscall programs run on every syscall of every process, so they
//     look at a descriptor only while a TCP socket with a watched port may
//     exist: inet_sock_set_state counts those (`open_watched`), and user
//     space says whether any predates the capture (`preexisting`).
//
// A connection's socket is told once (RECORD_SOCKET, its inode number),
// where user space asks (`find_sockets`), from the kernel: a plaintext
// connection's at its first call, by its descriptor; a Go
// connection's at its first call that speaks HTTP, through the *tls.Conn
// (go_conn_fd); an OpenSSL connection's at a data syscall its thread
// makes inside an SSL_read or SSL_write of it (tls_enter marks the
// thread, the syscall programs take the descriptor), so only where the
// plaintext capture's syscall programs run.
//
// Connections are keyed by (pid, source, SSL pointer or fd) and numbered
// on the host (gen), in every record: OpenSSL gives a new connection the
// memory of the SSL object it just freed, and a new socket takes the
// lowest free fd, so a key names one connection after another; the
// number tells them apart. A connection user space has no use for is
// muted by its number (`mute`): its bytes are skipped, its end is still
// told, so that user space forgets it. Each call's
// bytes go to the ring buffer in records of at most PIECE bytes, at most
// MAX_PIECES per call; `total` says how many the call moved, so user space
// knows what it did not get. Records are submitted without a wakeup unless
// the buffer is past the watermark; the reader polls. A record with no
// room is counted in counters[COUNTER_DROPS].

#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <asm/unistd.h>
#include "../bpfsource/args.bpf.h"
#include "../bpfsource/fd.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define PIECE 8192
#define MAX_PIECES 8 // 64 KiB of one call
#define MAX_IOV 8

enum record_kind {
	RECORD_DATA = 1,
	RECORD_CLOSE = 2,
	RECORD_EOF = 3, // a plaintext read returned 0: the peer closed its end
	RECORD_SOCKET = 4, // a connection's socket: its inode number, a __u64 of data
	RECORD_KEY = 5,    // a TLS secret a Go program logged (struct key_record)
	RECORD_STATE = 6,  // an OpenSSL connection's object as its handshake ended: STATE_BYTES of it
	RECORD_SESSION = 7, // the session it points to: SESSION_BYTES of it; seq: where the object holds the pointer
};

enum source {
	SOURCE_TLS = 1,    // OpenSSL, conn is the SSL pointer
	SOURCE_SOCKET = 2, // socket syscalls, conn is the fd
	SOURCE_GOTLS = 3,  // Go's crypto/tls, conn is the *tls.Conn
	SOURCE_TLS_WIRE = 4, // a TLS connection (Go's crypto/tls, OpenSSL) as its socket carries it, ciphertext; conn is the fd
};

enum direction {
	DIR_WRITE = 0, // the process sent the bytes
	DIR_READ = 1,  // the process received them
};

enum counter {
	COUNTER_DROPS = 0,     // records the ring buffer had no room for
	COUNTER_SHORT = 1,     // calls moving more than MAX_PIECES * PIECE bytes: the rest not captured
	COUNTER_READ_FAULT = 2, // user memory that could not be read
	COUNTER_NOT_SOCKET = 3, // Go TLS handshakes, in a program probed by connection, over no TCP socket of the process's: not read
	COUNTER_MAX,
};

// The API a TLS probe is attached to: the attach cookie. The _EX ones,
// (ssl, buf, num, size_t *count), are also those of ssl_write_internal and
// ssl_read_internal.
enum tls_api {
	TLS_SSL_WRITE = 1,
	TLS_SSL_WRITE_EX = 2,
	TLS_SSL_READ = 3,
	TLS_SSL_READ_EX = 4,
};

// The Go crypto/tls method a go_tls probe is on: its attach cookie. One
// program takes them all, so that a Go binary is one uprobe_multi link:
// each link's attach and detach waits for a kernel grace period.
enum go_tls_api {
	GO_TLS_WRITE = 1,       // (*Conn).Write's entry
	GO_TLS_READ = 2,        // (*Conn).Read's entry
	GO_TLS_READ_RETURN = 3, // one of (*Conn).Read's RET instructions
	GO_TLS_CLOSE = 4,       // (*Conn).Close's entry
	GO_TLS_READ_COPY = 5,   // (*Conn).Read's call of runtime.memmove
	GO_TLS_HANDSHAKE = 6,   // (*Conn).clientHandshake's or serverHandshake's entry
	GO_TLS_KEYLOG = 7,      // (*Config).writeKeyLog's entry
};

// The secrets a RECORD_KEY carries, by the label Go logs them under (the
// NSS key log's).
enum key_label {
	KEY_CLIENT_TRAFFIC = 1, // CLIENT_TRAFFIC_SECRET_0, TLS 1.3
	KEY_SERVER_TRAFFIC = 2, // SERVER_TRAFFIC_SECRET_0, TLS 1.3
	KEY_TLS12 = 3,          // CLIENT_RANDOM: TLS 1.2's master secret
};

struct record_header {
	__u64 ts;     // CLOCK_MONOTONIC ns of the call's return
	__u64 conn;   // SSL pointer or fd
	__u32 pid;
	__u32 tid;
	__u8 kind;    // enum record_kind
	__u8 source;  // enum source
	__u8 dir;     // enum direction
	__u8 _pad;
	__u32 len;    // bytes of data that follow
	__u32 total;  // bytes the call moved; a close's (and an end's): the last read's number
	__u32 offset; // of this record's data within them
	__u32 seq;    // the call's number among its direction's on its connection, from 1; a close's: the last write's
	__u32 gen;    // the connection's number on the host, from 1: a reused SSL pointer or fd is a new one
};

struct record {
	struct record_header h;
	__u8 data[PIECE];
};

// Connection states in `conns`.
enum conn_state {
	CONN_WATCH = 1,  // a watched socket, not yet seen to speak HTTP
	CONN_HTTP = 2,   // speaks HTTP/1.x: captured
	CONN_IGNORE = 3, // not a watched socket, or not HTTP: skipped
	CONN_MUTED = 4,  // HTTP, muted by user space: its bytes are skipped, its close is told
	CONN_WIRE = 5,   // a TLS connection's socket, from its handshake: captured whole
};

struct conn_key {
	__u32 pid;
	__u32 source;
	__u64 conn;
};

struct conn {
	__u32 state;  // enum conn_state
	__u32 seq[2]; // calls captured so far, by direction: user space sees a lost one as a jump
	__u32 gen;    // from next_gen
	// A watched connection's first bytes, while fewer than it takes to
	// tell its protocol (HEAD_BYTES), moved in direction head_dir.
	__u8 head[4];
	__u8 head_len;
	__u8 head_dir;
	// The connection's socket was told (RECORD_SOCKET); a Go or a
	// plaintext one's was looked for, found or not.
	__u8 sock;
	// The connection's bytes are a TLS connection's ciphertext
	// (CONN_WIRE, and CONN_MUTED after it): its records' source is
	// SOURCE_TLS_WIRE.
	__u8 wire;
	// What a CONN_WATCH socket's first bytes may make it (enum accept).
	__u8 accepts;
	__u8 _pad[3];
};

// What a socket's first bytes are looked at for: HTTP, on a watched
// port; a TLS handshake, in a process whose OpenSSL is read by connection
// and began a handshake lately.
enum accept {
	ACCEPT_HTTP = 1,
	ACCEPT_TLS = 2,
};

// HEAD_BYTES is how many bytes tell a connection's protocol.
#define HEAD_BYTES 4

// What a thread's call in progress needs at its return.
struct pending {
	__u64 conn; // SSL pointer or fd
	__u64 buf;  // buffer, or the iovec array
	__u64 size; // SSL_*_ex: where the count is written; iovec calls: iovcnt
	__u32 api;  // tls_api, or the syscall number; 0: none
	__u32 _pad;
};

struct thread {
	struct pending tls;
	struct pending sys;
	// The OpenSSL call in tls is of a connection whose socket is not
	// known: counted in socket_waiters while set.
	__u32 wants_socket;
	__u32 _pad;
	// The SSL pointer of the SSL_do_handshake in progress, for its
	// return; 0: none.
	__u64 handshake;
};

// Tunables, set before load.
volatile const __u64 wakeup_bytes = 1 << 20;
// The capturing process, whose own traffic (its exports, its metrics
// endpoint on a watched port) is not captured, in TLS or in plaintext:
// the agent must not read itself.
volatile const __u32 self_pid = 0;

// Whose connections' sockets are told (RECORD_SOCKET), set before load:
// Go's TLS ones, found through the *tls.Conn; OpenSSL's, found by the data
// syscalls' programs, which must then run; the plaintext ones, by those
// programs' descriptor.
enum find_socket {
	FIND_GO = 1,
	FIND_OPENSSL = 2,
	FIND_PLAINTEXT = 4,
};
volatile const __u32 find_sockets = 0;
// The hashes the Go compiler gives the type *net.TCPConn (its type
// descriptor's, which an itab copies), set before load: that of the
// toolchains of today, and of earlier ones, which hashed otherwise.
volatile const __u32 go_tcp_conn_hash[2] = {};

// The syscall programs' gate. open_watched counts the TCP sockets with a
// watched port that left TCP_CLOSE after load and have not returned to
// it, and the Go TLS connections' sockets read by connection (CONN_WIRE);
// preexisting, set by user space, says sockets with a watched port that
// predate the load may still be open. While both are 0 the syscall
// programs skip data syscalls at once. A socket watched_socks has no room
// for opens the gate for good (gate_overflow): it fails open.
volatile __u64 open_watched = 0;
// The last connection number given (struct conn's gen).
volatile __u32 next_gen = 0;
volatile __u32 preexisting = 0;
volatile __u32 gate_overflow = 0;
// The threads inside an OpenSSL call that wait for its connection's
// socket (struct thread's wants_socket): while there are none, the data
// syscalls' programs look for none, a global read.
volatile __u64 socket_waiters = 0;
// Until when (CLOCK_MONOTONIC ns) the syscall programs run for the
// sockets of processes whose OpenSSL began a handshake (tls_handshake):
// SNIFF_WINDOW past the last one. 0: never.
volatile __u64 sniff_until = 0;

// How long after a process enters SSL_do_handshake its new sockets'
// first bytes are looked at for a TLS handshake: long enough for a
// program over memory BIOs (Python's asyncio) to send or receive its
// ClientHello after the call that made it or waits for it.
#define SNIFF_WINDOW (5ULL * 1000 * 1000 * 1000)

// STATE_BYTES of an OpenSSL connection's object are copied at the end of
// its handshake (RECORD_STATE): OpenSSL 3.0 keeps its TLS 1.3 traffic
// secrets in its first 2 KiB, and later releases have added fields
// before them; a record's data holds at most PIECE.
#define STATE_BYTES 8192

// SESSION_BYTES of the session an OpenSSL connection's object points to
// are copied with it (RECORD_SESSION), for each offset of the pointer
// user space has set (session_offsets): the TLS 1.2 master secret lives
// there (80 bytes in, in OpenSSL 1.1.1 and 3.0), and is wiped when the
// connection is freed, often before user space could read it from the
// process.
#define SESSION_BYTES 256
volatile __u32 session_offsets[2] = {};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} records SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

// A record is built here, then copied to the ring buffer at its size.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct record);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct conn_key);
	__type(value, struct conn);
} conns SEC(".maps");

// Connections user space has no use for, by gen: their next call mutes
// them (CONN_MUTED). User space names the connection by its number, not
// by its key, which a later connection may have taken by then; an entry
// whose connection ended first stays until the LRU drops it, and names no
// other.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} mute SEC(".maps");

// TCP ports whose connections are captured in plaintext (host order).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u16);
	__type(value, __u8);
} ports SEC(".maps");

// The sockets open_watched counts, by address.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} watched_socks SEC(".maps");

// A goroutine's crypto/tls.(*Conn).Read in progress, by process and g
// pointer: the receiver and the buffer, for the probe on its return (its
// copy out, or its RETs). A Read that fails copies nothing out and leaves
// its entry to the goroutine's next Read, or to the LRU.
struct go_read_key {
	__u32 pid;
	__u32 _pad;
	__u64 g;
};

struct go_read {
	__u64 conn;
	__u64 buf;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct go_read_key);
	__type(value, struct go_read);
} go_reads SEC(".maps");

// The processes whose OpenSSL, read by connection, entered
// SSL_do_handshake: when last (CLOCK_MONOTONIC ns), by pid.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} handshaking SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread);
} threads SEC(".maps");

// Kernel structures, relocated by CO-RE against the running kernel. The
// registers of a system call: its first three arguments (SYS_ARG1-3) at
// sys_enter, and its number at sys_exit (SYS_NR), where arm64 has
// written the return value over x0.
#if defined(__TARGET_ARCH_arm64)
struct pt_regs___k {
	unsigned long regs[31];
	int syscallno;
} __attribute__((preserve_access_index));
#define SYS_ARG1(regs) ((regs)->regs[0])
#define SYS_ARG2(regs) ((regs)->regs[1])
#define SYS_ARG3(regs) ((regs)->regs[2])
#define SYS_NR(regs) ((regs)->syscallno)
#else
struct pt_regs___k {
	unsigned long di, si, dx, r10, r8, orig_ax;
} __attribute__((preserve_access_index));
#define SYS_ARG1(regs) ((regs)->di)
#define SYS_ARG2(regs) ((regs)->si)
#define SYS_ARG3(regs) ((regs)->dx)
#define SYS_NR(regs) ((regs)->orig_ax)
#endif

struct inode___k {
	unsigned short i_mode;
	unsigned long i_ino;
} __attribute__((preserve_access_index));

struct sock_common___k {
	unsigned short skc_family;
	__u16 skc_dport; // network order
	__u16 skc_num;   // host order
} __attribute__((preserve_access_index));

struct sock___k {
	struct sock_common___k __sk_common;
} __attribute__((preserve_access_index));

struct socket___k {
	short type;
	struct sock___k *sk;
} __attribute__((preserve_access_index));

struct file___k {
	struct inode___k *f_inode;
	void *private_data;
} __attribute__((preserve_access_index));

struct iovec___u {
	__u64 base;
	__u64 len;
};

struct msghdr___u {
	__u64 name;
	__u32 namelen;
	__u32 _pad;
	__u64 iov;
	__u64 iovlen;
};

#define TCP_CLOSE 7
#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1

// System call numbers, from the kernel headers of the architecture the
// object is built for (gen.go's -I): x86-64's own, arm64's the generic
// ones.
#define NR_read __NR_read
#define NR_write __NR_write
#define NR_close __NR_close
#define NR_readv __NR_readv
#define NR_writev __NR_writev
#define NR_sendto __NR_sendto
#define NR_recvfrom __NR_recvfrom
#define NR_sendmsg __NR_sendmsg
#define NR_recvmsg __NR_recvmsg

static __always_inline void count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &c);
	if (v)
		*v += 1;
}

static __always_inline struct thread *current_thread(void)
{
	return bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

static __always_inline __u64 submit_flags(void)
{
	return bpf_ringbuf_query(&records, BPF_RB_AVAIL_DATA) > wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline int is_http_start(const __u8 *b)
{
	// Request methods, or a response's "HTTP/"; HTTP/2's client preface
	// ("PRI * HTTP/2.0"), or the head of a server's first SETTINGS frame
	// (a length under 64 KiB and a multiple of 6, type 0x4), which a
	// server may send before it reads the preface.
	switch (b[0]) {
	case 0: return b[3] == 0x4 && (((__u32)b[1] << 8 | b[2]) % 6) == 0;
	case 'G': return b[1] == 'E' && b[2] == 'T' && b[3] == ' ';
	case 'P': return (b[1] == 'O' && b[2] == 'S' && b[3] == 'T') || (b[1] == 'U' && b[2] == 'T' && b[3] == ' ') ||
			 (b[1] == 'A' && b[2] == 'T' && b[3] == 'C') || (b[1] == 'R' && b[2] == 'I' && b[3] == ' ');
	case 'H': return (b[1] == 'E' && b[2] == 'A' && b[3] == 'D') || (b[1] == 'T' && b[2] == 'T' && b[3] == 'P');
	case 'D': return b[1] == 'E' && b[2] == 'L' && b[3] == 'E';
	case 'O': return b[1] == 'P' && b[2] == 'T' && b[3] == 'I';
	}
	return 0;
}

// is_tls_start says whether a connection's first bytes are a TLS
// handshake record's header (a ClientHello's: its type, then a record
// version of 3.x).
static __always_inline int is_tls_start(const __u8 *b)
{
	return b[0] == 0x16 && b[1] == 0x03 && b[2] <= 0x04;
}

// start_call fills the scratch record's header for a call of c that moved
// total bytes, numbering the call; NULL if there is no scratch.
static __always_inline struct record *start_call(struct conn_key *k, struct conn *c, __u8 dir, __u32 total, __u64 ts)
{
	__u32 zero = 0;
	struct record *r = bpf_map_lookup_elem(&scratch, &zero);
	if (!r)
		return 0;
	__u64 id = bpf_get_current_pid_tgid();
	r->h.ts = ts;
	r->h.conn = k->conn;
	r->h.pid = id >> 32;
	r->h.tid = (__u32)id;
	r->h.kind = RECORD_DATA;
	r->h.source = c->wire ? SOURCE_TLS_WIRE : k->source;
	r->h.dir = dir;
	r->h._pad = 0;
	r->h.total = total;
	// By direction: a connection's reads and writes may be made on two
	// threads at once (Go's HTTP/2 client reads in a goroutine of its
	// own), whose records reach the ring in either order; each
	// direction's calls are made one at a time, their records in order.
	r->h.seq = __sync_add_and_fetch(&c->seq[dir & 1], 1); // atomic fetch: -mcpu=v3 (Linux 5.12+)
	r->h.gen = c->gen;
	return r;
}

// emit_bytes sends, with the header start_call filled in the scratch
// record, n bytes at user address buf, which the call moved at offset
// base of its total (span: n | base << 32), in pieces; it returns the
// bytes sent. A global function, verified once on its own: its callers
// loop over it.
__attribute__((noinline)) int emit_bytes(__u64 buf, __u64 span)
{
	__u32 zero = 0;
	struct record *r = bpf_map_lookup_elem(&scratch, &zero);
	if (!r)
		return 0;
	__u32 n = (__u32)span, base = span >> 32;
	__u32 sent = 0;
	for (int i = 0; i < MAX_PIECES; i++) {
		if (sent >= n || base + sent >= MAX_PIECES * PIECE)
			break;
		__u32 len = n - sent;
		if (len > PIECE)
			len = PIECE;
		asm volatile("" : "+r"(len)); // keep the bound below for the verifier
		if (len > PIECE)
			break;
		if (bpf_probe_read_user(r->data, len, (void *)(buf + sent))) {
			// Say where the bytes stop: a record with no data.
			count(COUNTER_READ_FAULT);
			r->h.len = 0;
			r->h.offset = base + sent;
			if (bpf_ringbuf_output(&records, r, sizeof(r->h), submit_flags()))
				count(COUNTER_DROPS);
			break;
		}
		r->h.len = len;
		r->h.offset = base + sent;
		if (bpf_ringbuf_output(&records, r, sizeof(r->h) + len, submit_flags()))
			count(COUNTER_DROPS);
		sent += len;
	}
	return sent;
}

static __always_inline __u32 emit(__u64 buf, __u32 n, __u32 base)
{
	return emit_bytes(buf, n | ((__u64)base << 32));
}

// note_header fills h, the header of a record of kind that tells of the
// connection k, c, not of a call's bytes.
static __always_inline void note_header(struct record_header *h, struct conn_key *k, struct conn *c, __u8 kind)
{
	__builtin_memset(h, 0, sizeof(*h));
	__u64 id = bpf_get_current_pid_tgid();
	h->ts = bpf_ktime_get_ns();
	h->conn = k->conn;
	h->pid = id >> 32;
	h->tid = (__u32)id;
	h->kind = kind;
	h->source = c->wire ? SOURCE_TLS_WIRE : k->source;
	h->gen = c->gen;
}

// emit_end tells user space that the connection k, c ended (RECORD_CLOSE)
// or that its peer closed its end (RECORD_EOF), after its last call.
static __always_inline void emit_end(struct conn_key *k, struct conn *c, __u8 kind)
{
	struct record_header *h = bpf_ringbuf_reserve(&records, sizeof(*h), 0);
	if (!h) {
		count(COUNTER_DROPS);
		return;
	}
	note_header(h, k, c, kind);
	h->seq = c->seq[DIR_WRITE];
	h->total = c->seq[DIR_READ];
	bpf_ringbuf_submit(h, submit_flags());
}

struct socket_record {
	struct record_header h;
	__u64 ino;
};

// emit_socket tells user space that the connection k, c is over the
// socket of inode number ino (RECORD_SOCKET), and marks c told.
static __always_inline void emit_socket(struct conn_key *k, struct conn *c, __u64 ino)
{
	struct socket_record *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		count(COUNTER_DROPS);
		return;
	}
	c->sock = 1;
	note_header(&r->h, k, c, RECORD_SOCKET);
	r->h.len = sizeof(r->ino);
	r->h.total = sizeof(r->ino);
	r->ino = ino;
	bpf_ringbuf_submit(r, submit_flags());
}

// new_conn is the entry of a connection first seen, in state.
static __always_inline struct conn new_conn(__u32 state)
{
	struct conn c = {.state = state, .gen = __sync_add_and_fetch(&next_gen, 1)};
	return c;
}

// end_conn forgets the connection of k, whose entry is c, telling user
// space if it has seen the connection.
static __always_inline void end_conn(struct conn_key *k, struct conn *c)
{
	if (c->state == CONN_HTTP || c->state == CONN_WIRE || c->state == CONN_MUTED)
		emit_end(k, c, RECORD_CLOSE);
	bpf_map_delete_elem(&mute, &c->gen);
	bpf_map_delete_elem(&conns, k);
}

// emit_head sends the bytes held in c's head, which came before the ones
// that told its protocol, as a call of their own in direction dir.
static __always_inline void emit_head(struct conn_key *k, struct conn *c, __u8 dir, __u32 held, __u64 ts)
{
	held &= HEAD_BYTES - 1;
	struct record *r = start_call(k, c, dir, held, ts);
	if (!r || !held)
		return;
	__builtin_memcpy(r->data, c->head, HEAD_BYTES);
	r->h.len = held;
	r->h.offset = 0;
	if (bpf_ringbuf_output(&records, r, sizeof(r->h) + held, submit_flags()))
		count(COUNTER_DROPS);
}

// http_conn decides, from the first HEAD_BYTES bytes a connection moves
// in one direction, whether it speaks HTTP/1.x or HTTP/2 (ACCEPT_HTTP),
// or begins a TLS handshake (ACCEPT_TLS: the socket of an OpenSSL
// connection read by connection, wire_socket), and returns whether to
// capture the n bytes at buf it moves now, in direction dir. Bytes that
// come fewer at a time (a client that writes its method apart) are held
// in c until there are enough; if they tell HTTP or TLS, they are sent
// first, as a call of their own. c is k's entry in conns. A Go TLS
// connection's socket (CONN_WIRE from its handshake) is captured whole.
static __always_inline int wire_socket(struct conn_key *k, struct conn *c, __u32 find);

static __always_inline int http_conn(struct conn_key *k, struct conn *c, __u64 buf, __u32 n, __u8 dir, __u64 ts)
{
	if (c->state == CONN_HTTP || c->state == CONN_WIRE) {
		if (!bpf_map_lookup_elem(&mute, &c->gen))
			return 1;
		c->state = CONN_MUTED;
		bpf_map_delete_elem(&mute, &c->gen);
		return 0;
	}
	if (c->state != CONN_WATCH || n == 0)
		return 0;
	__u32 held = c->head_dir == dir ? c->head_len & (HEAD_BYTES - 1) : 0;
	__u32 take = HEAD_BYTES - held;
	if (take > n)
		take = n;
	// The bytes as one little-endian word, byte i in bits 8i: the held
	// ones, then the new ones (scalars only, for the verifier).
	__u32 word = 0, in = 0;
	if (take < 1 || take > HEAD_BYTES || bpf_probe_read_user(&in, take, (void *)buf))
		return 0;
	if (held) {
		__builtin_memcpy(&word, c->head, HEAD_BYTES);
		word &= (1U << (8 * held)) - 1;
	}
	word |= in << (8 * held);
	__u8 b[HEAD_BYTES];
	__builtin_memcpy(b, &word, HEAD_BYTES);
	if (held + take < HEAD_BYTES) {
		__builtin_memcpy(c->head, &word, HEAD_BYTES);
		c->head_len = held + take;
		c->head_dir = dir;
		return 0;
	}
	c->head_len = 0;
	if ((c->accepts & ACCEPT_TLS) && is_tls_start(b) && wire_socket(k, c, FIND_OPENSSL))
		c->state = CONN_WIRE;
	else
		c->state = (c->accepts & ACCEPT_HTTP) && is_http_start(b) ? CONN_HTTP : CONN_IGNORE;
	if (c->state == CONN_IGNORE)
		return 0;
	if (held)
		emit_head(k, c, dir, held, ts);
	return 1;
}

// ---- Sockets ------------------------------------------------------------

// tcp_sock returns the socket of descriptor fd of the current process
// when it is a TCP one (AF_INET or AF_INET6, SOCK_STREAM), and its file
// in *file; else NULL.
static __always_inline struct sock___k *tcp_sock(__u64 fd, struct file___k **file)
{
	struct file___k *f = fd_file(fd);
	if (!f)
		return 0;
	if ((BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
		return 0;
	struct socket___k *sock = BPF_CORE_READ(f, private_data);
	if (!sock || BPF_CORE_READ(sock, type) != SOCK_STREAM)
		return 0;
	struct sock___k *sk = BPF_CORE_READ(sock, sk);
	if (!sk)
		return 0;
	unsigned short family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family != AF_INET && family != AF_INET6)
		return 0;
	*file = f;
	return sk;
}

// tcp_inode returns the inode number of descriptor fd's socket (as
// socket:[ino] in /proc/<pid>/fd) when it is a TCP one, else 0. A global
// function, verified once on its own, as its callers' are many.
__attribute__((noinline)) __u64 tcp_inode(__u64 fd)
{
	struct file___k *f = 0;
	if (!tcp_sock(fd, &f))
		return 0;
	return BPF_CORE_READ(f, f_inode, i_ino);
}

// The syscall programs' gate. gate_open says whether a socket they
// capture may be open: one with a watched port, or a TLS connection's
// read by connection, or whether a process whose OpenSSL is may be
// opening one (sniff_until); open_gate counts sk among them until it
// returns to TCP_CLOSE (sock_state).
static __always_inline int gate_open(void)
{
	return open_watched || preexisting || gate_overflow || (sniff_until && bpf_ktime_get_ns() < sniff_until);
}

static __always_inline void open_gate(struct sock___k *sk)
{
	__u64 key = (__u64)sk;
	__u8 one = 1;
	long err = bpf_map_update_elem(&watched_socks, &key, &one, BPF_NOEXIST);
	if (err == 0)
		__sync_fetch_and_add(&open_watched, 1);
	else if (err != -17) // EEXIST: counted already
		gate_overflow = 1;
}

// wire_socket marks the socket k (a descriptor, c its entry) as a TLS
// connection's read by connection: captured whole from here, and
// counted by the gate while open; its socket told where find_sockets
// has find. 0 if it is no TCP socket. An OpenSSL connection's, where its
// first bytes are a TLS handshake record in a process handshaking
// lately; a Go one's, at its handshake (wire_conn).
static __always_inline int wire_socket(struct conn_key *k, struct conn *c, __u32 find)
{
	struct file___k *f = 0;
	struct sock___k *sk = tcp_sock(k->conn, &f);
	if (!sk)
		return 0;
	c->wire = 1;
	open_gate(sk);
	if ((find_sockets & find) && !c->sock)
		emit_socket(k, c, BPF_CORE_READ(f, f_inode, i_ino));
	return 1;
}

// Where Go keeps a connection's descriptor, in every release the tests
// build with (1.25 to 1.27) and long before: crypto/tls.Conn begins with
// its conn, a net.Conn (an itab pointer, then a data pointer); an itab's
// type hash follows its interface and type pointers; a *net.TCPConn
// points at net.conn{fd *netFD}; netFD begins with a poll.FD, whose
// Sysfd int follows its fdMutex{state uint64; rsema, wsema uint32}.
#define GO_ITAB_HASH 16
#define GO_SYSFD 16

// go_conn_fd returns the descriptor of the Go crypto/tls.Conn at c when
// its conn is a *net.TCPConn, else -1. Another net.Conn (a wrapper, a
// pipe) fails at its itab's type hash, before any pointer of it is
// followed; a read that faults fails too.
static __always_inline long go_conn_fd(__u64 c)
{
	__u64 conn[2] = {}; // itab, data
	if (bpf_probe_read_user(conn, sizeof(conn), (void *)c) || !conn[0] || !conn[1])
		return -1;
	__u32 hash = 0;
	if (bpf_probe_read_user(&hash, sizeof(hash), (void *)(conn[0] + GO_ITAB_HASH)) ||
	    (hash != go_tcp_conn_hash[0] && hash != go_tcp_conn_hash[1]))
		return -1;
	__u64 netfd = 0;
	long fd = -1;
	if (bpf_probe_read_user(&netfd, sizeof(netfd), (void *)conn[1]) || !netfd ||
	    bpf_probe_read_user(&fd, sizeof(fd), (void *)(netfd + GO_SYSFD)))
		return -1;
	return fd;
}

// go_conn_inode returns the inode number of the TCP socket under the Go
// crypto/tls.Conn at c, else 0. A global function, verified once on its
// own: go_tls captures at three places.
__attribute__((noinline)) __u64 go_conn_inode(__u64 c)
{
	long fd = go_conn_fd(c);
	return fd < 0 ? 0 : tcp_inode(fd);
}

// go_socket tells the socket of the Go crypto/tls connection k, c where
// it is a TCP socket of the process's; found or not, it is not looked
// for again.
static __always_inline void go_socket(struct conn_key *k, struct conn *c)
{
	c->sock = 1;
	__u64 ino = go_conn_inode(k->conn);
	if (ino)
		emit_socket(k, c, ino);
}

// stop_waiting ends t's wait for its OpenSSL call's socket, if it waits.
static __always_inline void stop_waiting(struct thread *t)
{
	if (t->wants_socket) {
		t->wants_socket = 0;
		__sync_fetch_and_add(&socket_waiters, -1);
	}
}

// tls_socket takes descriptor fd, of a data syscall the current thread
// makes, as the socket of the OpenSSL connection whose call it is in,
// if the thread waits for that socket (tls_enter) and fd is a TCP
// socket: a call on a connection over another descriptor (an
// OpenSSL's read of /dev/urandom) waits on.
static __always_inline void tls_socket(__u64 fd)
{
	struct thread *t = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0, 0);
	if (!t || !t->wants_socket)
		return;
	__u64 ino = tcp_inode(fd);
	if (!ino)
		return;
	stop_waiting(t);
	struct conn_key k = {.pid = bpf_get_current_pid_tgid() >> 32, .source = SOURCE_TLS, .conn = t->tls.conn};
	struct conn *c = bpf_map_lookup_elem(&conns, &k);
	if (c && !c->sock)
		emit_socket(&k, c, ino);
}

// ---- TLS: OpenSSL -------------------------------------------------------

// capture_tls sends the n plaintext bytes at buf that a TLS connection
// (of source, by its pointer conn) moved in direction dir.
static __always_inline void capture_tls(__u32 source, __u64 conn, __u64 buf, __u64 n, __u8 dir, __u64 ts)
{
	struct conn_key k = {.pid = bpf_get_current_pid_tgid() >> 32, .source = source, .conn = conn};
	struct conn *c = bpf_map_lookup_elem(&conns, &k);
	if (!c) {
		struct conn watch = new_conn(CONN_WATCH);
		watch.accepts = ACCEPT_HTTP;
		bpf_map_update_elem(&conns, &k, &watch, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&conns, &k);
		if (!c)
			return;
	}
	__u32 total = n > 0xffffffff ? 0xffffffff : n;
	if (!http_conn(&k, c, buf, total, dir, ts))
		return;
	if (source == SOURCE_GOTLS && (find_sockets & FIND_GO) && !c->sock)
		go_socket(&k, c);
	if (!start_call(&k, c, dir, total, ts))
		return;
	if (emit(buf, total, 0) < total)
		count(COUNTER_SHORT);
}

static __always_inline __u32 tls_api(struct pt_regs *ctx)
{
	return (__u32)bpf_get_attach_cookie(ctx);
}

// SSL_write(ssl, buf, num), SSL_read(ssl, buf, num), and the _ex variants
// and internal functions (ssl, buf, num, size_t *count). A call of an
// HTTP connection whose socket is not known yet waits for it: the
// socket's data syscalls it makes tell it (tls_socket).
SEC("uprobe")
int tls_enter(struct pt_regs *ctx)
{
	struct thread *t = current_thread();
	if (!t)
		return 0;
	t->tls.conn = PT_REGS_PARM1(ctx);
	t->tls.buf = PT_REGS_PARM2(ctx);
	t->tls.size = PT_REGS_PARM4(ctx);
	t->tls.api = tls_api(ctx);
	stop_waiting(t); // a call whose return was not seen
	if (!(find_sockets & FIND_OPENSSL))
		return 0;
	struct conn_key k = {.pid = bpf_get_current_pid_tgid() >> 32, .source = SOURCE_TLS, .conn = t->tls.conn};
	struct conn *c = bpf_map_lookup_elem(&conns, &k);
	if (c && c->state == CONN_HTTP && !c->sock) {
		t->wants_socket = 1;
		__sync_fetch_and_add(&socket_waiters, 1);
	}
	return 0;
}

SEC("uretprobe")
int tls_return(struct pt_regs *ctx)
{
	__u64 ts = bpf_ktime_get_ns();
	struct thread *t = current_thread();
	__u32 api = tls_api(ctx);
	if (!t)
		return 0;
	stop_waiting(t);
	if (t->tls.api != api)
		return 0;
	struct pending p = t->tls;
	t->tls.api = 0;
	int ret = (int)PT_REGS_RC(ctx); // the functions return int: the upper half of rax (x0) is not theirs
	__u64 n = 0;
	if (api == TLS_SSL_WRITE_EX || api == TLS_SSL_READ_EX) {
		if (ret <= 0 || bpf_probe_read_user(&n, sizeof(n), (void *)p.size))
			return 0;
	} else {
		if (ret <= 0)
			return 0;
		n = ret;
	}
	__u8 dir = (api == TLS_SSL_READ || api == TLS_SSL_READ_EX) ? DIR_READ : DIR_WRITE;
	capture_tls(SOURCE_TLS, p.conn, p.buf, n, dir, ts);
	return 0;
}

// SSL_free(ssl): the connection is over.
SEC("uprobe")
int tls_free(struct pt_regs *ctx)
{
	struct conn_key k = {.pid = bpf_get_current_pid_tgid() >> 32, .source = SOURCE_TLS, .conn = PT_REGS_PARM1(ctx)};
	struct conn *c = bpf_map_lookup_elem(&conns, &k);
	if (c)
		end_conn(&k, c);
	return 0;
}

// SSL_do_handshake(ssl), where OpenSSL is read by connection (SSL_connect
// and SSL_accept call it): the process's new sockets are looked at for a
// while (handshaking_lately), the SSL pointer kept for the return.
SEC("uprobe")
int tls_handshake(struct pt_regs *ctx)
{
	struct thread *t = current_thread();
	if (!t)
		return 0;
	t->handshake = PT_REGS_PARM1(ctx);
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	__u64 now = bpf_ktime_get_ns();
	bpf_map_update_elem(&handshaking, &pid, &now, BPF_ANY);
	sniff_until = now + SNIFF_WINDOW;
	return 0;
}

struct session_record {
	struct record_header h;
	__u8 data[SESSION_BYTES];
};

// SSL_do_handshake's return: once it returns 1 (done; a non-blocking
// handshake returns less until then), the connection's object is copied
// to user space (RECORD_STATE), STATE_BYTES of it, or half that where the
// whole is not readable, and the session it points to (RECORD_SESSION),
// where user space has said where the pointer is. They hold the
// connection's secrets, which never leave the capturing process.
SEC("uretprobe")
int tls_handshake_return(struct pt_regs *ctx)
{
	struct thread *t = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0, 0);
	if (!t || !t->handshake)
		return 0;
	__u64 ssl = t->handshake;
	t->handshake = 0;
	if ((int)PT_REGS_RC(ctx) != 1)
		return 0;
	__u32 zero = 0;
	struct record *r = bpf_map_lookup_elem(&scratch, &zero);
	if (!r)
		return 0;
	struct conn_key k = {.pid = bpf_get_current_pid_tgid() >> 32, .source = SOURCE_TLS, .conn = ssl};
	struct conn c = {};
	note_header(&r->h, &k, &c, RECORD_STATE);
	__u32 n = STATE_BYTES;
	if (bpf_probe_read_user(r->data, STATE_BYTES, (void *)ssl)) {
		n = STATE_BYTES / 2;
		if (bpf_probe_read_user(r->data, STATE_BYTES / 2, (void *)ssl)) {
			count(COUNTER_READ_FAULT);
			return 0;
		}
	}
	r->h.len = n;
	r->h.total = n;
	if (bpf_ringbuf_output(&records, r, sizeof(r->h) + n, submit_flags()))
		count(COUNTER_DROPS);
	for (int i = 0; i < 2; i++) {
		__u32 off = session_offsets[i] & (STATE_BYTES - 8); // 8-aligned, in the copy
		if (!off || off + 8 > n)
			continue;
		__u64 ptr = *(__u64 *)(r->data + off);
		struct session_record *s = bpf_ringbuf_reserve(&records, sizeof(*s), 0);
		if (!s) {
			count(COUNTER_DROPS);
			continue;
		}
		note_header(&s->h, &k, &c, RECORD_SESSION);
		s->h.len = SESSION_BYTES;
		s->h.total = SESSION_BYTES;
		s->h.seq = off;
		if (!ptr || bpf_probe_read_user(s->data, SESSION_BYTES, (void *)ptr)) {
			bpf_ringbuf_discard(s, 0);
			continue;
		}
		bpf_ringbuf_submit(s, submit_flags());
	}
	return 0;
}

// ---- TLS: Go's crypto/tls -------------------------------------------------

// The crypto/tls methods, by the cookie (enum go_tls_api):
//
//   - func (c *Conn) Write(b []byte) (int, error): c in GO_ARG1, b's
//     pointer and length in GO_ARG2 and GO_ARG3. The bytes are read at
//     entry; a write that fails leaves its connection unusable, and its
//     exchange abandoned.
//   - func (c *Conn) Read(b []byte) (int, error), at entry: c and b's
//     pointer are kept for the return, by goroutine. Read copies the
//     plaintext it returns out of the connection's buffer with one
//     runtime.memmove(to, from, n) (bytes.Reader.Read, inlined): at that
//     call, which the kernel emulates (x86-64's CALL, arm64's BL), the
//     bytes are read from GO_ARG2, GO_ARG3 of them, before they are
//     copied, and c from its spill slot, which the cookie locates
//     (uprobe.GoReceiverShift): the entry probe is then left off, one
//     trap a Read fewer. In a build where the call is not found once, the probe is
//     on each of Read's RET instructions instead (single-stepped on
//     x86-64, emulated on arm64), where the count is in GO_ARG1.
//   - func (c *Conn) Close() error: the connection is over.
//
// The entry probes sit on the stack bound check's branch: a hit where it
// is taken is not a call (args.bpf.h's GO_STACK_GROWS). Before that, a
// Write whose goroutine grew its stack there was captured twice.
// ---- Go's crypto/tls by connection: its socket and its keys --------------
//
// Where every process of a Go program is seen from its exec, the capture
// probes each connection once instead of each call: at its handshake, the
// connection's socket is marked (CONN_WIRE) and the syscall programs send
// its ciphertext, both ways, from the ClientHello on; as the handshake
// derives them, the traffic secrets Go logs through
// (*Config).writeKeyLog, which it calls whether or not a KeyLogWriter is
// set, are sent (RECORD_KEY), and user space decrypts. The secrets never
// leave the capturing process.

struct key_record {
	struct record_header h;
	__u8 label;      // enum key_label
	__u8 secret_len; // bytes of secret used
	__u8 _pad[6];
	__u8 random[32]; // the connection's client random
	__u8 secret[48];
};

// wire_conn marks the socket under the Go crypto/tls.Conn at c, whose
// handshake begins, for the syscall programs: its bytes are captured
// from here, and the gate counts it open. A connection over anything
// but a *net.TCPConn of the process's (a wrapper of one, a pipe, QUIC)
// is counted, not read.
static __always_inline void wire_conn(__u64 tls_conn)
{
	long fd = go_conn_fd(tls_conn);
	struct conn_key k = {.pid = bpf_get_current_pid_tgid() >> 32, .source = SOURCE_SOCKET, .conn = fd};
	struct conn n = new_conn(CONN_WIRE);
	struct conn *c = 0;
	if (fd >= 0 && bpf_map_update_elem(&conns, &k, &n, BPF_ANY) == 0)
		c = bpf_map_lookup_elem(&conns, &k);
	if (!c || !wire_socket(&k, c, FIND_GO)) {
		count(COUNTER_NOT_SOCKET);
		if (c)
			bpf_map_delete_elem(&conns, &k);
	}
}

// emit_key sends a secret that writeKeyLog was given: the label's
// (label, label_len), the client random's and the secret's, by address
// and length. The labels of the traffic secrets are told by their length
// and first letter; the handshake secrets' (longer) are not sent.
static __always_inline void emit_key(__u64 label, __u64 label_len, __u64 random, __u64 random_len, __u64 secret,
				     __u64 secret_len)
{
	char first = 0;
	if (random_len != 32 || secret_len > 48 || bpf_probe_read_user(&first, 1, (void *)label))
		return;
	__u8 kind = 0;
	if (label_len == 23) // CLIENT_TRAFFIC_SECRET_0, SERVER_TRAFFIC_SECRET_0
		kind = first == 'C' ? KEY_CLIENT_TRAFFIC : first == 'S' ? KEY_SERVER_TRAFFIC : 0;
	else if (label_len == 13 && first == 'C') // CLIENT_RANDOM
		kind = KEY_TLS12;
	if (!kind)
		return;
	struct key_record *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		count(COUNTER_DROPS);
		return;
	}
	__builtin_memset(r, 0, sizeof(*r));
	__u64 id = bpf_get_current_pid_tgid();
	r->h.ts = bpf_ktime_get_ns();
	r->h.pid = id >> 32;
	r->h.tid = (__u32)id;
	r->h.kind = RECORD_KEY;
	r->h.source = SOURCE_TLS_WIRE;
	r->h.len = sizeof(*r) - sizeof(r->h);
	r->h.total = r->h.len;
	r->label = kind;
	r->secret_len = secret_len;
	if (bpf_probe_read_user(r->random, 32, (void *)random) ||
	    bpf_probe_read_user(r->secret, secret_len & 63, (void *)secret)) {
		count(COUNTER_READ_FAULT);
		bpf_ringbuf_discard(r, 0);
		return;
	}
	bpf_ringbuf_submit(r, submit_flags());
}

SEC("uprobe")
int go_tls(struct pt_regs *ctx)
{
	__u64 ts = bpf_ktime_get_ns();
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	if (pid == self_pid)
		return 0;
	struct go_read_key rk = {.pid = pid, .g = GO_G(ctx)};
	__u64 cookie = bpf_get_attach_cookie(ctx);
	if ((cookie & GO_STACK_CHECK_COOKIE) && GO_STACK_GROWS(ctx))
		return 0; // runtime.morestack, then the method starts over
	__u32 api = (__u32)cookie;
	__u64 receiver_slot = (cookie >> GO_RECEIVER_SHIFT) & 0xffff;
	switch (api) {
	case GO_TLS_WRITE:
		if ((long)GO_ARG3(ctx) > 0)
			capture_tls(SOURCE_GOTLS, GO_ARG1(ctx), GO_ARG2(ctx), GO_ARG3(ctx), DIR_WRITE, ts);
		return 0;
	case GO_TLS_READ: {
		struct go_read r = {.conn = GO_ARG1(ctx), .buf = GO_ARG2(ctx)};
		bpf_map_update_elem(&go_reads, &rk, &r, BPF_ANY);
		return 0;
	}
	case GO_TLS_READ_RETURN:
	case GO_TLS_READ_COPY: {
		// Both sites' registers, read before the choice between them:
		// the verifier takes no context read at a chosen offset.
		long count = GO_ARG1(ctx), copied = GO_ARG3(ctx);
		__u64 from = GO_ARG2(ctx);
		asm volatile("" : "+r"(count), "+r"(copied), "+r"(from));
		if (api == GO_TLS_READ_COPY && receiver_slot) {
			// The receiver, from its spill slot: no entry probe.
			__u64 conn = 0;
			if (copied > 0 && !bpf_probe_read_user(&conn, sizeof(conn), (void *)(PT_REGS_SP(ctx) + receiver_slot)))
				capture_tls(SOURCE_GOTLS, conn, from, copied, DIR_READ, ts);
			return 0;
		}
		struct go_read *r = bpf_map_lookup_elem(&go_reads, &rk);
		if (!r)
			return 0;
		struct go_read p = *r;
		bpf_map_delete_elem(&go_reads, &rk);
		if (api == GO_TLS_READ_RETURN)
			from = p.buf, copied = count;
		if (copied > 0)
			capture_tls(SOURCE_GOTLS, p.conn, from, copied, DIR_READ, ts);
		return 0;
	}
	case GO_TLS_HANDSHAKE:
		wire_conn(GO_ARG1(ctx));
		return 0;
	case GO_TLS_KEYLOG:
		// writeKeyLog(label string, clientRandom, secret []byte).
		emit_key(GO_ARG2(ctx), GO_ARG3(ctx), GO_ARG4(ctx), GO_ARG5(ctx), GO_ARG7(ctx), GO_ARG8(ctx));
		return 0;
	case GO_TLS_CLOSE: {
		struct conn_key k = {.pid = pid, .source = SOURCE_GOTLS, .conn = GO_ARG1(ctx)};
		struct conn *c = bpf_map_lookup_elem(&conns, &k);
		if (c)
			end_conn(&k, c);
		return 0;
	}
	}
	return 0;
}

// ---- Plaintext: socket syscalls -----------------------------------------

// watched_port says whether a watched port is at either end of sk.
static __always_inline int watched_port(struct sock___k *sk)
{
	__u16 local = BPF_CORE_READ(sk, __sk_common.skc_num);
	__u16 remote = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	return bpf_map_lookup_elem(&ports, &local) || bpf_map_lookup_elem(&ports, &remote);
}


// A TCP socket changed state: count those with a watched port from when
// they leave TCP_CLOSE (connect, listen, or an accepted child's
// SYN_RECV) to when they return to it.
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(sock_state, struct sock___k *sk, int oldstate, int newstate)
{
	__u64 key = (__u64)sk;
	if (newstate == TCP_CLOSE) {
		if (bpf_map_delete_elem(&watched_socks, &key) == 0)
			__sync_fetch_and_add(&open_watched, -1);
		return 0;
	}
	if (watched_port(sk))
		open_gate(sk);
	return 0;
}

// handshaking_lately says whether process pid entered SSL_do_handshake
// (read by connection) within SNIFF_WINDOW.
static __always_inline int handshaking_lately(__u32 pid)
{
	if (!sniff_until)
		return 0;
	__u64 *last = bpf_map_lookup_elem(&handshaking, &pid);
	return last && bpf_ktime_get_ns() - *last < SNIFF_WINDOW;
}

// classify_fd returns the entry of descriptor fd of process pid, first
// seen: CONN_WATCH, for its first bytes to tell, for a TCP socket with a
// watched port at either end (HTTP) or of a process handshaking lately
// (TLS), else CONN_IGNORE.
static __always_inline struct conn classify_fd(__u32 pid, __u32 fd)
{
	struct file___k *f = 0;
	struct sock___k *sk = tcp_sock(fd, &f);
	__u8 accepts = 0;
	if (sk && watched_port(sk))
		accepts |= ACCEPT_HTTP;
	if (sk && handshaking_lately(pid))
		accepts |= ACCEPT_TLS;
	struct conn c = new_conn(accepts ? CONN_WATCH : CONN_IGNORE);
	c.accepts = accepts;
	return c;
}

static __always_inline int data_syscall(long nr)
{
	switch (nr) {
	case NR_read:
	case NR_write:
	case NR_readv:
	case NR_writev:
	case NR_sendto:
	case NR_recvfrom:
	case NR_sendmsg:
	case NR_recvmsg:
		return 1;
	}
	return 0;
}

// on_sys_enter keeps, at the entry of a data syscall nr (on a socket
// with a watched port), its buffer for sys_exit; at close's, it ends the
// descriptor's connection. A data syscall made inside an OpenSSL call
// that waits for its socket may tell it.
static __always_inline int on_sys_enter(long nr, __u64 arg1, __u64 arg2, __u64 arg3)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	if (pid == self_pid)
		return 0;
	if (nr == NR_close) {
		struct conn_key k = {.pid = pid, .source = SOURCE_SOCKET, .conn = (__u32)arg1};
		struct conn *c = bpf_map_lookup_elem(&conns, &k);
		if (c)
			end_conn(&k, c);
		return 0;
	}
	if (socket_waiters)
		tls_socket(arg1);
	if (!data_syscall(nr) || !gate_open())
		return 0;
	__u32 fd = arg1;
	struct conn_key k = {.pid = pid, .source = SOURCE_SOCKET, .conn = fd};
	struct conn *c = bpf_map_lookup_elem(&conns, &k);
	if (!c) {
		struct conn n = classify_fd(pid, fd);
		bpf_map_update_elem(&conns, &k, &n, BPF_NOEXIST);
		if (n.state == CONN_IGNORE)
			return 0;
	} else if (c->state == CONN_IGNORE || c->state == CONN_MUTED) {
		return 0;
	}
	struct thread *t = current_thread();
	if (!t)
		return 0;
	t->sys.conn = fd;
	t->sys.api = nr + 1; // 0 means none; read is 0
	if (nr == NR_sendmsg || nr == NR_recvmsg) {
		struct msghdr___u m = {};
		if (bpf_probe_read_user(&m, sizeof(m), (void *)arg2))
			t->sys.api = 0;
		t->sys.buf = m.iov;
		t->sys.size = m.iovlen;
	} else {
		t->sys.buf = arg2;
		t->sys.size = arg3; // iovcnt for readv and writev
	}
	return 0;
}

// emit_iov sends the first n bytes the iovec array iov (cnt entries)
// holds, with the header start_call filled.
static __always_inline void emit_iov(__u64 iov, __u64 cnt, __u32 n)
{
	__u32 done = 0;
	for (int i = 0; i < MAX_IOV; i++) {
		if (i >= cnt || done >= n)
			break;
		struct iovec___u v = {};
		if (bpf_probe_read_user(&v, sizeof(v), (void *)(iov + i * sizeof(v))))
			break;
		__u32 len = v.len > n - done ? n - done : v.len;
		__u32 sent = emit(v.base, len, done);
		done += len;
		if (sent < len)
			break;
	}
	if (done < n)
		count(COUNTER_SHORT);
}

static __always_inline int iov_syscall(long nr)
{
	return nr == NR_readv || nr == NR_writev || nr == NR_sendmsg || nr == NR_recvmsg;
}

// on_sys_exit emits what a data syscall nr that on_sys_enter kept read
// or wrote, ret bytes.
static __always_inline int on_sys_exit(long nr, long ret)
{
	if (!data_syscall(nr) || !gate_open())
		return 0;
	struct thread *t = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0, 0);
	if (!t || t->sys.api != nr + 1)
		return 0;
	__u64 ts = bpf_ktime_get_ns();
	struct pending p = t->sys;
	t->sys.api = 0;
	__u8 dir = (nr == NR_read || nr == NR_readv || nr == NR_recvfrom || nr == NR_recvmsg) ? DIR_READ : DIR_WRITE;
	if (ret < 0 || (ret == 0 && dir != DIR_READ))
		return 0;
	struct conn_key k = {.pid = bpf_get_current_pid_tgid() >> 32, .source = SOURCE_SOCKET, .conn = p.conn};
	struct conn *c = bpf_map_lookup_elem(&conns, &k);
	if (!c)
		return 0;
	if (ret == 0) { // the end of the stream: the peer closed
		if (c->state == CONN_HTTP || c->state == CONN_WIRE)
			emit_end(&k, c, RECORD_EOF);
		return 0;
	}
	__u32 n = ret > 0x7fffffff ? 0x7fffffff : ret;
	__u64 first = p.buf; // where the first bytes are
	__u32 firstLen = n;
	if (iov_syscall(nr)) {
		struct iovec___u v = {};
		if (bpf_probe_read_user(&v, sizeof(v), (void *)p.buf))
			return 0;
		first = v.base;
		firstLen = v.len < n ? v.len : n;
	}
	if (!http_conn(&k, c, first, firstLen, dir, ts))
		return 0;
	if ((find_sockets & FIND_PLAINTEXT) && !c->sock) {
		// Told from here, not looked up later in /proc by user space: a
		// connection per call is often closed by then.
		c->sock = 1;
		__u64 ino = tcp_inode(p.conn);
		if (ino)
			emit_socket(&k, c, ino);
	}
	if (!start_call(&k, c, dir, n, ts))
		return 0;
	if (iov_syscall(nr))
		emit_iov(p.buf, p.size, n);
	else if (emit(p.buf, n, 0) < n)
		count(COUNTER_SHORT);
	return 0;
}

// The programs, in two forms. Where tracefs gives the syscalls' own
// tracepoints, syscall_enter and syscall_exit are attached to those of
// the data syscalls and syscall_close to close's entry: they run at those
// calls only. Where it does not, sys_enter and sys_exit are attached to
// the raw tracepoints, which every system call of every process runs.

// The records of the syscalls' tracepoints (their format files): a
// common header, the call's number, then its arguments or its result.
// A program attached to a call's tracepoint reads no further than the
// call's record: syscall_close reads one argument, syscall_enter three.
struct syscall_enter_record {
	__u64 common;
	int nr;
	int pad;
	__u64 args[3];
};

struct syscall_close_record {
	__u64 common;
	int nr;
	int pad;
	__u64 fd;
};

struct syscall_exit_record {
	__u64 common;
	int nr;
	int pad;
	long ret;
};

SEC("tracepoint/syscalls")
int syscall_enter(struct syscall_enter_record *r)
{
	return on_sys_enter(r->nr, r->args[0], r->args[1], r->args[2]);
}

SEC("tracepoint/syscalls")
int syscall_close(struct syscall_close_record *r)
{
	return on_sys_enter(NR_close, r->fd, 0, 0);
}

SEC("tracepoint/syscalls")
int syscall_exit(struct syscall_exit_record *r)
{
	return on_sys_exit(r->nr, r->ret);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs___k *regs, long nr)
{
	if (nr != NR_close && !data_syscall(nr))
		return 0;
	return on_sys_enter(nr, SYS_ARG1(regs), SYS_ARG2(regs), SYS_ARG3(regs));
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs___k *regs, long ret)
{
	return on_sys_exit(SYS_NR(regs), ret);
}

// A thread exits (sched_process_exit runs for each): one killed inside
// an OpenSSL call that waited for its socket waits no more.
SEC("tp_btf/sched_process_exit")
int BPF_PROG(thread_exit)
{
	if (!socket_waiters)
		return 0;
	struct thread *t = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0, 0);
	if (t)
		stop_waiting(t);
	return 0;
}

// Keep the types in BTF for bpf2go -type.
const enum record_kind *unused_record_kind __attribute__((unused));
const enum source *unused_source __attribute__((unused));
const enum direction *unused_direction __attribute__((unused));
const enum counter *unused_counter __attribute__((unused));
const enum tls_api *unused_tls_api __attribute__((unused));
const enum go_tls_api *unused_go_tls_api __attribute__((unused));
const enum conn_state *unused_conn_state __attribute__((unused));
const enum key_label *unused_key_label __attribute__((unused));
const struct key_record *unused_key_record __attribute__((unused));
const struct record_header *unused_record_header __attribute__((unused));
const enum find_socket *unused_find_socket __attribute__((unused));
const enum accept *unused_accept __attribute__((unused));
