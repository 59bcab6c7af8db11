// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// Lanes: the record transport of an object whose probes fire at call
// rates, read by bpfsource's lane reader (lanes.go), which this file's
// layout must match.
//
// A lane is a ring buffer of our own: one per CPU, up to a bound (CPUs
// past it share one), all in one mmapable array map, so that a probe
// reserves, writes and publishes a record without a helper call and
// without sharing a cache line or a lock with the probes of other CPUs
// (a BPF ring buffer takes two helper calls and one spinlock for every
// CPU). A record reserved on a lane is published by writing its length
// last; the reader copies it out, zeroes it and advances the lane's tail.
// The reader hands records out in timestamp order across lanes, so a
// record's timestamp must be read after its reservation (lane_reserve).
// The stores' order is x86-64's (total store order): the objects are
// built for amd64 only.
//
// Layout of a lane (one array entry, LANE_HEADER + lane bytes + slack,
// sized by bpfsource.Load): head (u64, at 0; BPF's) and tail (u64, at 64;
// the reader's), in cache lines of their own; the data at LANE_HEADER, in
// LANE_UNIT units; then LANE_SLACK bytes, into which a record reserved at
// the data's end runs on (its positions past the end, at the data's start,
// stay unwritten). Positions count units from 0 and never wrap.
//
// A record starts with struct lane_record: its timestamp (the reader
// merges by it) and, at byte 28, its length in units, nonzero once the
// record is whole.
//
// The including object defines LANE_MAX_UNITS (the largest record, in
// units) before including this file; it includes bpf_helpers.h first.

#ifndef LANES_BPF_H
#define LANES_BPF_H

#define LANE_UNIT 16
#define LANE_HEADER 128
#define LANE_SLACK (LANE_MAX_UNITS * LANE_UNIT)
// A reservation that loses the race for the head to another probe on the
// lane (a preempted one, or another CPU's) tries again, this many times.
#define LANE_TRIES 4

struct lane {
	__u64 head;
	__u64 _head_line[7];
	__u64 tail;
	__u64 _tail_line[7];
};

// The head of every record.
struct lane_record {
	__u64 ts;
	__u32 _[5];
	__u32 units;
};

// The lanes. bpfsource.Load sets the entries (lanes) and the value size.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, LANE_HEADER + 4096 + LANE_SLACK);
	__uint(max_entries, 1);
} lanes SEC(".maps");

// One small record per wakeup: the reader waits on it between polls.
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} lane_wakeups SEC(".maps");

// Set by bpfsource.Load: the lanes, a power of two, less one; each lane's
// data, in units, a power of two; unread bytes in a lane past which a
// record wakes the reader.
volatile const __u32 lane_mask = 0;
volatile const __u64 lane_units = 4096 / LANE_UNIT;
volatile const __u64 wakeup_bytes = 1024;

// A reserved record.
struct lane_slot {
	struct lane *lane;
	__u64 pos;
	__u32 units;
};

// lane_reserve reserves units on the calling CPU's lane and returns where
// to write them, or NULL when the lane has no room (or stayed contended).
// The bytes are zero (the reader zeroes what it consumes): a record need
// not clear the fields it leaves out.
static __always_inline void *lane_reserve(struct lane_slot *s, __u32 units)
{
	__u32 i = bpf_get_smp_processor_id() & lane_mask;
	struct lane *l = bpf_map_lookup_elem(&lanes, &i);
	if (!l)
		return 0;
	for (int try = 0; try < LANE_TRIES; try++) {
		__u64 head = *(volatile __u64 *)&l->head;
		if (head + units - *(volatile __u64 *)&l->tail > lane_units)
			return 0;
		if (__sync_val_compare_and_swap(&l->head, head, head + units) == head) {
			s->lane = l;
			s->pos = head;
			s->units = units;
			return (void *)l + LANE_HEADER + (head & (lane_units - 1)) * LANE_UNIT;
		}
	}
	return 0;
}

// lane_wake wakes the reader.
static __always_inline void lane_wake(void)
{
	__u32 lane = bpf_get_smp_processor_id() & lane_mask;
	bpf_ringbuf_output(&lane_wakeups, &lane, sizeof(lane), BPF_RB_FORCE_WAKEUP);
}

// lane_submit publishes the record r reserved in s, and wakes the reader
// if wake is set or the record took the lane's unread data past
// wakeup_bytes.
static __always_inline void lane_submit(struct lane_slot *s, void *r, int wake)
{
	asm volatile("" ::: "memory"); // the record's stores come first
	*(volatile __u32 *)&((struct lane_record *)r)->units = s->units;
	__u64 unread = s->pos + s->units - *(volatile __u64 *)&s->lane->tail;
	__u64 mark = wakeup_bytes / LANE_UNIT;
	if (wake || (unread >= mark && unread - s->units < mark))
		lane_wake();
}

#endif
