//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// Tells user space when a process may have mapped new code: at exec
// (raw tracepoint sched_process_exec, which needs no tracefs) and whenever
// the dynamic loader finishes a dlopen or dlclose (uprobe on ld.so's
// _dl_debug_state, the r_brk hook debuggers use). User space then rescans
// that process's mappings only.

#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

enum watch_what {
	WATCH_EXEC = 1,
	WATCH_LOAD = 2,
};

struct watch_event {
	__u32 pid;
	__u32 what;
};

// 4096 events of 16 bytes. Each wakes the reader, so a backlog means
// thousands of execs at once; what does not fit is counted in watch_drops,
// and the periodic full rescan finds it.
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} watch_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} watch_drops SEC(".maps");

static __always_inline int emit(__u32 what)
{
	struct watch_event *e = bpf_ringbuf_reserve(&watch_events, sizeof(*e), 0);
	if (!e) {
		__u32 k = 0;
		__u64 *v = bpf_map_lookup_elem(&watch_drops, &k);
		if (v)
			*v += 1;
		return 0;
	}
	e->pid = bpf_get_current_pid_tgid() >> 32;
	e->what = what;
	// Rare, and latency matters: wake the reader.
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("raw_tracepoint/sched_process_exec")
int on_exec(void *ctx)
{
	return emit(WATCH_EXEC);
}

SEC("uprobe")
int on_loader_change(struct pt_regs *ctx)
{
	return emit(WATCH_LOAD);
}

const enum watch_what *unused_watch_what __attribute__((unused));
const struct watch_event *unused_watch_event __attribute__((unused));
