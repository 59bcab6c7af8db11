/*
 * driver.c: calls the REAL CUDA driver API (Debian's libcuda.so.1 535,
 * linked by cudaprog.Build) with the known arguments of the "driver"
 * scenarios in scenario.go: launch, and loop <n>. Without a GPU cuInit
 * returns 100 and the other calls 3 or 400, after entering the exported
 * entry point. libcuda dereferences CUfunction, CUstream and CUgraphExec
 * handles even then, so all of them point into the zeroed handle region.
 */
#include "common.h"

typedef unsigned long long CUdeviceptr;
typedef void *CUfunction, *CUstream, *CUgraphExec;

typedef struct {
	unsigned gridDimX, gridDimY, gridDimZ;
	unsigned blockDimX, blockDimY, blockDimZ;
	unsigned sharedMemBytes;
	CUstream hStream;
	void *attrs;
	unsigned numAttrs;
} CUlaunchConfig;

int cuInit(unsigned flags);
int cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		   unsigned smem, CUstream s, void **params, void **extra);
int cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
			unsigned smem, CUstream s, void **params, void **extra);
int cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra);
int cuMemAlloc_v2(CUdeviceptr *p, size_t size);
int cuMemAllocAsync(CUdeviceptr *p, size_t size, CUstream s);
int cuMemFree_v2(CUdeviceptr p);
int cuMemFreeAsync(CUdeviceptr p, CUstream s);
int cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t size);
int cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t size);
int cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t size);
int cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t size);
int cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream s);
int cuMemsetD8_v2(CUdeviceptr p, unsigned char value, size_t n);
int cuStreamSynchronize(CUstream s);
int cuCtxSynchronize(void);
int cuGraphLaunch(CUgraphExec g, CUstream s);

const char program_name[] = "driver";
const struct stub stubs[] = {{"", NULL, NULL}};
const int nstubs = 0;

static int n = 4;
static void *params[] = {&n};

#define DEV(v, slot) ((CUdeviceptr)(uintptr_t)host_buf((v), c->size, (slot)))

static long do_call(const struct call *c)
{
	CUdeviceptr d = 0;
	switch (c->api) {
	case API_cuInit:
		return cuInit(c->value);
	case API_cuLaunchKernel:
		return cuLaunchKernel(H(c->handle), c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
				      c->block[2], c->smem, H(c->stream), params, NULL);
	case API_cuLaunchKernel_ptsz:
		return cuLaunchKernel_ptsz(H(c->handle), c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
					   c->block[2], c->smem, H(c->stream), params, NULL);
	case API_cuLaunchKernelEx: {
		CUlaunchConfig cfg = {c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2],
				      c->smem, H(c->stream), NULL, 0};
		return cuLaunchKernelEx(&cfg, H(c->handle), params, NULL);
	}
	case API_cuMemAlloc_v2:
		return cuMemAlloc_v2(&d, c->size);
	case API_cuMemAllocAsync:
		return cuMemAllocAsync(&d, c->size, H(c->stream));
	case API_cuMemFree_v2:
		return cuMemFree_v2(c->ptr);
	case API_cuMemFreeAsync:
		return cuMemFreeAsync(c->ptr, H(c->stream));
	case API_cuMemcpyHtoD_v2:
		return cuMemcpyHtoD_v2(c->dst, host_buf(c->src, c->size, 1), c->size);
	case API_cuMemcpyDtoH_v2:
		return cuMemcpyDtoH_v2(host_buf(c->dst, c->size, 0), c->src, c->size);
	case API_cuMemcpyDtoD_v2:
		return cuMemcpyDtoD_v2(c->dst, c->src, c->size);
	case API_cuMemcpy:
		return cuMemcpy(DEV(c->dst, 0), DEV(c->src, 1), c->size);
	case API_cuMemcpyAsync:
		return cuMemcpyAsync(DEV(c->dst, 0), DEV(c->src, 1), c->size, H(c->stream));
	case API_cuMemsetD8_v2:
		return cuMemsetD8_v2(c->ptr, (unsigned char)c->value, c->size);
	case API_cuStreamSynchronize:
		return cuStreamSynchronize(H(c->stream));
	case API_cuCtxSynchronize:
		return cuCtxSynchronize();
	case API_cuGraphLaunch:
		return cuGraphLaunch(H(c->handle), H(c->stream));
	default:
		fprintf(stderr, "driver: cannot call %s\n", api_name[c->api]);
		exit(2);
	}
}
