/*
 * forward.c: a stand-in CUDA runtime, built by cudaprog as libcudart.so.12
 * (soname libcudart.so.12), linked against the REAL libcuda.so.1. Its
 * cudaLaunchKernel does what the real runtime does on a GPU machine: it
 * initialises the driver once and goes on to cuLaunchKernel with the same
 * grid, block, shared memory and stream (and the fake CUfunction
 * FORWARD_FUNCTION), returning the driver's code. A tracer probing both
 * libraries must count such a launch once.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "scenarios.h" /* FORWARD_FUNCTION */

typedef struct { unsigned x, y, z; } dim3;

int cuInit(unsigned flags);
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		   unsigned smem, void *stream, void **params, void **extra);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init(void) { cuInit(0); }

__attribute__((visibility("default"))) int cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args,
							    size_t smem, void *stream)
{
	(void)func;
	pthread_once(&once, init);
	return cuLaunchKernel((void *)(uintptr_t)FORWARD_FUNCTION, grid.x, grid.y, grid.z, block.x, block.y, block.z,
			      (unsigned)smem, stream, args, NULL);
}
