/*
 * nccl_stub.c: a stand-in libnccl.so.2. Debian has no NCCL, and the real
 * one needs a GPU to make a communicator; this library has NCCL's entry
 * points with nccl.h's exact signatures (the generated nccl.h, NCCL
 * 2.31's types and layouts), so that a tracer's probes on it read the
 * arguments where they are in NCCL's. What it does (cudaprog's nccl.go
 * says it for the tests):
 *
 *   - every function is exported twice, as NCCL's PROFAPI build (its
 *     default) exports it: ncclX, weak, and pncclX, an alias at the same
 *     address;
 *   - ncclBcast calls ncclBroadcast through the PLT, as NCCL's does;
 *   - the arguments are checked as NCCL checks them, and a bad one gets
 *     ncclInvalidArgument (ncclInvalidUsage for a misuse);
 *   - ncclCommInitRank(Config) waits until every rank of its ncclUniqueId
 *     has come, ncclCommSplit until every rank of the parent has, as
 *     NCCL's do (the ranks are threads of one process here);
 *   - the collectives enqueue nothing: nothing is done on a GPU.
 *
 * With CUDAPROG_NCCL_ECHO=1 it prints a CALL line for each collective,
 * point-to-point and group call (nccl.go gives the format).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nccl.h"

/* NCCL's NCCL_API (src/include/core.h, with PROFAPI): pfunc is an alias
 * of func, which is weak. */
#define NCCL_API(ret, func, ...)                                                        \
	__attribute__((visibility("default"), alias(#func))) ret p##func(__VA_ARGS__); \
	__attribute__((visibility("default"), weak)) ret func(__VA_ARGS__)

#define MAX_RANKS 64
#define MAX_COMMS 1024
#define COMM_MAGIC 0x6e63636c636f6d6dULL /* "ncclcomm" */
/* How long a rank waits for the others of its communicator. */
#define RENDEZVOUS_SECONDS 60

/* The ranks of one communicator. */
struct clique {
	ncclUniqueId id; /* of ncclCommInitRank's; zero for a split's */
	int nranks;
	int arrived;
	struct ncclComm *members[MAX_RANKS];
	/* ncclCommSplit's rendezvous: each round, every rank's color and key,
	 * then what the last to come made for each. */
	int split_arrived;
	unsigned split_round;
	int colors[MAX_RANKS], keys[MAX_RANKS];
	struct ncclComm *split_out[MAX_RANKS];
	ncclResult_t split_ret[MAX_RANKS];
	struct clique *next; /* in pending, while ranks are still to come */
};

struct ncclComm {
	uint64_t magic;
	int rank;
	int finalized;
	int childCount;    /* the splits made of it, as NCCL counts them */
	uint64_t commHash; /* as NCCL computes it */
	struct clique *clique;
};

/* NCCL's hash (src/include/bitops.h: eatHash, digestHash), with which it
 * names its communicators: commHash. */
static void eat_hash(uint64_t acc[2], const void *bytes, size_t size)
{
	const char *p = bytes;
	acc[0] ^= size;
	while (size != 0) {
		acc[0] += acc[1];
		acc[1] ^= acc[0];
		acc[0] ^= acc[0] >> 31;
		acc[0] *= 0x9de62bbc8cef3ce3ULL;
		acc[1] ^= acc[1] >> 32;
		acc[1] *= 0x485cd6311b599e79ULL;
		size_t n = size < sizeof(uint64_t) ? size : sizeof(uint64_t);
		uint64_t x = 0;
		memcpy(&x, p, n);
		p += n;
		size -= n;
		acc[0] += x;
	}
}

static uint64_t digest_hash(const uint64_t acc[2])
{
	uint64_t h = acc[0];
	h ^= h >> 31;
	h *= 0xbac3bd562846de6bULL;
	h += acc[1];
	h ^= h >> 32;
	h *= 0x995a187a14e7b445ULL;
	return h;
}

/* Not NCCL's: the commHash NCCL gives comm, for the tests (NCCL prints it
 * in its logs as "commId", the Inspector in its records as "id"). */
__attribute__((visibility("default"))) uint64_t cudaprogNcclCommHash(ncclComm_t comm)
{
	return comm ? comm->commHash : 0;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct clique *pending;        /* cliques whose ranks have not all come */
static struct ncclComm *live[MAX_COMMS]; /* the communicators not destroyed */

static int echo = -1;
static __thread int group_depth;
static __thread int in_bcast; /* ncclBcast's inner ncclBroadcast is not echoed */

static void call_line(const char *api, ncclComm_t comm, long long count, int type, int op, int root, int peer,
		      cudaStream_t stream)
{
	if (echo < 0) {
		const char *e = getenv("CUDAPROG_NCCL_ECHO");
		echo = e && strcmp(e, "1") == 0;
	}
	if (!echo || in_bcast)
		return;
	/* One write per line: the ranks are threads. */
	char line[256];
	int n = snprintf(line, sizeof line, "CALL %ld %s 0x%lx %lld %d %d %d %d 0x%lx\n", (long)syscall(SYS_gettid),
			 api, (unsigned long)(uintptr_t)comm, count, type, op, root, peer,
			 (unsigned long)(uintptr_t)stream);
	flockfile(stdout);
	fwrite(line, 1, (size_t)n, stdout);
	fflush(stdout);
	funlockfile(stdout);
}

/* live_index returns comm's slot in live[], or -1. Under mu. */
static int live_index(const struct ncclComm *comm)
{
	if (!comm)
		return -1;
	for (int i = 0; i < MAX_COMMS; i++)
		if (live[i] == comm)
			return i;
	return -1;
}

/* new_comm makes rank's handle of cl. Under mu; NULL when MAX_COMMS are
 * live. */
static struct ncclComm *new_comm(struct clique *cl, int rank)
{
	int slot = -1;
	for (int i = 0; i < MAX_COMMS && slot < 0; i++)
		if (!live[i])
			slot = i;
	if (slot < 0)
		return NULL;
	struct ncclComm *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->magic = COMM_MAGIC;
	c->rank = rank;
	c->clique = cl;
	live[slot] = c;
	return c;
}

/* check_comm is NCCL's CommCheck: a live communicator, not finalized when
 * it is to take work. */
static ncclResult_t check_comm(ncclComm_t comm, int for_work)
{
	pthread_mutex_lock(&mu);
	int ok = live_index(comm) >= 0 && comm->magic == COMM_MAGIC;
	int finalized = ok && comm->finalized;
	pthread_mutex_unlock(&mu);
	if (!ok)
		return ncclInvalidArgument;
	if (for_work && finalized)
		return ncclInvalidUsage;
	return ncclSuccess;
}

static int nranks_of(ncclComm_t comm) { return comm->clique->nranks; }

/* deadline is RENDEZVOUS_SECONDS from now, for pthread_cond_timedwait. */
static struct timespec deadline(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += RENDEZVOUS_SECONDS;
	return ts;
}

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId *uniqueId);
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
	if (!uniqueId)
		return ncclInvalidArgument;
	/* NCCL's bootstrap handle: a random magic, the root's socket address
	 * (28 bytes), the existing ranks (0); the rest zero. */
	memset(uniqueId, 0, sizeof *uniqueId);
	uint64_t magic;
	if (getrandom(&magic, sizeof magic, 0) != sizeof magic)
		return ncclSystemError;
	memcpy(uniqueId->internal, &magic, sizeof magic);
	static unsigned short next_port = 40000;
	pthread_mutex_lock(&mu);
	unsigned short port = next_port++;
	pthread_mutex_unlock(&mu);
	unsigned char *addr = (unsigned char *)uniqueId->internal + 8;
	addr[0] = 2; /* AF_INET, host order */
	addr[2] = port >> 8; /* sin_port, network order */
	addr[3] = port & 0xff;
	addr[4] = 127; /* sin_addr 127.0.0.1 */
	addr[7] = 1;
	return ncclSuccess;
}

static int check_config(const ncclConfig_t *config)
{
	return !config || (config->magic == NCCL_API_MAGIC && config->size >= offsetof(ncclConfig_t, splitShare));
}

/* init_rank joins rank to the communicator of id, waiting for the other
 * ranks, and leaves its handle in *comm. */
static ncclResult_t init_rank(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank,
			      const ncclConfig_t *config)
{
	if (!comm)
		return ncclInvalidArgument;
	*comm = NULL;
	if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks || !check_config(config))
		return ncclInvalidArgument;
	pthread_mutex_lock(&mu);
	struct clique *cl = pending;
	while (cl && memcmp(&cl->id, id, sizeof *id) != 0)
		cl = cl->next;
	if (!cl) {
		cl = calloc(1, sizeof *cl);
		if (!cl) {
			pthread_mutex_unlock(&mu);
			return ncclSystemError;
		}
		cl->id = *id;
		cl->nranks = nranks;
		cl->next = pending;
		pending = cl;
	}
	if (cl->nranks != nranks || cl->members[rank]) {
		pthread_mutex_unlock(&mu);
		return ncclInvalidUsage; /* ranks that disagree on the size, or a rank twice */
	}
	struct ncclComm *c = new_comm(cl, rank);
	if (!c) {
		pthread_mutex_unlock(&mu);
		return ncclSystemError;
	}
	/* NCCL names it by a hash of the whole id (the first, for the
	 * Scalable form). */
	uint64_t acc[2] = {1, 1};
	eat_hash(acc, id->internal, NCCL_UNIQUE_ID_BYTES);
	c->commHash = digest_hash(acc);
	cl->members[rank] = c;
	if (++cl->arrived == nranks) {
		for (struct clique **p = &pending; *p; p = &(*p)->next)
			if (*p == cl) {
				*p = cl->next;
				break;
			}
		pthread_cond_broadcast(&cond);
	}
	struct timespec until = deadline();
	int err = 0;
	while (cl->arrived < nranks && err != ETIMEDOUT)
		err = pthread_cond_timedwait(&cond, &mu, &until);
	pthread_mutex_unlock(&mu);
	if (err == ETIMEDOUT)
		return ncclRemoteError; /* the clique stays, its member with it: the test failed anyway */
	*comm = c;
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	return init_rank(comm, nranks, &commId, rank, NULL);
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
	 ncclConfig_t *config);
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
				    ncclConfig_t *config)
{
	return init_rank(comm, nranks, &commId, rank, config);
}

NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t *newcomm, int nranks, int myrank, int nId,
	 ncclUniqueId *commIds, ncclConfig_t *config);
ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,
				      ncclConfig_t *config)
{
	if (nId < 1 || nId > nranks || !commIds)
		return ncclInvalidArgument;
	return init_rank(newcomm, nranks, &commIds[0], myrank, config);
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t *comm, int ndev, const int *devlist);
ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
	(void)devlist;
	if (!comm || ndev < 1 || ndev > MAX_RANKS)
		return ncclInvalidArgument;
	/* NCCL's makes an id of its own (ncclGetUniqueId) and the ranks in a
	 * group, on this thread. */
	struct clique *cl = calloc(1, sizeof *cl);
	if (!cl)
		return ncclSystemError;
	ncclResult_t r = ncclGetUniqueId(&cl->id);
	if (r != ncclSuccess) {
		free(cl);
		return r;
	}
	cl->nranks = cl->arrived = ndev;
	uint64_t acc[2] = {1, 1};
	eat_hash(acc, cl->id.internal, NCCL_UNIQUE_ID_BYTES);
	pthread_mutex_lock(&mu);
	for (int i = 0; i < ndev; i++) {
		comm[i] = cl->members[i] = new_comm(cl, i);
		if (!comm[i]) {
			pthread_mutex_unlock(&mu);
			return ncclSystemError;
		}
		comm[i]->commHash = digest_hash(acc);
	}
	pthread_mutex_unlock(&mu);
	return ncclSuccess;
}

/* split_members is NCCL's ordering of a split: the ranks of color, by key,
 * ties by parent rank. It returns how many, and rank's position in out.
 * Under mu. */
static int split_members(const struct clique *cl, int color, int *out, int rank, int *pos)
{
	int n = 0;
	for (int r = 0; r < cl->nranks; r++) {
		if (cl->colors[r] != color)
			continue;
		int i = n++;
		while (i > 0 && (cl->keys[out[i - 1]] > cl->keys[r] ||
				 (cl->keys[out[i - 1]] == cl->keys[r] && out[i - 1] > r))) {
			out[i] = out[i - 1];
			i--;
		}
		out[i] = r;
	}
	for (int i = 0; i < n; i++)
		if (out[i] == rank)
			*pos = i;
	return n;
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
	 ncclConfig_t *config);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
	ncclResult_t r = check_comm(comm, 1);
	if (r != ncclSuccess)
		return r;
	if (!newcomm || (color < 0 && color != NCCL_SPLIT_NOCOLOR) || !check_config(config))
		return ncclInvalidArgument;
	*newcomm = NULL;
	struct clique *cl = comm->clique;
	pthread_mutex_lock(&mu);
	/* Each split of a communicator names a new one, whatever its color:
	 * NCCL counts them from 1. */
	int child = ++comm->childCount;
	unsigned round = cl->split_round;
	cl->colors[comm->rank] = color;
	cl->keys[comm->rank] = key;
	if (++cl->split_arrived == cl->nranks) {
		/* The last to come makes a communicator of each color. */
		int done[MAX_RANKS] = {0};
		for (int r = 0; r < cl->nranks; r++) {
			cl->split_out[r] = NULL;
			cl->split_ret[r] = ncclSuccess;
		}
		for (int r = 0; r < cl->nranks; r++) {
			if (done[r] || cl->colors[r] == NCCL_SPLIT_NOCOLOR)
				continue;
			int members[MAX_RANKS], pos = 0;
			int n = split_members(cl, cl->colors[r], members, r, &pos);
			struct clique *sub = calloc(1, sizeof *sub);
			for (int i = 0; i < n; i++) {
				int m = members[i];
				done[m] = 1;
				struct ncclComm *c = sub ? new_comm(sub, i) : NULL;
				if (!c) {
					cl->split_ret[m] = ncclSystemError;
					continue;
				}
				sub->members[i] = c;
				cl->split_out[m] = c;
			}
			if (sub)
				sub->nranks = sub->arrived = n;
		}
		cl->split_arrived = 0;
		cl->split_round++;
		pthread_cond_broadcast(&cond);
	}
	struct timespec until = deadline();
	int err = 0;
	while (cl->split_round == round && err != ETIMEDOUT)
		err = pthread_cond_timedwait(&cond, &mu, &until);
	if (err == ETIMEDOUT) {
		cl->split_arrived--;
		pthread_mutex_unlock(&mu);
		return ncclRemoteError;
	}
	*newcomm = cl->split_out[comm->rank];
	r = cl->split_ret[comm->rank];
	if (*newcomm) {
		/* NCCL's child hash: the parent's, the child's count, the color. */
		uint64_t acc[2] = {1, 1};
		eat_hash(acc, &comm->commHash, sizeof comm->commHash);
		eat_hash(acc, &child, sizeof child);
		eat_hash(acc, &color, sizeof color);
		(*newcomm)->commHash = digest_hash(acc);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm);
ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	ncclResult_t r = check_comm(comm, 1); /* twice is an error in NCCL too */
	if (r != ncclSuccess)
		return r;
	pthread_mutex_lock(&mu);
	comm->finalized = 1;
	pthread_mutex_unlock(&mu);
	return ncclSuccess;
}

static ncclResult_t end_comm(ncclComm_t comm)
{
	if (!comm)
		return ncclSuccess; /* NCCL's ignore NULL */
	pthread_mutex_lock(&mu);
	int i = live_index(comm);
	if (i < 0) {
		pthread_mutex_unlock(&mu);
		return ncclInvalidArgument;
	}
	live[i] = NULL;
	comm->magic = 0;
	pthread_mutex_unlock(&mu);
	free(comm); /* the clique stays: its other ranks' handles point to it */
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm) { return end_comm(comm); }

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm) { return end_comm(comm); }

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int *count);
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	ncclResult_t r = check_comm(comm, 0);
	if (r != ncclSuccess)
		return r;
	if (!count)
		return ncclInvalidArgument;
	*count = nranks_of(comm);
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int *rank);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	ncclResult_t r = check_comm(comm, 0);
	if (r != ncclSuccess)
		return r;
	if (!rank)
		return ncclInvalidArgument;
	*rank = comm->rank;
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int *device);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
	ncclResult_t r = check_comm(comm, 0);
	if (r != ncclSuccess)
		return r;
	if (!device)
		return ncclInvalidArgument;
	*device = comm->rank; /* a device per rank */
	return ncclSuccess;
}

/* check_call is NCCL's ArgsCheck for a call of comm: the data type, the
 * reduction (op < 0: none), the root or peer (rank < 0: none), the
 * collective config. */
static ncclResult_t check_call(ncclComm_t comm, ncclDataType_t type, ncclRedOp_t op, int has_op, int rank,
			       int has_rank, const ncclCollConfig_t *config)
{
	ncclResult_t r = check_comm(comm, 1);
	if (r != ncclSuccess)
		return r;
	if ((int)type < 0 || type >= ncclNumTypes)
		return ncclInvalidArgument;
	if (has_op && ((int)op < 0 || op >= ncclNumOps))
		return ncclInvalidArgument;
	if (has_rank && (rank < 0 || rank >= nranks_of(comm)))
		return ncclInvalidArgument;
	if (config && (config->magic != NCCL_API_MAGIC || config->size < offsetof(ncclCollConfig_t, ext)))
		return ncclInvalidArgument;
	return ncclSuccess;
}

/* The collectives. Each *Config form and its plain one share the work,
 * as NCCL's share a static function (config NULL for the plain one). */

static ncclResult_t reduce(const char *api, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
			   ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config)
{
	call_line(api, comm, (long long)count, type, op, root, -1, stream);
	return check_call(comm, type, op, 1, root, 1, config);
}

NCCL_API(ncclResult_t, ncclReduce, const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
	 ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
			int root, ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff;
	return reduce("ncclReduce", count, datatype, op, root, comm, stream, NULL);
}

NCCL_API(ncclResult_t, ncclReduceConfig, const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
	 ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config);
ncclResult_t ncclReduceConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			      ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
			      const ncclCollConfig_t *config)
{
	(void)sendbuff, (void)recvbuff;
	return reduce("ncclReduceConfig", count, datatype, op, root, comm, stream, config);
}

/* rooted is Broadcast, Gather and Scatter. */
static ncclResult_t rooted(const char *api, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
			   cudaStream_t stream, const ncclCollConfig_t *config)
{
	call_line(api, comm, (long long)count, type, -1, root, -1, stream);
	return check_call(comm, type, 0, 0, root, 1, config);
}

NCCL_API(ncclResult_t, ncclBroadcast, const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
	 int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
			   ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff;
	return rooted("ncclBroadcast", count, datatype, root, comm, stream, NULL);
}

NCCL_API(ncclResult_t, ncclBroadcastConfig, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config);
ncclResult_t ncclBroadcastConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
				 int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config)
{
	(void)sendbuff, (void)recvbuff;
	return rooted("ncclBroadcastConfig", count, datatype, root, comm, stream, config);
}

/* NCCL's deprecated in-place broadcast: it calls ncclBroadcast, through
 * the PLT (ncclBroadcast is weak, so the call cannot be bound inside the
 * library), as NCCL's does. */
NCCL_API(ncclResult_t, ncclBcast, void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
	 cudaStream_t stream);
ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
		       cudaStream_t stream)
{
	call_line("ncclBcast", comm, (long long)count, datatype, -1, root, -1, stream);
	in_bcast = 1;
	ncclResult_t r = ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
	in_bcast = 0;
	return r;
}

NCCL_API(ncclResult_t, ncclGather, const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
	 int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
			ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff;
	return rooted("ncclGather", count, datatype, root, comm, stream, NULL);
}

NCCL_API(ncclResult_t, ncclGatherConfig, const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
	 int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config);
ncclResult_t ncclGatherConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
			      ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config)
{
	(void)sendbuff, (void)recvbuff;
	return rooted("ncclGatherConfig", count, datatype, root, comm, stream, config);
}

NCCL_API(ncclResult_t, ncclScatter, const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
	 int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
			 ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff;
	return rooted("ncclScatter", count, datatype, root, comm, stream, NULL);
}

NCCL_API(ncclResult_t, ncclScatterConfig, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config);
ncclResult_t ncclScatterConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
			       ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config)
{
	(void)sendbuff, (void)recvbuff;
	return rooted("ncclScatterConfig", count, datatype, root, comm, stream, config);
}

/* reduction is AllReduce and ReduceScatter. */
static ncclResult_t reduction(const char *api, size_t count, ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
			      cudaStream_t stream, const ncclCollConfig_t *config)
{
	call_line(api, comm, (long long)count, type, op, -1, -1, stream);
	return check_call(comm, type, op, 1, 0, 0, config);
}

NCCL_API(ncclResult_t, ncclAllReduce, const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
	 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
			   ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff;
	return reduction("ncclAllReduce", count, datatype, op, comm, stream, NULL);
}

NCCL_API(ncclResult_t, ncclAllReduceConfig, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config);
ncclResult_t ncclAllReduceConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
				 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config)
{
	(void)sendbuff, (void)recvbuff;
	return reduction("ncclAllReduceConfig", count, datatype, op, comm, stream, config);
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void *sendbuff, void *recvbuff, size_t recvcount,
	 ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
			       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff;
	return reduction("ncclReduceScatter", recvcount, datatype, op, comm, stream, NULL);
}

NCCL_API(ncclResult_t, ncclReduceScatterConfig, const void *sendbuff, void *recvbuff, size_t recvcount,
	 ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config);
ncclResult_t ncclReduceScatterConfig(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
				     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
				     const ncclCollConfig_t *config)
{
	(void)sendbuff, (void)recvbuff;
	return reduction("ncclReduceScatterConfig", recvcount, datatype, op, comm, stream, config);
}

/* all is AllGather and AlltoAll. */
static ncclResult_t all(const char *api, size_t count, ncclDataType_t type, ncclComm_t comm, cudaStream_t stream,
			const ncclCollConfig_t *config)
{
	call_line(api, comm, (long long)count, type, -1, -1, -1, stream);
	return check_call(comm, type, 0, 0, 0, 0, config);
}

NCCL_API(ncclResult_t, ncclAllGather, const void *sendbuff, void *recvbuff, size_t sendcount,
	 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
			   ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff;
	return all("ncclAllGather", sendcount, datatype, comm, stream, NULL);
}

NCCL_API(ncclResult_t, ncclAllGatherConfig, const void *sendbuff, void *recvbuff, size_t sendcount,
	 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config);
ncclResult_t ncclAllGatherConfig(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
				 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config)
{
	(void)sendbuff, (void)recvbuff;
	return all("ncclAllGatherConfig", sendcount, datatype, comm, stream, config);
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
	 ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			  ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff;
	return all("ncclAlltoAll", count, datatype, comm, stream, NULL);
}

NCCL_API(ncclResult_t, ncclAlltoAllConfig, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config);
ncclResult_t ncclAlltoAllConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
				ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config)
{
	(void)sendbuff, (void)recvbuff;
	return all("ncclAlltoAllConfig", count, datatype, comm, stream, config);
}

/* p2p is Send and Recv: the peer is a rank of the communicator, the
 * caller's own included. */
static ncclResult_t p2p(const char *api, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
			cudaStream_t stream)
{
	call_line(api, comm, (long long)count, type, -1, -1, peer, stream);
	return check_call(comm, type, 0, 0, peer, 1, NULL);
}

NCCL_API(ncclResult_t, ncclSend, const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
	 ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int p, ncclComm_t comm,
		      cudaStream_t stream)
{
	(void)sendbuff;
	return p2p("ncclSend", count, datatype, p, comm, stream);
}

NCCL_API(ncclResult_t, ncclRecv, void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
	 cudaStream_t stream);
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int p, ncclComm_t comm,
		      cudaStream_t stream)
{
	(void)recvbuff;
	return p2p("ncclRecv", count, datatype, p, comm, stream);
}

NCCL_API(ncclResult_t, ncclGroupStart, void);
ncclResult_t ncclGroupStart(void)
{
	call_line("ncclGroupStart", NULL, 0, -1, -1, -1, -1, NULL);
	group_depth++;
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGroupEnd, void);
ncclResult_t ncclGroupEnd(void)
{
	call_line("ncclGroupEnd", NULL, 0, -1, -1, -1, -1, NULL);
	if (group_depth == 0)
		return ncclInvalidUsage;
	group_depth--;
	return ncclSuccess;
}
