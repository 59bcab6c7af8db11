//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// The process watcher that the uprobe Tracers of a procfs root share
// (hub.go). It looks at the executable mappings of a process in the
// kernel, and tells user space only what it does not know yet:
//
//   - a file no Tracer has classified (WATCH_FILE), once, whichever
//     process maps it first;
//   - the executable mappings of a process that maps a captured file (one
//     a Tracer probes and names the code of its processes for), once per
//     mapping (WATCH_MAPPING), so that user space can name the process's
//     code after it exited;
//   - a process it stopped (WATCH_HOLD) because it mapped a new file named
//     like a target, or a new file while it maps a captured one: user
//     space attaches and releases it (hold.go).
//
// It looks at exec (the raw tracepoint sched_process_exec: the new image
// and its loader), whenever the dynamic loader has mapped new objects (a
// uprobe on ld.so's _dl_debug_state, which the loader calls after mapping
// the objects of a dlopen or of the start-up, before it relocates or runs
// them), and in the sweeps user space runs (a task_vma iterator over every
// process). A process whose files are all known and none captured costs
// user space nothing.
//
// Walking a process's mappings costs it ~150 ns a mapping (the iterator's
// calls, under the kernel's return-stack mitigations): a large process
// that dlopens often must not pay that at every call of the loader hook.
// The loader calls _dl_debug_state with its r_debug in RT_ADD before it
// maps the first new object of a dlopen (or of the start-up), and in
// RT_CONSISTENT once they are all mapped (a dlclose: RT_DELETE, then
// RT_CONSISTENT); the hook reads the state, and walks only at the
// RT_CONSISTENT that follows an RT_ADD.

#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

enum watch_what {
	WATCH_FILE = 1,
	WATCH_MAPPING = 2,
	WATCH_HOLD = 3,
	WATCH_RESCAN = 4,
	WATCH_MARK = 5,
};

// Flags of a record.
enum watch_flag {
	FLAG_EXE = 1,      // the mapping is of the process's executable
	FLAG_HELD = 2,     // WATCH_FILE: the process is held for it
	FLAG_CAPTURED = 4, // the process maps a file whose processes are captured
	FLAG_FRESH = 8,    // WATCH_MAPPING: the first of a new address space
	FLAG_MATCHED = 16, // WATCH_FILE: named like a target
};

// Why a process that mapped a new file was not held (watch_event.reason).
enum watch_reason {
	REASON_NONE = 0,
	REASON_OFF = 1,      // no hold asked for: no pattern matched, or holds are off
	REASON_TRACED = 2,   // under ptrace: the stop would show in its tracer
	REASON_TERMINAL = 3, // has a controlling terminal: job control would see the stop
	REASON_STOPPED = 4,  // stopped, or stopping, already
	REASON_AGENT = 5,    // runs a watcher itself
	REASON_FULL = 6,     // no room: the ring, or the holds
};

enum file_state {
	FILE_PENDING = 1, // told user space, no answer yet
	FILE_PLAIN = 2,   // classified: nothing to do
	FILE_CAPTURED = 4, // a Tracer probes it, and captures the mappings of its processes
	FILE_HOLDS = 8,    // with FILE_CAPTURED: hold its processes while they map new files
};

enum watch_counter {
	COUNTER_DROPPED = 0, // records the ring had no room for
	COUNTER_UNWALKED,    // walks that could not start (the address space was busy)
	NUM_COUNTERS,
};

struct file_key {
	__u64 ino;
	__u32 dev; // the kernel's encoding: major << 20 | minor
	__u32 gen; // the inode's generation: tells a reused inode number apart
};

// A file's base name, as much of it as the patterns need.
struct base_name {
	char s[32];
};

struct watch_event {
	__u32 pid;
	__u32 what;
	__u32 flags;
	__u32 reason;
	struct file_key file;
	__u64 start, end, pgoff;
	__u64 ktime;
	// WATCH_FILE and an executable's WATCH_MAPPING: the file's base name.
	struct base_name name;
};

#define PATTERN_WORDS 3
#define MAX_PATTERNS 16

// A base-name prefix of the files to probe, as words of the name and the
// masks of its bytes (so that a match takes three compares); hold says
// whether a process mapping a new file so named is held.
struct pattern {
	__u64 word[PATTERN_WORDS];
	__u64 mask[PATTERN_WORDS];
	__u32 len;
	__u32 hold;
};

#define MAX_HOLDERS 4

// A hold: the watchers holding a process (0 for a free slot), or, with
// agent set, the process runs a watcher and is never held.
struct hold {
	__u64 holders[MAX_HOLDERS];
	__u32 agent;
	__u32 _pad;
};

struct mapping_key {
	__u64 mm;
	__u64 start;
};

// This watcher: its process, and its own id among the holders.
volatile const __u32 agent_tgid;
volatile const __u64 holder_id;

// Records wake the reader: they are few, and a held process waits.
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 128 * 1024);
} watch_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct file_key);
	__type(value, __u32);
} watch_files SEC(".maps");

// The mappings told, by address space and start, with the inode mapped.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct mapping_key);
	__type(value, __u64);
} watch_told SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_PATTERNS);
	__type(key, __u32);
	__type(value, struct pattern);
} watch_patterns SEC(".maps");

// What user space asks of the watcher beyond the patterns (hub.go,
// writePatterns).
struct settings {
	// hold_new_exe: hold a process that runs a program no Tracer has
	// classified yet, as one that maps a new file named like a target
	// (some targets are linked into programs: a Go program's crypto/tls,
	// a statically linked runtime).
	__u32 hold_new_exe;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct settings);
} watch_settings SEC(".maps");

// The holds, by process. Every watcher on the host shares this map
// (hold.go finds it by name), so that a process several watchers hold
// runs again only once all of them are done.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct hold);
} xpuscope_holds SEC(".maps");

// The processes whose loader is adding objects: the loader hook saw its
// r_debug in RT_ADD, and walks at the RT_CONSISTENT that follows.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} adding SEC(".maps");

// What the first pass of a walk found.
struct walk_found {
	__u32 fresh, pending, captured, holds, hold_named;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk_found);
} walk_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NUM_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} watch_counters SEC(".maps");

// Kernel structures, relocated by CO-RE against the running kernel.
struct super_block___k {
	__u32 s_dev;
} __attribute__((preserve_access_index));

struct inode___k {
	unsigned long i_ino;
	struct super_block___k *i_sb;
	__u32 i_generation;
} __attribute__((preserve_access_index));

struct qstr___k {
	const unsigned char *name;
} __attribute__((preserve_access_index));

struct dentry___k {
	struct qstr___k d_name;
} __attribute__((preserve_access_index));

struct path___k {
	struct dentry___k *dentry;
} __attribute__((preserve_access_index));

struct file___k {
	struct path___k f_path;
	struct inode___k *f_inode;
} __attribute__((preserve_access_index));

struct mm_struct___k {
	struct file___k *exe_file;
} __attribute__((preserve_access_index));

struct vm_area_struct {
	unsigned long vm_start, vm_end, vm_pgoff, vm_flags;
	struct file___k *vm_file;
	struct mm_struct___k *vm_mm;
} __attribute__((preserve_access_index));

struct signal_struct___k {
	unsigned int flags;
	void *tty;
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int ptrace;
	unsigned long jobctl;
	int tgid;
	struct signal_struct___k *signal;
	struct mm_struct___k *mm;
} __attribute__((preserve_access_index));

struct bpf_iter_meta___k {
	struct seq_file *seq;
} __attribute__((preserve_access_index));

struct bpf_iter__task_vma {
	struct bpf_iter_meta___k *meta;
	struct task_struct *task;
	struct vm_area_struct *vma;
};

struct bpf_iter_task_vma {
	__u64 __opaque[1];
} __attribute__((aligned(8)));

extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task, __u64 addr) __ksym;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym;

#define VM_EXEC 0x4
#define SIGSTOP 19
#define SIGNAL_STOP_STOPPED 0x1
#define JOBCTL_STOP_PENDING (1UL << 17)

static __always_inline void count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&watch_counters, &c);
	if (v)
		*v += 1;
}

// key_of sets k to the identity of file f.
static __always_inline void key_of(struct file___k *f, struct file_key *k)
{
	struct inode___k *in = BPF_CORE_READ(f, f_inode);
	k->ino = BPF_CORE_READ(in, i_ino);
	k->gen = BPF_CORE_READ(in, i_generation);
	k->dev = BPF_CORE_READ(in, i_sb, s_dev);
}

// file_of sets k and *fp to the file vma maps executable; 0 for none.
static __always_inline int file_of(struct vm_area_struct *vma, struct file_key *k, struct file___k **fp)
{
	if (!(BPF_CORE_READ(vma, vm_flags) & VM_EXEC))
		return 0;
	struct file___k *f = BPF_CORE_READ(vma, vm_file);
	if (!f)
		return 0;
	if (!BPF_CORE_READ(f, f_inode))
		return 0;
	key_of(f, k);
	*fp = f;
	return 1;
}

enum { MATCHED = 1, MATCHED_HOLD = 2 };

// match says whether n starts with a pattern (MATCHED), one that holds
// (MATCHED_HOLD too). A global function: verified once, not at each of
// its calls in a loop over the mappings.
__noinline int match(struct base_name *n)
{
	if (!n)
		return 0;
	__u64 w[PATTERN_WORDS];
	__builtin_memcpy(w, n->s, sizeof(w));
	int got = 0;
	for (__u32 i = 0; i < MAX_PATTERNS; i++) {
		__u32 k = i;
		struct pattern *p = bpf_map_lookup_elem(&watch_patterns, &k);
		if (!p || p->len == 0)
			continue;
		if ((w[0] & p->mask[0]) == p->word[0] && (w[1] & p->mask[1]) == p->word[1] &&
		    (w[2] & p->mask[2]) == p->word[2])
			got |= p->hold ? MATCHED | MATCHED_HOLD : MATCHED;
	}
	return got;
}

static __always_inline void name_of(struct file___k *f, struct base_name *n)
{
	bpf_probe_read_kernel_str(n->s, sizeof(n->s), BPF_CORE_READ(f, f_path.dentry, d_name.name));
}

// unholdable says why the current process must not be stopped; 0 if it
// may be.
static __always_inline __u32 unholdable(struct task_struct *task, __u32 tgid)
{
	if (tgid == agent_tgid)
		return REASON_AGENT;
	if (BPF_CORE_READ(task, ptrace))
		return REASON_TRACED;
	struct signal_struct___k *sig = BPF_CORE_READ(task, signal);
	if (BPF_CORE_READ(sig, tty))
		return REASON_TERMINAL;
	if ((BPF_CORE_READ(sig, flags) & SIGNAL_STOP_STOPPED) || (BPF_CORE_READ(task, jobctl) & JOBCTL_STOP_PENDING))
		return REASON_STOPPED;
	return REASON_NONE;
}

enum { HOLD_NONE, HOLD_FIRST, HOLD_JOINED };

// take_hold adds this watcher to tgid's holders: HOLD_FIRST when it is
// the only one (it stops the process), HOLD_JOINED when others hold it
// already, HOLD_NONE when it may not (*reason says why).
static __always_inline int take_hold(__u32 tgid, __u32 *reason)
{
	struct hold *h = bpf_map_lookup_elem(&xpuscope_holds, &tgid);
	if (!h) {
		struct hold n = {.holders = {holder_id}};
		if (bpf_map_update_elem(&xpuscope_holds, &tgid, &n, BPF_NOEXIST) == 0)
			return HOLD_FIRST;
		h = bpf_map_lookup_elem(&xpuscope_holds, &tgid);
		if (!h) {
			*reason = REASON_FULL;
			return HOLD_NONE;
		}
	}
	if (h->agent) {
		*reason = REASON_AGENT;
		return HOLD_NONE;
	}
	int others = 0;
	for (int i = 0; i < MAX_HOLDERS; i++) {
		__u64 v = __sync_fetch_and_add(&h->holders[i], 0);
		if (v == holder_id)
			return HOLD_JOINED;
		if (v)
			others = 1;
	}
	for (int i = 0; i < MAX_HOLDERS; i++) {
		if (__sync_val_compare_and_swap(&h->holders[i], 0, holder_id) == 0)
			return others ? HOLD_JOINED : HOLD_FIRST;
	}
	*reason = REASON_FULL;
	return HOLD_NONE;
}

static __always_inline struct watch_event *reserve(__u32 pid, __u32 what)
{
	struct watch_event *e = bpf_ringbuf_reserve(&watch_events, sizeof(*e), 0);
	if (!e) {
		count(COUNTER_DROPPED);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->what = what;
	return e;
}

// What walk saw of one executable mapping.
struct seen {
	struct file_key key;
	__u64 start, end, pgoff, mm;
	__u32 exe;
	__u32 _pad;
	struct base_name name;
};

static __always_inline void see(struct vm_area_struct *vma, struct file___k *f, struct file___k *exe, struct seen *s)
{
	s->start = BPF_CORE_READ(vma, vm_start);
	s->end = BPF_CORE_READ(vma, vm_end);
	s->pgoff = BPF_CORE_READ(vma, vm_pgoff);
	s->mm = (__u64)BPF_CORE_READ(vma, vm_mm);
	s->exe = f == exe;
	name_of(f, &s->name);
}

static __always_inline void fill(struct watch_event *e, struct seen *s)
{
	e->file = s->key;
	e->start = s->start;
	e->end = s->end;
	e->pgoff = s->pgoff;
	e->name = s->name;
	if (s->exe)
		e->flags |= FLAG_EXE;
}

#define EEXIST 17

// pend marks the file k as told of, and returns whether another CPU did
// first. With no room it tells again (user space makes room).
static __always_inline int pend(struct file_key *k)
{
	__u32 pending = FILE_PENDING;
	return bpf_map_update_elem(&watch_files, k, &pending, BPF_NOEXIST) == -EEXIST;
}

// tell_file tells user space of the file s maps, unless another CPU did;
// it returns 1 if it did. Global functions (verified once) keep the walk
// quick to verify.
__noinline int tell_file(__u32 tgid, struct seen *s, __u32 flags, __u32 reason)
{
	if (!s)
		return 0;
	if (pend(&s->key))
		return 0;
	struct watch_event *e = reserve(tgid, WATCH_FILE);
	if (!e) {
		bpf_map_delete_elem(&watch_files, &s->key);
		return 0;
	}
	e->flags = flags;
	e->reason = reason;
	fill(e, s);
	if (match(&e->name) & MATCHED)
		e->flags |= FLAG_MATCHED;
	bpf_ringbuf_submit(e, 0);
	return 1;
}

// retell_file tells user space again of the file s maps, which another
// process's walk told of and user space is classifying: a held process
// waits for that classification too. It returns 1 if it did.
__noinline int retell_file(__u32 tgid, struct seen *s, __u32 flags)
{
	if (!s)
		return 0;
	struct watch_event *e = reserve(tgid, WATCH_FILE);
	if (!e)
		return 0;
	e->flags = flags;
	fill(e, s);
	bpf_ringbuf_submit(e, 0);
	return 1;
}

// tell_mapping tells user space of mapping s of a captured process, unless
// it did for this address space already.
__noinline int tell_mapping(__u32 tgid, struct seen *s)
{
	if (!s)
		return 0;
	struct mapping_key mk = {.mm = s->mm, .start = s->start};
	__u64 *told = bpf_map_lookup_elem(&watch_told, &mk);
	if (told && *told == s->key.ino)
		return 0;
	__u32 flags = FLAG_CAPTURED;
	struct mapping_key first = {.mm = s->mm};
	__u64 one = 1;
	if (bpf_map_update_elem(&watch_told, &first, &one, BPF_NOEXIST) == 0)
		flags |= FLAG_FRESH;
	struct watch_event *e = reserve(tgid, WATCH_MAPPING);
	if (!e) {
		if (flags & FLAG_FRESH)
			bpf_map_delete_elem(&watch_told, &first);
		return 0;
	}
	e->flags = flags;
	fill(e, s);
	bpf_ringbuf_submit(e, 0);
	bpf_map_update_elem(&watch_told, &mk, &s->key.ino, BPF_ANY);
	return 1;
}

// ask_rescan asks user space to read the current process's mappings
// (WATCH_RESCAN).
static __always_inline void ask_rescan(void)
{
	struct watch_event *e = reserve(bpf_get_current_pid_tgid() >> 32, WATCH_RESCAN);
	if (e)
		bpf_ringbuf_submit(e, 0);
}

// walk looks at the executable mappings of the current process.
static __always_inline void walk(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct task_struct *task = bpf_get_current_task_btf();
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;
	struct seen s = {};
	struct file___k *f;
	// What the first pass found goes to memory the verifier does not
	// follow: it proves the loop once its states repeat, which they would
	// not with a register per finding.
	__u32 zero = 0;
	struct walk_found *w = bpf_map_lookup_elem(&walk_scratch, &zero);
	if (!w)
		return;
	__builtin_memset(w, 0, sizeof(*w));
	struct settings *cfg = bpf_map_lookup_elem(&watch_settings, &zero);
	struct file___k *exe = BPF_CORE_READ(task, mm, exe_file);
	struct file___k *hold_exe = cfg && cfg->hold_new_exe ? exe : 0;

	// First what the process maps: most often nothing new, nothing captured.
	if (bpf_iter_task_vma_new(&it, task, 0)) {
		bpf_iter_task_vma_destroy(&it);
		count(COUNTER_UNWALKED);
		ask_rescan();
		return;
	}
	while ((vma = bpf_iter_task_vma_next(&it))) {
		if (!file_of(vma, &s.key, &f))
			continue;
		__u32 *st = bpf_map_lookup_elem(&watch_files, &s.key);
		if (!st) {
			name_of(f, &s.name);
			if ((hold_exe && f == hold_exe) || (match(&s.name) & MATCHED_HOLD))
				w->hold_named = 1;
			w->fresh = 1;
			continue;
		}
		if (*st & FILE_PENDING) {
			// Told of by another process's walk, and not classified
			// yet: this process is held for it as for a new file.
			w->pending = 1;
			if (hold_exe && f == hold_exe) {
				w->hold_named = 1;
			} else {
				name_of(f, &s.name);
				if (match(&s.name) & MATCHED_HOLD)
					w->hold_named = 1;
			}
		}
		if (*st & FILE_CAPTURED) {
			w->captured = 1;
			if (*st & FILE_HOLDS)
				w->holds = 1;
		}
	}
	bpf_iter_task_vma_destroy(&it);
	__u32 fresh = w->fresh, pending = w->pending, captured = w->captured;
	__u32 hold_named = w->hold_named, holds = w->holds;
	if (!fresh && !captured && !hold_named)
		return;

	__u32 reason = REASON_OFF;
	struct watch_event *h = 0;
	int first = 0;
	if (hold_named || (holds && (fresh || pending))) {
		reason = unholdable(task, tgid);
		if (reason == REASON_NONE) {
			h = reserve(tgid, WATCH_HOLD);
			if (!h)
				reason = REASON_FULL;
		}
		if (h) {
			int r = take_hold(tgid, &reason);
			if (r == HOLD_NONE) {
				bpf_ringbuf_discard(h, 0);
				h = 0;
			}
			first = r == HOLD_FIRST;
		}
	}
	__u32 flags = captured ? FLAG_CAPTURED : 0;
	if (h) {
		flags |= FLAG_HELD;
		reason = REASON_NONE;
	}

	// Then tell user space.
	if (bpf_iter_task_vma_new(&it, task, 0) == 0) {
		while ((vma = bpf_iter_task_vma_next(&it))) {
			if (!file_of(vma, &s.key, &f))
				continue;
			__u32 *st = bpf_map_lookup_elem(&watch_files, &s.key);
			__u32 pending = st && (*st & FILE_PENDING);
			if (st && !captured && !(h && pending))
				continue;
			see(vma, f, exe, &s);
			if (!st) {
				// A held process waits for every file of its
				// walk not classified yet: the new ones, told
				// here, and those another walk told of first
				// (one can have won the race since the first
				// pass), told again.
				if (tell_file(tgid, &s, flags, reason) || (h && retell_file(tgid, &s, flags))) {
					if (h)
						h->start++;
				}
				continue;
			}
			if (h && pending && retell_file(tgid, &s, flags))
				h->start++;
			if (captured)
				tell_mapping(tgid, &s);
		}
	}
	bpf_iter_task_vma_destroy(&it);
	if (h) {
		// The stop first: user space reads none of this walk's records
		// (they follow the hold's, still reserved) before the hold is
		// submitted, so its SIGCONT comes after the SIGSTOP is
		// generated. The other way round, a reader on another CPU could
		// end the hold before this CPU sent the stop (its vCPU taken by
		// the hypervisor between the two), and the process would stay
		// stopped with no hold left. The records before the hold's
		// name the files it waits for; the process stops on its way
		// back to user space.
		if (first)
			bpf_send_signal(SIGSTOP);
		h->ktime = bpf_ktime_get_ns();
		h->flags = flags;
		bpf_ringbuf_submit(h, 0);
	}
}

// The states of struct r_debug (<link.h>), and where it keeps its state.
#define RT_CONSISTENT 0
#define RT_ADD 1
#define R_STATE_OFFSET 24

// objects_added says whether this call of the loader's _dl_debug_state
// ends the mapping of new objects: an RT_CONSISTENT after an RT_ADD. The
// attach cookie is the distance from the probe to the loader's _r_debug;
// without one (0: a loader that has none) every call counts.
static __always_inline int objects_added(struct pt_regs *ctx)
{
	__u64 to_r_debug = bpf_get_attach_cookie(ctx);
	if (!to_r_debug)
		return 1;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	int state = -1;
	bpf_probe_read_user(&state, sizeof(state), (void *)(PT_REGS_IP(ctx) + to_r_debug + R_STATE_OFFSET));
	if (state == RT_ADD) {
		__u8 one = 1;
		bpf_map_update_elem(&adding, &tgid, &one, BPF_ANY);
		return 0;
	}
	// A dlclose (RT_DELETE, then RT_CONSISTENT) maps nothing new.
	if (state != RT_CONSISTENT || !bpf_map_lookup_elem(&adding, &tgid))
		return 0;
	bpf_map_delete_elem(&adding, &tgid);
	return 1;
}

static __always_inline void exec_begins(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	bpf_map_delete_elem(&adding, &tgid);
}

SEC("raw_tracepoint/sched_process_exec")
int on_exec(void *ctx)
{
	exec_begins();
	walk();
	return 0;
}

SEC("uprobe")
int on_loader_change(struct pt_regs *ctx)
{
	if (objects_added(ctx))
		walk();
	return 0;
}

// The same hooks for kernels without the VMA iterator (before 6.7): they
// ask user space to read the process's mappings.
SEC("raw_tracepoint/sched_process_exec")
int on_exec_rescan(void *ctx)
{
	exec_begins();
	ask_rescan();
	return 0;
}

SEC("uprobe")
int on_loader_rescan(struct pt_regs *ctx)
{
	if (objects_added(ctx))
		ask_rescan();
	return 0;
}

// sweep tells of every executable file mapped on the host that is not
// known yet, through the iterator's output: user space reads it all.
SEC("iter/task_vma")
int sweep(struct bpf_iter__task_vma *ctx)
{
	struct vm_area_struct *vma = ctx->vma;
	struct task_struct *task = ctx->task;
	if (!vma || !task)
		return 0;
	struct file_key k;
	struct file___k *f;
	if (!file_of(vma, &k, &f) || bpf_map_lookup_elem(&watch_files, &k))
		return 0;
	if (pend(&k))
		return 0;
	struct seen s = {.key = k};
	see(vma, f, BPF_CORE_READ(task, mm, exe_file), &s);
	struct watch_event e = {.pid = BPF_CORE_READ(task, tgid), .what = WATCH_FILE, .reason = REASON_OFF};
	fill(&e, &s);
	if (match(&e.name) & MATCHED)
		e.flags |= FLAG_MATCHED;
	if (bpf_seq_write(ctx->meta->seq, &e, sizeof(e))) {
		// The output is full: this mapping is shown again after the
		// read, and must not be known by then.
		bpf_map_delete_elem(&watch_files, &k);
		return 1;
	}
	return 0;
}

// release_hold removes holder args[1] from the holders of process args[0]
// and returns how many are left; at none it drops the hold. User space
// runs it (BPF_PROG_RUN), so that the holders' updates do not race.
SEC("raw_tp")
int release_hold(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tgid = ctx->args[0];
	__u64 who = ctx->args[1];
	struct hold *h = bpf_map_lookup_elem(&xpuscope_holds, &tgid);
	if (!h || h->agent)
		return 0;
	int left = 0;
	for (int i = 0; i < MAX_HOLDERS; i++)
		__sync_val_compare_and_swap(&h->holders[i], who, 0);
	for (int i = 0; i < MAX_HOLDERS; i++)
		if (__sync_fetch_and_add(&h->holders[i], 0))
			left++;
	if (!left)
		bpf_map_delete_elem(&xpuscope_holds, &tgid);
	return left;
}

// mark puts a WATCH_MARK record with args[0] in the ring: user space
// runs it to learn when every record before it has been read.
SEC("raw_tp")
int mark(struct bpf_raw_tracepoint_args *ctx)
{
	struct watch_event *e = reserve(0, WATCH_MARK);
	if (!e)
		return 1;
	e->ktime = ctx->args[0];
	bpf_ringbuf_submit(e, 0);
	return 0;
}

const enum watch_what *unused_watch_what __attribute__((unused));
const enum watch_flag *unused_watch_flag __attribute__((unused));
const enum watch_reason *unused_watch_reason __attribute__((unused));
const enum file_state *unused_file_state __attribute__((unused));
const enum watch_counter *unused_watch_counter __attribute__((unused));
const struct watch_event *unused_watch_event __attribute__((unused));
const struct hold *unused_hold __attribute__((unused));
const struct pattern *unused_pattern __attribute__((unused));
