/*
 * nccl.c: drives NCCL (the stand-in libnccl.so.2 of nccl_stub.c, which it
 * is linked against) as a job's ranks do, one thread per rank, through the
 * communicators of nccl_scenario.h (generated from cudaprog's nccl.go,
 * which gives the output lines).
 *
 * Usage: nccl                       the scenario
 *        nccl loop <n> [<threads>]  each thread a communicator of one
 *                                   rank, n ncclAllReduce calls on it
 *        nccl single                one thread's NCCL, then calls the stub
 *                                   must refuse (see single())
 *        nccl one                   a job's process of one rank: a
 *                                   communicator of 1 rank (see one())
 *
 * Every return is checked: one the program does not expect ends it with
 * status 1, saying which call on stderr.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nccl_scenario.h" /* generated from nccl.go; includes nccl.h */

#define H(v) ((void *)(uintptr_t)(v))
#define MAX_THREADS 64

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

/* say prints one line and flushes it, whole, among the threads'. */
static void say(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	pthread_mutex_lock(&out_mu);
	vprintf(format, ap);
	fflush(stdout);
	pthread_mutex_unlock(&out_mu);
	va_end(ap);
}

static void check(ncclResult_t r, const char *what, const char *comm, int rank)
{
	if (r == ncclSuccess)
		return;
	fprintf(stderr, "nccl: %s (communicator %s, rank %d) returned %d\n", what, comm, rank, (int)r);
	exit(1);
}

/* read_line reads a line of stdin; eof_ok says whether EOF will do. */
static void read_line(int eof_ok)
{
	char line[256];
	if (!fgets(line, sizeof line, stdin) && !eof_ok) {
		fprintf(stderr, "nccl: stdin closed before the go line\n");
		exit(3);
	}
}

static const ncclCollConfig_t coll_config = NCCL_COLLCONFIG_INITIALIZER;

/* call makes op on comm of nranks as rank, on stream. */
static ncclResult_t call(const struct nccl_op *op, ncclComm_t comm, int rank, int nranks, cudaStream_t stream)
{
	const void *send = H(NCCL_SEND_BUFF);
	void *recv = H(NCCL_RECV_BUFF);
	size_t n = op->count;
	ncclDataType_t t = (ncclDataType_t)op->datatype;
	ncclRedOp_t rop = (ncclRedOp_t)op->op;
	int peer = ((rank + op->peer_offset) % nranks + nranks) % nranks;
	switch (op->api) {
	case OP_ncclAllReduce:
		return ncclAllReduce(send, recv, n, t, rop, comm, stream);
	case OP_ncclAllReduceConfig:
		return ncclAllReduceConfig(send, recv, n, t, rop, comm, stream, &coll_config);
	case OP_ncclAllGather:
		return ncclAllGather(send, recv, n, t, comm, stream);
	case OP_ncclAllGatherConfig:
		return ncclAllGatherConfig(send, recv, n, t, comm, stream, &coll_config);
	case OP_ncclReduceScatter:
		return ncclReduceScatter(send, recv, n, t, rop, comm, stream);
	case OP_ncclBroadcast:
		return ncclBroadcast(send, recv, n, t, op->root, comm, stream);
	case OP_ncclBcast:
		return ncclBcast(recv, n, t, op->root, comm, stream);
	case OP_ncclReduce:
		return ncclReduce(send, recv, n, t, rop, op->root, comm, stream);
	case OP_ncclAlltoAll:
		return ncclAlltoAll(send, recv, n, t, comm, stream);
	case OP_ncclGather:
		return ncclGather(send, recv, n, t, op->root, comm, stream);
	case OP_ncclScatter:
		return ncclScatter(send, recv, n, t, op->root, comm, stream);
	case OP_ncclSend:
		return ncclSend(send, n, t, peer, comm, stream);
	case OP_ncclRecv:
		return ncclRecv(recv, n, t, peer, comm, stream);
	case OP_ncclGroupStart:
		return ncclGroupStart();
	case OP_ncclGroupEnd:
		return ncclGroupEnd();
	}
	fprintf(stderr, "nccl: no call %d\n", (int)op->api);
	exit(2);
}

struct rank_arg {
	const struct nccl_comm_spec *spec;
	const ncclUniqueId *id;
	int rank;
	ncclComm_t comm; /* left for main to end */
};

static void *rank_main(void *p)
{
	struct rank_arg *a = p;
	const struct nccl_comm_spec *s = a->spec;
	int r = a->rank;
	ncclComm_t comm = NULL;
	if (s->use_config) {
		ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
		config.blocking = 1;
		check(ncclCommInitRankConfig(&comm, s->nranks, *a->id, r, &config), "ncclCommInitRankConfig", s->name, r);
	} else {
		check(ncclCommInitRank(&comm, s->nranks, *a->id, r), "ncclCommInitRank", s->name, r);
	}
	a->comm = comm;
	say("COMM %s %d %d %ld %p 0x%lx\n", s->name, r, s->nranks, (long)syscall(SYS_gettid), (void *)comm,
	    (unsigned long)cudaprogNcclCommHash(comm));
	cudaStream_t stream = H(s->streams[r]);
	for (int it = 0; it < s->iterations[r]; it++)
		for (int i = 0; i < s->nops; i++)
			check(call(&s->ops[i], comm, r, s->nranks, stream), s->ops[i].name, s->name, r);
	/* The splits, all alive together, then a call on each, then their
	 * ends. */
	ncclComm_t subs[8] = {NULL};
	int sub_ranks[8], sub_sizes[8];
	if (s->nsplits > 8) {
		fprintf(stderr, "nccl: %d splits, at most 8\n", s->nsplits);
		exit(2);
	}
	for (int i = 0; i < s->nsplits; i++) {
		int color = s->split_color[i * s->nranks + r];
		check(ncclCommSplit(comm, color, s->split_key[i * s->nranks + r], &subs[i], NULL), "ncclCommSplit", s->name, r);
		sub_ranks[i] = sub_sizes[i] = -1;
		if (color == NCCL_SPLIT_NOCOLOR) {
			if (subs[i]) {
				fprintf(stderr, "nccl: rank %d of %s got a communicator of NCCL_SPLIT_NOCOLOR\n", r, s->name);
				exit(1);
			}
		} else {
			check(ncclCommCount(subs[i], &sub_sizes[i]), "ncclCommCount", s->name, r);
			check(ncclCommUserRank(subs[i], &sub_ranks[i]), "ncclCommUserRank", s->name, r);
		}
		say("SPLIT %s %d %d %d %d %d 0x%lx 0x%lx\n", s->name, i, r, color, sub_ranks[i], sub_sizes[i],
		    (unsigned long)(uintptr_t)subs[i], (unsigned long)cudaprogNcclCommHash(subs[i]));
	}
	for (int i = 0; i < s->nsplits; i++)
		if (subs[i])
			check(call(&nccl_split_op, subs[i], sub_ranks[i], sub_sizes[i], H(s->split_streams[i * s->nranks + r])),
			      "the split's call", s->name, r);
	for (int i = 0; i < s->nsplits; i++)
		if (subs[i])
			check(ncclCommDestroy(subs[i]), "ncclCommDestroy of a split", s->name, r);
	return NULL;
}

static int scenario(void)
{
	ncclUniqueId ids[NCCL_NCOMMS];
	struct rank_arg args[MAX_THREADS];
	pthread_t th[MAX_THREADS];
	int nthreads = 0;

	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	read_line(0);
	for (int c = 0; c < NCCL_NCOMMS; c++) {
		check(ncclGetUniqueId(&ids[c]), "ncclGetUniqueId", nccl_comms[c].name, -1);
		char hex[2 * NCCL_UNIQUE_ID_BYTES + 1];
		for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++)
			sprintf(hex + 2 * i, "%02x", (unsigned char)ids[c].internal[i]);
		say("UID %s %s\n", nccl_comms[c].name, hex);
	}
	for (int c = 0; c < NCCL_NCOMMS; c++)
		for (int r = 0; r < nccl_comms[c].nranks; r++) {
			if (nthreads == MAX_THREADS)
				return 2;
			args[nthreads] = (struct rank_arg){&nccl_comms[c], &ids[c], r, NULL};
			if (pthread_create(&th[nthreads], NULL, rank_main, &args[nthreads]) != 0) {
				perror("pthread_create");
				return 2;
			}
			nthreads++;
		}
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	say("ISSUED\n");
	read_line(1);
	for (int i = 0; i < nthreads; i++) {
		const struct rank_arg *a = &args[i];
		if (a->rank == a->spec->finalize_rank)
			check(ncclCommFinalize(a->comm), "ncclCommFinalize", a->spec->name, a->rank);
		check(ncclCommDestroy(a->comm), "ncclCommDestroy", a->spec->name, a->rank);
	}
	say("DONE\n");
	return 0;
}

/* One thread of a loop. */
struct loop_arg {
	long n;
	ncclComm_t comm;
	double ns;
};

static pthread_barrier_t ready_b, go_b;

static void *loop_main(void *p)
{
	struct loop_arg *a = p;
	ncclUniqueId id;
	check(ncclGetUniqueId(&id), "ncclGetUniqueId", "loop", 0);
	check(ncclCommInitRank(&a->comm, 1, id, 0), "ncclCommInitRank", "loop", 0);
	pthread_barrier_wait(&ready_b);
	pthread_barrier_wait(&go_b);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < a->n; i++)
		check(call(&nccl_loop_op, a->comm, 0, 1, H(NCCL_LOOP_STREAM)), "the loop's call", "loop", 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	a->ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	return NULL;
}

static int loop(long n, int nthreads)
{
	if (nthreads < 1 || nthreads > MAX_THREADS) {
		fprintf(stderr, "nccl: loop threads %d, want 1..%d\n", nthreads, MAX_THREADS);
		return 2;
	}
	pthread_t th[MAX_THREADS];
	struct loop_arg args[MAX_THREADS];
	pthread_barrier_init(&ready_b, NULL, nthreads + 1);
	pthread_barrier_init(&go_b, NULL, nthreads + 1);
	for (int t = 0; t < nthreads; t++) {
		args[t] = (struct loop_arg){n, NULL, 0};
		if (pthread_create(&th[t], NULL, loop_main, &args[t]) != 0) {
			perror("pthread_create");
			return 2;
		}
	}
	pthread_barrier_wait(&ready_b);
	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	read_line(0);
	pthread_barrier_wait(&go_b);
	double ns = 0;
	for (int t = 0; t < nthreads; t++) {
		pthread_join(th[t], NULL);
		ns += args[t].ns;
		check(ncclCommDestroy(args[t].comm), "ncclCommDestroy", "loop", 0);
	}
	printf("NS_PER_CALL %.2f\nDONE\n", n > 0 ? ns / nthreads / (double)n : 0.0);
	fflush(stdout);
	return 0;
}

static void refused(const char *what, ncclResult_t r) { say("INVALID %s %d\n", what, (int)r); }

/* single is one thread's NCCL: the communicators of ncclCommInitAll (2
 * ranks, "all") and of ncclCommInitRankScalable (1 rank, "scalable"), a
 * group across the first two, a call on the third, then the calls NCCL
 * refuses, and one it takes. */
static int single(void)
{
	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	read_line(0);
	long tid = (long)syscall(SYS_gettid);
	ncclComm_t comms[2] = {NULL, NULL};
	check(ncclCommInitAll(comms, 2, NULL), "ncclCommInitAll", "all", -1);
	for (int i = 0; i < 2; i++)
		say("COMM all %d 2 %ld 0x%lx 0x%lx\n", i, tid, (unsigned long)(uintptr_t)comms[i],
		    (unsigned long)cudaprogNcclCommHash(comms[i]));
	ncclUniqueId sid;
	check(ncclGetUniqueId(&sid), "ncclGetUniqueId", "scalable", -1);
	char hex[2 * NCCL_UNIQUE_ID_BYTES + 1];
	for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++)
		sprintf(hex + 2 * i, "%02x", (unsigned char)sid.internal[i]);
	say("UID scalable %s\n", hex);
	ncclComm_t sc = NULL;
	check(ncclCommInitRankScalable(&sc, 1, 0, 1, &sid, NULL), "ncclCommInitRankScalable", "scalable", 0);
	say("COMM scalable 0 1 %ld 0x%lx 0x%lx\n", tid, (unsigned long)(uintptr_t)sc,
	    (unsigned long)cudaprogNcclCommHash(sc));

	const void *send = H(NCCL_SEND_BUFF);
	void *recv = H(NCCL_RECV_BUFF);
	cudaStream_t s = H(NCCL_LOOP_STREAM);
	/* A process driving two devices: one group, a rank per device. */
	check(ncclGroupStart(), "ncclGroupStart", "all", -1);
	for (int i = 0; i < 2; i++)
		check(ncclAllReduce(send, recv, NCCL_SINGLE_COUNT, ncclFloat32, ncclSum, comms[i],
				    H(NCCL_LOOP_STREAM + 0x100 * i)),
		      "ncclAllReduce", "all", i);
	check(ncclGroupEnd(), "ncclGroupEnd", "all", -1);
	check(ncclAllGather(send, recv, NCCL_SINGLE_COUNT, ncclInt8, sc, s), "ncclAllGather", "scalable", 0);

	ncclComm_t c = comms[0];
	refused("valid", ncclAllReduce(send, recv, 1, ncclFloat32, ncclSum, c, s));
	refused("datatype", ncclAllReduce(send, recv, 1, ncclNumTypes, ncclSum, c, s));
	refused("negative_datatype", ncclAllReduce(send, recv, 1, (ncclDataType_t)-1, ncclSum, c, s));
	refused("op", ncclAllReduce(send, recv, 1, ncclFloat32, ncclNumOps, c, s));
	refused("root", ncclBroadcast(send, recv, 1, ncclFloat32, 2, c, s));
	refused("peer", ncclSend(send, 1, ncclFloat32, -1, c, s));
	ncclCollConfig_t coll = NCCL_COLLCONFIG_INITIALIZER;
	coll.magic = 0;
	refused("collconfig", ncclAllReduceConfig(send, recv, 1, ncclFloat32, ncclSum, c, s, &coll));
	refused("group_end", ncclGroupEnd());
	ncclUniqueId id;
	check(ncclGetUniqueId(&id), "ncclGetUniqueId", "invalid", -1);
	ncclComm_t x = NULL;
	refused("rank", ncclCommInitRank(&x, 2, id, 2));
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	config.magic = 0;
	refused("config", ncclCommInitRankConfig(&x, 1, id, 0, &config));
	check(ncclCommFinalize(comms[1]), "ncclCommFinalize", "all", 1);
	refused("finalized", ncclAllReduce(send, recv, 1, ncclFloat32, ncclSum, comms[1], s));
	check(ncclCommDestroy(comms[1]), "ncclCommDestroy", "all", 1);
	refused("destroyed", ncclAllReduce(send, recv, 1, ncclFloat32, ncclSum, comms[1], s));
	check(ncclCommDestroy(c), "ncclCommDestroy", "all", 0);
	check(ncclCommDestroy(sc), "ncclCommDestroy", "scalable", 0);
	say("DONE\n");
	return 0;
}

/* one is a process of a job that has one rank of each communicator, as
 * a job's processes have (the stand-in's ranks of one communicator are
 * threads of one process, so its only communicator is of 1 rank): made
 * after the go line, a call on it, then alive until the next line. */
static int one(void)
{
	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	read_line(0);
	ncclUniqueId id;
	check(ncclGetUniqueId(&id), "ncclGetUniqueId", "one", -1);
	char hex[2 * NCCL_UNIQUE_ID_BYTES + 1];
	for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++)
		sprintf(hex + 2 * i, "%02x", (unsigned char)id.internal[i]);
	say("UID one %s\n", hex);
	ncclComm_t c = NULL;
	check(ncclCommInitRank(&c, 1, id, 0), "ncclCommInitRank", "one", 0);
	say("COMM one 0 1 %ld 0x%lx 0x%lx\n", (long)syscall(SYS_gettid), (unsigned long)(uintptr_t)c,
	    (unsigned long)cudaprogNcclCommHash(c));
	check(ncclAllReduce(H(NCCL_SEND_BUFF), H(NCCL_RECV_BUFF), NCCL_SINGLE_COUNT, ncclFloat32, ncclSum, c,
			    H(NCCL_LOOP_STREAM)),
	      "ncclAllReduce", "one", 0);
	say("ISSUED\n");
	read_line(1);
	check(ncclCommDestroy(c), "ncclCommDestroy", "one", 0);
	say("DONE\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "single") == 0)
		return single();
	if (argc == 2 && strcmp(argv[1], "one") == 0)
		return one();
	if (argc >= 3 && strcmp(argv[1], "loop") == 0)
		return loop(atol(argv[2]), argc > 3 ? atoi(argv[3]) : 1);
	if (argc != 1) {
		fprintf(stderr, "usage: %s | %s loop <n> [<threads>] | %s single | %s one\n", argv[0], argv[0], argv[0],
			argv[0]);
		return 2;
	}
	return scenario();
}
