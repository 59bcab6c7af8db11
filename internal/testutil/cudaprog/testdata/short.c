/*
 * short.c: a process that launches and exits at once. Linked against the
 * real libcudart, it launches each of the kernels of
 * cudaprog.ShortKernels once (host stubs in .symtab only, as nvcc emits
 * them), the first thing main does, and exits: nothing waits for a tracer.
 *
 * Usage: short
 * Prints nothing; exits 0 when every launch returned.
 */
#include <stddef.h>
#include <stdint.h>

#include "scenarios.h"

typedef struct { unsigned x, y, z; } dim3;
int cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t smem, void *stream);

static volatile uintptr_t sink;

#define STUB(name) \
	__attribute__((noipa)) void stub_##name(float *p, int n) __asm__(#name); \
	void stub_##name(float *p, int n) { sink = (uintptr_t)p + n; }
SHORT_KERNELS(STUB)

#define ADDR(name) (void *)stub_##name,
static void *const kernels[] = {SHORT_KERNELS(ADDR)};

int main(void)
{
	float x[4] = {0};
	float *px = x;
	int n = 4;
	void *args[] = {&px, &n};
	dim3 grid = {4, 1, 1}, block = {64, 1, 1};
	for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
		cudaLaunchKernel(kernels[i], grid, block, args, 0, NULL);
	return 0;
}
