/*
 * late.c: a late starter. It calls cudaLaunchKernel from the first
 * instruction after the CUDA runtime is loaded, n times, gap_us apart
 * (cudaprog.DlopenLaunch's arguments each time), so that a tracer that
 * never saw that copy of the library must hold the process until its
 * probes are live to count every call.
 *
 * Built three times:
 *   late    dlopen()s the library named on its command line after the go
 *           line, and launches through dlsym's cudaLaunchKernel at once;
 *   linked  (CUDAPROG_LINKED) is linked against libcudart (DT_NEEDED, found
 *           through LD_LIBRARY_PATH when set): the launches are main's first
 *           act, before READY;
 *   staticlate (CUDAPROG_LINKED and CUDAPROG_STATIC) defines
 *           cudaLaunchKernel itself, as a program that links the runtime
 *           statically does (in .symtab only, as static.c's): the launches
 *           are main's first act, so a tracer that never saw the program
 *           must hold it from its exec to count them all.
 *
 * Usage: late <library> <n> <gap_us>
 *        linked <n> <gap_us>
 *        staticlate <n> <gap_us>
 *
 * Protocol (stdout): STUB _Z5saxpyifPfS_ 0x..., READY <pid>; one stdin line
 * (late: then the load and the launches); RET cudaLaunchKernel <code>
 * <count> per return code; DONE.
 */
#define CUDAPROG_NO_MAIN
#define CUDAPROG_SAXPY
#include "common.h"

#include <dlfcn.h>

#if defined(CUDAPROG_STATIC)
const char program_name[] = "staticlate";
/* What the real runtime answers on a node without a GPU. */
__attribute__((noipa, used)) int cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
						   void *stream)
{
	sink = (uintptr_t)func ^ grid.x ^ block.x ^ (uintptr_t)args ^ smem ^ (uintptr_t)stream;
	return DLOPEN_LAUNCH_RET;
}
#elif defined(CUDAPROG_LINKED)
const char program_name[] = "linked";
int cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t smem, void *stream);
#else
const char program_name[] = "late";
#endif

/* launches calls launch n times, gap_us apart, and records the codes. */
static void launches(launch_fn launch, long n, long gap_us)
{
	const struct call *c = &dlopen_launch;
	float x[4] = {0}, y[4] = {0};
	int k = 4;
	float a = 2;
	float *px = x, *py = y;
	void *args[] = {&k, &a, &px, &py};
	struct timespec gap = {gap_us / 1000000, (gap_us % 1000000) * 1000};
	for (long i = 0; i < n; i++) {
		if (i > 0 && gap_us > 0)
			clock_nanosleep(CLOCK_MONOTONIC, 0, &gap, NULL);
		record(c->api, launch(find_stub(c->func)->addr, d3(c->grid), d3(c->block), args, c->smem, H(c->stream)), 1);
	}
}

int main(int argc, char **argv)
{
#ifdef CUDAPROG_LINKED
	if (argc < 3) {
		fprintf(stderr, "usage: %s <n> <gap_us>\n", argv[0]);
		return 2;
	}
	map_handles();
	launches(cudaLaunchKernel, atol(argv[1]), atol(argv[2]));
	printf("STUB %s %p\n", stubs[0].name, stubs[0].addr);
	ready();
#else
	if (argc < 4) {
		fprintf(stderr, "usage: %s <library> <n> <gap_us>\n", argv[0]);
		return 2;
	}
	map_handles();
	printf("STUB %s %p\n", stubs[0].name, stubs[0].addr);
	ready();
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	launch_fn launch = (launch_fn)dlsym(lib, "cudaLaunchKernel");
	if (!launch) {
		fprintf(stderr, "dlsym cudaLaunchKernel: %s\n", dlerror());
		return 1;
	}
	launches(launch, atol(argv[2]), atol(argv[3]));
#endif
	finish();
	return 0;
}
