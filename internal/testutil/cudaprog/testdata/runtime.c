/*
 * runtime.c: calls the REAL CUDA runtime (Debian's libcudart 11.8,
 * linked by cudaprog.Build) with the known arguments of the "runtime"
 * scenarios in scenario.go: launch, threads, register, occupancy,
 * graphs, graphupdate, and loop <n>.
 * Without a GPU every call fails (100, cudaErrorNoDevice) after entering
 * the exported entry point, so uprobes see the real arguments.
 *
 * No CUDA headers: the prototypes below are the CUDA 11/12 ABI.
 */
#include "common.h"

typedef void *cudaStream_t, *cudaEvent_t, *cudaGraph_t, *cudaGraphExec_t, *cudaGraphNode_t;

int cudaSetDevice(int device);
int cudaMalloc(void **p, size_t size);
int cudaMallocAsync(void **p, size_t size, cudaStream_t s);
int cudaFree(void *p);
int cudaFreeAsync(void *p, cudaStream_t s);
int cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t s);
int cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t s);
int cudaMemcpy(void *dst, const void *src, size_t count, int kind);
int cudaMemcpy_ptds(void *dst, const void *src, size_t count, int kind);
int cudaMemcpyAsync(void *dst, const void *src, size_t count, int kind, cudaStream_t s);
int cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, int kind, cudaStream_t s);
int cudaMemset(void *p, int value, size_t count);
int cudaEventRecord(cudaEvent_t e, cudaStream_t s);
int cudaEventSynchronize(cudaEvent_t e);
int cudaEventQuery(cudaEvent_t e);
int cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
int cudaStreamSynchronize(cudaStream_t s);
int cudaDeviceSynchronize(void);
int cudaGraphLaunch(cudaGraphExec_t g, cudaStream_t s);
int cudaStreamBeginCapture(cudaStream_t s, int mode);
int cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
/* CUDA 11's; 12 drops the last three (cudaGraphInstantiateWithFlags's
 * first two arguments are the same in both). */
int cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, cudaGraphNode_t *errNode, char *log, size_t logSize);
int cudaGraphExecDestroy(cudaGraphExec_t e);
int cudaGraphDestroy(cudaGraph_t g);
int cudaGraphCreate(cudaGraph_t *g, unsigned flags);
int cudaGraphClone(cudaGraph_t *clone, cudaGraph_t original);
struct cudaKernelNodeParams { void *func; dim3 gridDim, blockDim; unsigned sharedMemBytes; void **kernelParams, **extra; };
int cudaGraphAddKernelNode(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps, size_t ndeps,
			   const struct cudaKernelNodeParams *params);
int cudaGraphAddChildGraphNode(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps, size_t ndeps,
			       cudaGraph_t child);
int cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const struct cudaKernelNodeParams *params);
int cudaGraphExecKernelNodeSetParams(cudaGraphExec_t e, cudaGraphNode_t node, const struct cudaKernelNodeParams *params);
/* CUDA 11's; 12 has (exec, graph, cudaGraphExecUpdateResultInfo *). */
int cudaGraphExecUpdate(cudaGraphExec_t e, cudaGraph_t g, cudaGraphNode_t *errNode, int *result);

/* What nvcc's generated code calls. */
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaUnregisterFatBinary(void **handle);
void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun, const char *deviceName,
			    int thread_limit, void *tid, void *bid, void *bDim, void *gDim, int *wSize);
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t smem, void *stream);
int __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *smem, void *stream);

const char program_name[] = "runtime";

/*
 * Kernel host stubs, as nvcc emits them: a host function with the
 * kernel's mangled name that pops the launch configuration pushed by
 * <<<...>>> and calls cudaLaunchKernel with its own address. Without a
 * device, cudart's pop returns 0 and leaves its outputs untouched, so the
 * stubs start from the configuration pushed last on this thread.
 */
static __thread struct { dim3 grid, block; size_t smem; void *stream; } pushed;

#define STUB_BODY(self, ...)                                                                              \
	{                                                                                                 \
		void *args_[] = {__VA_ARGS__};                                                            \
		dim3 grid_ = pushed.grid, block_ = pushed.block;                                          \
		size_t smem_ = pushed.smem;                                                               \
		void *stream_ = pushed.stream;                                                            \
		int r_ = __cudaPopCallConfiguration(&grid_, &block_, &smem_, &stream_);                   \
		record(API___cudaPopCallConfiguration, r_, 1);                                            \
		if (r_ != 0)                                                                              \
			return;                                                                           \
		record(API_cudaLaunchKernel, cudaLaunchKernel((const void *)self, grid_, block_, args_, smem_, \
							      stream_),                                   \
		       1);                                                                                \
	}

__attribute__((noipa)) void vector_add(float *a, float *b, float *c, int n) __asm__("_Z9vectorAddPfS_S_i");
void vector_add(float *a, float *b, float *c, int n) STUB_BODY(vector_add, &a, &b, &c, &n)

__attribute__((noipa)) void matmul(const float *a, const float *b, float *c, int n) __asm__("_Z6matmulPKfS0_Pfi");
void matmul(const float *a, const float *b, float *c, int n) STUB_BODY(matmul, &a, &b, &c, &n)

__attribute__((noipa)) void reduce_float(float *a, int n) __asm__("_Z6reduceIfEvPT_i");
void reduce_float(float *a, int n) STUB_BODY(reduce_float, &a, &n)

static float dummy[4];
static void invoke_vector_add(void) { vector_add(dummy, dummy, dummy, 4); }
static void invoke_matmul(void) { matmul(dummy, dummy, dummy, 2); }
static void invoke_reduce(void) { reduce_float(dummy, 4); }

const struct stub stubs[] = {
	{"_Z9vectorAddPfS_S_i", (void *)vector_add, invoke_vector_add},
	{"_Z6matmulPKfS0_Pfi", (void *)matmul, invoke_matmul},
	{"_Z6reduceIfEvPT_i", (void *)reduce_float, invoke_reduce},
};
const int nstubs = sizeof stubs / sizeof stubs[0];

/* A minimal fatbin: the wrapper nvcc emits (magic, version, data,
 * filename_or_fatbins) around an empty fatbin header. */
struct fatbin_header { uint32_t magic; uint16_t version, header_size; uint64_t fat_size; };
static const struct fatbin_header fatbin __attribute__((aligned(8))) = {0xBA55ED50u, 1, 16, 0};
static const struct { int magic, version; const void *data; void *filename_or_fatbins; }
	fatbin_wrapper __attribute__((aligned(8))) = {0x466243b1, 1, &fatbin, NULL};
static void **fatbin_handle;

/* The kernel arguments passed to direct launches. */
static float *ka = dummy, *kb = dummy, *kc = dummy;
static int kn = 4;
static void *kargs[] = {&ka, &kb, &kc, &kn};

static long do_call(const struct call *c)
{
	void *p = NULL;
	switch (c->api) {
	case API_cudaSetDevice:
		return cudaSetDevice(c->value);
	case API_cudaMalloc:
		return cudaMalloc(&p, c->size);
	case API_cudaMallocAsync:
		return cudaMallocAsync(&p, c->size, H(c->stream));
	case API_cudaFree:
		return cudaFree(H(c->ptr));
	case API_cudaFreeAsync:
		return cudaFreeAsync(H(c->ptr), H(c->stream));
	case API_cudaLaunchKernel:
		if (c->via_stub) {
			const struct stub *s = find_stub(c->func);
			pushed.grid = d3(c->grid);
			pushed.block = d3(c->block);
			pushed.smem = c->smem;
			pushed.stream = H(c->stream);
			unsigned r = __cudaPushCallConfiguration(pushed.grid, pushed.block, pushed.smem, pushed.stream);
			record(API___cudaPushCallConfiguration, r, 1);
			if (r == 0) /* nvcc: push ? (void)0 : stub(args) */
				s->invoke();
			return NORET; /* the stub records cudaLaunchKernel */
		}
		return cudaLaunchKernel(find_stub(c->func)->addr, d3(c->grid), d3(c->block), kargs, c->smem, H(c->stream));
	case API_cudaLaunchKernel_ptsz:
		return cudaLaunchKernel_ptsz(find_stub(c->func)->addr, d3(c->grid), d3(c->block), kargs, c->smem, H(c->stream));
	case API_cudaMemcpy:
		return cudaMemcpy(host_buf(c->dst, c->size, 0), host_buf(c->src, c->size, 1), c->size, c->kind);
	case API_cudaMemcpy_ptds:
		return cudaMemcpy_ptds(host_buf(c->dst, c->size, 0), host_buf(c->src, c->size, 1), c->size, c->kind);
	case API_cudaMemcpyAsync:
		return cudaMemcpyAsync(host_buf(c->dst, c->size, 0), host_buf(c->src, c->size, 1), c->size, c->kind, H(c->stream));
	case API_cudaMemcpyAsync_ptsz:
		return cudaMemcpyAsync_ptsz(host_buf(c->dst, c->size, 0), host_buf(c->src, c->size, 1), c->size, c->kind, H(c->stream));
	case API_cudaMemset:
		return cudaMemset(H(c->ptr), c->value, c->size);
	case API_cudaEventRecord:
		return cudaEventRecord(H(c->handle), H(c->stream));
	case API_cudaEventSynchronize:
		return cudaEventSynchronize(H(c->handle));
	case API_cudaEventQuery:
		return cudaEventQuery(H(c->handle));
	case API_cudaStreamWaitEvent:
		return cudaStreamWaitEvent(H(c->stream), H(c->handle), c->value);
	case API_cudaStreamSynchronize:
		return cudaStreamSynchronize(H(c->stream));
	case API_cudaDeviceSynchronize:
		return cudaDeviceSynchronize();
	case API_cudaGraphLaunch:
		return cudaGraphLaunch(H(c->handle), H(c->stream));
	case API_cudaStreamBeginCapture:
		return cudaStreamBeginCapture(H(c->stream), c->value);
	case API_cudaStreamEndCapture: {
		cudaGraph_t g = H(c->out); /* the failing library leaves it */
		return cudaStreamEndCapture(H(c->stream), &g);
	}
	case API_cudaGraphInstantiate: {
		cudaGraphExec_t e = H(c->out);
		return cudaGraphInstantiate(&e, H(c->handle), NULL, NULL, 0);
	}
	case API_cudaGraphCreate: {
		cudaGraph_t g = H(c->out);
		return cudaGraphCreate(&g, c->value);
	}
	case API_cudaGraphClone: {
		cudaGraph_t g = H(c->out);
		return cudaGraphClone(&g, H(c->handle));
	}
	case API_cudaGraphAddKernelNode: {
		cudaGraphNode_t node = H(c->out);
		struct cudaKernelNodeParams p = {find_stub(c->func)->addr, d3(c->grid), d3(c->block), c->smem, kargs, NULL};
		return cudaGraphAddKernelNode(&node, H(c->handle), NULL, 0, &p);
	}
	case API_cudaGraphKernelNodeSetParams: {
		struct cudaKernelNodeParams p = {find_stub(c->func)->addr, d3(c->grid), d3(c->block), c->smem, kargs, NULL};
		return cudaGraphKernelNodeSetParams(H(c->node), &p);
	}
	case API_cudaGraphExecKernelNodeSetParams: {
		struct cudaKernelNodeParams p = {find_stub(c->func)->addr, d3(c->grid), d3(c->block), c->smem, kargs, NULL};
		return cudaGraphExecKernelNodeSetParams(H(c->handle), H(c->node), &p);
	}
	case API_cudaGraphExecUpdate: {
		cudaGraphNode_t err = NULL;
		int result = 0;
		return cudaGraphExecUpdate(H(c->handle), H(c->graph), &err, &result);
	}
	case API_cudaGraphAddChildGraphNode: {
		cudaGraphNode_t node = NULL;
		return cudaGraphAddChildGraphNode(&node, H(c->handle), NULL, 0, H(c->child));
	}
	case API_cudaGraphExecDestroy:
		return cudaGraphExecDestroy(H(c->handle));
	case API_cudaGraphDestroy:
		return cudaGraphDestroy(H(c->handle));
	case API___cudaRegisterFatBinary:
		fatbin_handle = __cudaRegisterFatBinary((void *)&fatbin_wrapper);
		return NORET;
	case API___cudaRegisterFunction: {
		const struct stub *s = find_stub(c->func);
		__cudaRegisterFunction(fatbin_handle, (const char *)s->addr, (char *)s->name, s->name, -1,
				       NULL, NULL, NULL, NULL, NULL);
		return NORET;
	}
	case API___cudaRegisterFatBinaryEnd:
		__cudaRegisterFatBinaryEnd(fatbin_handle);
		return NORET;
	case API___cudaUnregisterFatBinary:
		__cudaUnregisterFatBinary(fatbin_handle);
		fatbin_handle = NULL;
		return NORET;
	default:
		fprintf(stderr, "runtime: cannot call %s\n", api_name[c->api]);
		exit(2);
	}
}
