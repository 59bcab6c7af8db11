/*
 * common.h: what the cudaprog scenario programs (runtime.c, driver.c,
 * static.c) share: the stdin/stdout protocol, the fake-handle region, the
 * return-code tally and main().
 *
 * Usage: <program> <scenario>         runs the scenario of that name
 *        <program> <loop> <n> [<t>]  makes the program's loop's setup
 *                                     calls, then its loop call n times,
 *                                     on each of t threads (1 if omitted);
 *                                     "loop" is every program's
 *
 * Protocol (stdout, one line each, flushed):
 *   STUB <mangled name> 0x<address>   every kernel host stub (before READY)
 *   THREAD <i> <tid>                  multi-threaded scenarios (before READY)
 *   READY <pid>
 *   ... then one line is read from stdin (the go signal) ...
 *   NS_PER_CALL <float>               loop only: the threads' mean of
 *                                     each one's time per call
 *   RET <api> <code> <count>          per (api, return code), first-use order
 *   DONE
 *
 * The program including this file defines stubs[], nstubs, program_name
 * ("runtime", "driver", "static": selects its rows of scenarios.h) and
 * do_call(), which makes one call and returns its return code, or NORET
 * for a void function (or one that records its own return codes).
 * A program with its own main (dlopen.c, late.c) defines CUDAPROG_NO_MAIN
 * first and uses the helpers only; CUDAPROG_SAXPY gives it the saxpy
 * stub (stubs[], nstubs) and launch_fn.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "scenarios.h" /* generated from scenario.go */

typedef struct { unsigned x, y, z; } dim3;

struct stub {
	const char *name;
	void *addr;
	void (*invoke)(void); /* calls the stub with dummy kernel arguments */
};

extern const struct stub stubs[];
extern const int nstubs;
extern const char program_name[];
#ifndef CUDAPROG_NO_MAIN
static long do_call(const struct call *c);
#endif

static const struct stub *find_stub(const char *name)
{
	for (int i = 0; i < nstubs; i++)
		if (strcmp(stubs[i].name, name) == 0)
			return &stubs[i];
	fprintf(stderr, "%s: no stub %s\n", program_name, name);
	exit(2);
}

__attribute__((unused)) static dim3 d3(const unsigned v[3])
{
	dim3 d = {v[0], v[1], v[2]};
	return d;
}

#define H(v) ((void *)(uintptr_t)(v))

/* The fake handles point into HANDLE_SPAN zeroed bytes at HANDLE_BASE. */
static void map_handles(void)
{
	void *p = mmap(H(HANDLE_BASE), HANDLE_SPAN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != H(HANDLE_BASE)) {
		fprintf(stderr, "%s: mapping the fake handles at 0x%llx: %s\n",
			program_name, HANDLE_BASE, p == MAP_FAILED ? strerror(errno) : "placed elsewhere");
		exit(2);
	}
}

/* host_buf returns ptr, or when it is 0 a zeroed host buffer of size bytes
 * (slot 0 or 1, so a copy can have two), owned by the calling thread. */
static __thread void *bufs[2];
static __thread size_t caps[2];
__attribute__((unused)) static void *host_buf(unsigned long long ptr, unsigned long long size, int slot)
{
	if (ptr)
		return H(ptr);
	if (caps[slot] < size || !bufs[slot]) {
		free(bufs[slot]);
		bufs[slot] = calloc(1, size ? size : 1);
		if (!bufs[slot]) {
			perror("calloc");
			exit(2);
		}
		caps[slot] = size;
	}
	return bufs[slot];
}

static void wait_line(void)
{
	char line[256];
	if (!fgets(line, sizeof line, stdin)) {
		fprintf(stderr, "%s: stdin closed before the go line\n", program_name);
		exit(3);
	}
}

static pthread_mutex_t ret_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { int api; long code; long count; } rets[512];
static int nrets;

static void record(int api, long code, long count)
{
	if (code == NORET)
		return;
	pthread_mutex_lock(&ret_mu);
	int i;
	for (i = 0; i < nrets; i++)
		if (rets[i].api == api && rets[i].code == code)
			break;
	if (i == nrets) {
		if (nrets == (int)(sizeof rets / sizeof rets[0])) {
			fprintf(stderr, "too many distinct return codes\n");
			exit(2);
		}
		rets[nrets].api = api;
		rets[nrets].code = code;
		rets[nrets].count = 0;
		nrets++;
	}
	rets[i].count += count;
	pthread_mutex_unlock(&ret_mu);
}

#ifndef CUDAPROG_NO_MAIN
static void run_seq(const struct seq *s)
{
	for (int i = 0; i < s->n; i++)
		record(s->calls[i].api, do_call(&s->calls[i]), 1);
}

static pthread_barrier_t started, go;
static long tids[64];

struct thread_arg { const struct seq *seq; int index; };

static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	tids[a->index] = syscall(SYS_gettid);
	pthread_barrier_wait(&started);
	pthread_barrier_wait(&go);
	run_seq(a->seq);
	return NULL;
}

#endif /* CUDAPROG_NO_MAIN */

static void ready(void)
{
	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	wait_line();
}

static void finish(void)
{
	for (int i = 0; i < nrets; i++)
		printf("RET %s %ld %ld\n", api_name[rets[i].api], rets[i].code, rets[i].count);
	printf("DONE\n");
	fflush(stdout);
}

#ifndef CUDAPROG_NO_MAIN
/* One thread of a loop: n calls of c, timed from the go barrier. */
struct loop_arg { const struct call *c; long n; double ns; };

static void *loop_main(void *p)
{
	struct loop_arg *a = p;
	pthread_barrier_wait(&go);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long first = a->n > 0 ? do_call(a->c) : NORET;
	long same = a->n > 0;
	for (long i = 1; i < a->n; i++) {
		long r = do_call(a->c);
		if (r == first)
			same++;
		else
			record(a->c->api, r, 1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	a->ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	record(a->c->api, first, same);
	return NULL;
}

/* find_loop returns the program's loop called name, or NULL. */
static const struct loop *find_loop(const char *name)
{
	for (int i = 0; i < NLOOPS; i++)
		if (strcmp(loops[i].program, program_name) == 0 && strcmp(loops[i].name, name) == 0)
			return &loops[i];
	return NULL;
}

static int run_loop(const struct loop *l, long n, int nthreads)
{
	const struct call *c = &l->call;
	if (nthreads < 1 || nthreads > 64) {
		fprintf(stderr, "%s: loop threads %d, want 1..64\n", program_name, nthreads);
		return 2;
	}
	pthread_t th[64];
	struct loop_arg args[64];
	pthread_barrier_init(&go, NULL, nthreads + 1);
	for (int t = 0; t < nthreads; t++) {
		args[t] = (struct loop_arg){c, n, 0};
		if (pthread_create(&th[t], NULL, loop_main, &args[t]) != 0) {
			perror("pthread_create");
			return 2;
		}
	}
	ready();
	run_seq(&l->setup);
	pthread_barrier_wait(&go);
	double ns = 0;
	for (int t = 0; t < nthreads; t++) {
		pthread_join(th[t], NULL);
		ns += args[t].ns;
	}
	printf("NS_PER_CALL %.2f\n", n > 0 ? ns / nthreads / (double)n : 0.0);
	finish();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s <scenario> | loop <n> [<threads>]\n", argv[0]);
		return 2;
	}
	map_handles();
	for (int i = 0; i < nstubs; i++)
		printf("STUB %s %p\n", stubs[i].name, stubs[i].addr);
	fflush(stdout);
	const struct loop *l = find_loop(argv[1]);
	if (l) {
		if (argc < 3) {
			fprintf(stderr, "usage: %s %s <n> [<threads>]\n", argv[0], argv[1]);
			return 2;
		}
		return run_loop(l, atol(argv[2]), argc > 3 ? atoi(argv[3]) : 1);
	}
	const struct scenario *s = NULL;
	for (int i = 0; i < NSCENARIOS; i++)
		if (strcmp(scenarios[i].program, program_name) == 0 && strcmp(scenarios[i].name, argv[1]) == 0)
			s = &scenarios[i];
	if (!s) {
		fprintf(stderr, "%s: no scenario %s\n", program_name, argv[1]);
		return 2;
	}
	/* Fail before READY, not in the middle, if a stub is missing. */
	for (int t = 0; t < s->nthreads; t++)
		for (int i = 0; i < s->threads[t].n; i++)
			if (s->threads[t].calls[i].func)
				find_stub(s->threads[t].calls[i].func);

	if (s->nthreads == 1) {
		run_seq(&s->before);
		ready();
		run_seq(&s->threads[0]);
		finish();
		return 0;
	}
	if (s->nthreads > (int)(sizeof tids / sizeof tids[0]))
		return 2;
	pthread_t th[64];
	struct thread_arg args[64];
	pthread_barrier_init(&started, NULL, s->nthreads + 1);
	pthread_barrier_init(&go, NULL, s->nthreads + 1);
	for (int t = 0; t < s->nthreads; t++) {
		args[t].seq = &s->threads[t];
		args[t].index = t;
		if (pthread_create(&th[t], NULL, thread_main, &args[t]) != 0) {
			perror("pthread_create");
			return 2;
		}
	}
	pthread_barrier_wait(&started);
	for (int t = 0; t < s->nthreads; t++)
		printf("THREAD %d %ld\n", t, tids[t]);
	ready();
	pthread_barrier_wait(&go);
	for (int t = 0; t < s->nthreads; t++)
		pthread_join(th[t], NULL);
	finish();
	return 0;
}
#endif /* CUDAPROG_NO_MAIN */

#ifdef CUDAPROG_SAXPY
/*
 * The one kernel stub of the programs that launch through a
 * cudaLaunchKernel they look up (dlopen.c, late.c): saxpy, whose host stub
 * the tracer names by its symbol.
 */
static volatile uintptr_t sink;

__attribute__((noipa)) void saxpy(int n, float a, float *x, float *y) __asm__("_Z5saxpyifPfS_");
void saxpy(int n, float a, float *x, float *y) { sink = (uintptr_t)x + (uintptr_t)y + n + (int)a; }

const struct stub stubs[] = {{"_Z5saxpyifPfS_", (void *)saxpy, NULL}};
const int nstubs = 1;

typedef int (*launch_fn)(const void *, dim3, dim3, void **, size_t, void *);
#endif /* CUDAPROG_SAXPY */
