/*
 * dlopen.c: loads a CUDA runtime at run time, the way Python frameworks
 * do (e.g. site-packages/nvidia/cuda_runtime/lib/libcudart.so.12 from a
 * pip wheel), and calls its cudaLaunchKernel once through dlsym.
 *
 * Usage: dlopen <library path> [pause]
 *
 * Protocol (stdout): STUB _Z5saxpyifPfS_ 0x..., READY <pid>; then one stdin
 * line; dlopen(RTLD_NOW | RTLD_LOCAL); LOADED <path>; with "pause", one more
 * stdin line (time for a tracer to attach to the new mapping); the call of
 * cudaLaunchKernel with cudaprog.DlopenLaunch's arguments; CALLED; one more
 * stdin line; RET cudaLaunchKernel <code> 1; DONE.
 */
#define CUDAPROG_NO_MAIN
#define CUDAPROG_SAXPY
#include "common.h"

#include <dlfcn.h>

const char program_name[] = "dlopen";

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s <library> [pause]\n", argv[0]);
		return 2;
	}
	int pause = argc > 2 && strcmp(argv[2], "pause") == 0;
	map_handles();
	printf("STUB %s %p\n", stubs[0].name, stubs[0].addr);
	ready();

	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	printf("LOADED %s\n", argv[1]);
	fflush(stdout);
	if (pause)
		wait_line();
	launch_fn launch = (launch_fn)dlsym(lib, "cudaLaunchKernel");
	if (!launch) {
		fprintf(stderr, "dlsym cudaLaunchKernel: %s\n", dlerror());
		return 1;
	}
	const struct call *c = &dlopen_launch;
	float x[4] = {0}, y[4] = {0};
	int n = 4;
	float a = 2;
	float *px = x, *py = y;
	void *args[] = {&n, &a, &px, &py};
	record(c->api, launch(find_stub(c->func)->addr, d3(c->grid), d3(c->block), args, c->smem, H(c->stream)), 1);
	printf("CALLED\n");
	fflush(stdout);
	wait_line();
	finish();
	return 0;
}
