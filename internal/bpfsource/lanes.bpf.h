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
// An object that defines LANE_STAGE_UNITS has a stage per lane, where
// records of that size wait to go into the lane together (see Stages,
// below).
// A record's length, and a stage's count and lock, are published with
// LANE_PUBLISH, after the stores they cover: on x86-64, whose stores are
// seen in program order (total store order), a plain store, kept in
// place by a compiler barrier; on arm64, whose stores other CPUs may see
// in any order, an atomic exchange, which the BPF JIT makes fully
// ordered (a fetching atomic: swpal, or an exclusive pair and a barrier).
// The reader (lanes.go) reads them with Go's atomics, which order its
// loads after (and its zeroing of a record before its tail's store).
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

#if defined(__TARGET_ARCH_arm64)
#define LANE_PUBLISH(p, v) __sync_lock_test_and_set((p), (v))
#else
#define LANE_PUBLISH(p, v) (*(volatile typeof(*(p)) *)(p) = (v))
#endif

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

// A reserved record: in a lane, or, with stage set, in a lane's stage.
struct lane_slot {
	struct lane *lane;
	__u64 pos;
	__u32 units;
	struct lane_stage *stage;
};

// lane_at is where position pos of lane l is.
static __always_inline void *lane_at(struct lane *l, __u64 pos)
{
	return (void *)l + LANE_HEADER + (pos & (lane_units - 1)) * LANE_UNIT;
}

// lane_reserve_on reserves units on lane l and returns where to write
// them, or NULL when the lane has no room (or stayed contended).
static __always_inline void *lane_reserve_on(struct lane *l, struct lane_slot *s, __u32 units)
{
	for (int try = 0; try < LANE_TRIES; try++) {
		__u64 head = *(volatile __u64 *)&l->head;
		if (head + units - *(volatile __u64 *)&l->tail > lane_units)
			return 0;
		if (__sync_val_compare_and_swap(&l->head, head, head + units) == head) {
			s->lane = l;
			s->pos = head;
			s->units = units;
			s->stage = 0;
			return lane_at(l, head);
		}
	}
	return 0;
}

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
	return lane_reserve_on(l, s, units);
}

// lane_wake wakes the reader.
static __always_inline void lane_wake(void)
{
	__u32 lane = bpf_get_smp_processor_id() & lane_mask;
	bpf_ringbuf_output(&lane_wakeups, &lane, sizeof(lane), BPF_RB_FORCE_WAKEUP);
}

// lane_woken wakes the reader if wake is set or the units just published
// at pos on lane l took its unread data past wakeup_bytes.
static __always_inline void lane_woken(struct lane *l, __u64 pos, __u32 units, int wake)
{
	__u64 unread = pos + units - *(volatile __u64 *)&l->tail;
	__u64 mark = wakeup_bytes / LANE_UNIT;
	if (wake || (unread >= mark && unread - units < mark))
		lane_wake();
}

// lane_submit publishes the record r reserved in s, and wakes the reader
// if wake is set or the record took the lane's unread data past
// wakeup_bytes.
static __always_inline void lane_submit(struct lane_slot *s, void *r, int wake)
{
	asm volatile("" ::: "memory"); // the record's stores come first
	LANE_PUBLISH(&((struct lane_record *)r)->units, s->units);
	lane_woken(s->lane, s->pos, s->units, wake);
}

#ifdef LANE_STAGE_UNITS
// Stages: where the records of the hottest probe wait, LANE_STAGE_RECORDS
// at a time, before they go into the lane together. A record written
// into a lane lands on cache lines the reader, on another CPU, has read
// and zeroed since the lane last went round: the store misses, and the
// miss is waited for at the return to user space. A stage is the same
// few lines each time, which stay in the writing CPU's cache, and the
// copy of a full stage into the lane overlaps its misses.
//
// One stage per lane (lane_stages, entries as lanes, sized by
// bpfsource.Load), of records of LANE_STAGE_UNITS units, which the
// including object defines. lock is taken, with a compare-and-swap, by
// the probe that stages a record (until it has counted it in n, and, the
// stage full, copied it into the lane) and by the reader that takes what
// is staged; a probe that finds it taken writes to the lane itself. The
// probe reads its clock after it takes the lock, so that a record staged
// after the reader let go of it is later than what the reader has seen.
// A staged record's length stays 0 until the copy publishes it.
#define LANE_STAGE_RECORDS 16
#define LANE_STAGE_BYTES (LANE_STAGE_UNITS * LANE_UNIT)

struct lane_stage {
	__u64 lock; // 0 or 1: 64 bits, as BPF's compare-and-swap wants here
	__u32 n;
	__u32 _pad;
	// The oldest record copied into the lane since the reader last took
	// from the stage (0: none), and the lane position past the last one:
	// such records sit behind later reservations' positions, and the
	// reader must not pass their time until it has read that far.
	__u64 flush_ts;
	__u64 flush_end;
	__u64 _line[4];
	__u8 data[LANE_STAGE_RECORDS * LANE_STAGE_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct lane_stage);
	__uint(max_entries, 1);
} lane_stages SEC(".maps");

// lane_stage_reserve takes the calling CPU's lane's stage and returns
// where to write a record of LANE_STAGE_UNITS units, or NULL: the stage is
// taken, or full, and the record goes to the lane (lane_reserve). The
// record's bytes are the last record's there but for its length, 0: the
// caller writes every field (where a lane's record it may leave zeros).
static __always_inline void *lane_stage_reserve(struct lane_slot *s)
{
	__u32 i = bpf_get_smp_processor_id() & lane_mask;
	struct lane_stage *st = bpf_map_lookup_elem(&lane_stages, &i);
	if (!st || __sync_val_compare_and_swap(&st->lock, 0, 1) != 0)
		return 0;
	__u32 n = *(volatile __u32 *)&st->n;
	if (n >= LANE_STAGE_RECORDS) {
		LANE_PUBLISH(&st->lock, 0);
		return 0;
	}
	s->lane = 0;
	s->stage = st;
	s->pos = n;
	s->units = LANE_STAGE_UNITS;
	return st->data + n * LANE_STAGE_BYTES;
}

// lane_stage_flush copies the full stage st into lane i at one
// reservation, each record at its own position, then publishes them in
// order. It returns the records left in the stage: none, or all of them
// when the lane has no room (the reader takes them then).
static __always_inline __u32 lane_stage_flush(struct lane_stage *st, __u32 i)
{
	struct lane *l = bpf_map_lookup_elem(&lanes, &i);
	struct lane_slot b;
	if (!l || !lane_reserve_on(l, &b, LANE_STAGE_RECORDS * LANE_STAGE_UNITS))
		return LANE_STAGE_RECORDS;
	for (int k = 0; k < LANE_STAGE_RECORDS; k++) {
		__u64 *to = lane_at(l, b.pos + k * LANE_STAGE_UNITS);
		__u64 *from = (__u64 *)(st->data + k * LANE_STAGE_BYTES);
		for (int w = 0; w < LANE_STAGE_BYTES / 8; w++)
			to[w] = from[w];
	}
	asm volatile("" ::: "memory"); // the records' stores come first
	for (int k = 0; k < LANE_STAGE_RECORDS; k++) {
		struct lane_record *r = lane_at(l, b.pos + k * LANE_STAGE_UNITS);
		LANE_PUBLISH(&r->units, LANE_STAGE_UNITS);
	}
	if (!st->flush_ts)
		st->flush_ts = ((struct lane_record *)st->data)->ts; // a stage's records are in time order
	st->flush_end = b.pos + LANE_STAGE_RECORDS * LANE_STAGE_UNITS;
	lane_woken(l, b.pos, LANE_STAGE_RECORDS * LANE_STAGE_UNITS, 0);
	return 0;
}

// lane_stage_submit counts the record reserved in s as staged, copies a
// full stage into the lane, and lets the stage go. A record reserved in
// the lane itself is published there (lane_submit).
static __always_inline void lane_stage_submit(struct lane_slot *s, void *r)
{
	struct lane_stage *st = s->stage;
	if (!st) {
		lane_submit(s, r, 0);
		return;
	}
	__u32 n = s->pos + 1;
	if (n == LANE_STAGE_RECORDS)
		n = lane_stage_flush(st, bpf_get_smp_processor_id() & lane_mask);
	asm volatile("" ::: "memory");
	*(volatile __u32 *)&st->n = n;
	LANE_PUBLISH(&st->lock, 0);
}
#endif

#endif
