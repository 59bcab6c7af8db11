/*
 * hip.c: calls the real HIP runtime (Debian's libamdhip64-5, HIP 5.2) with
 * known arguments. Without /dev/kfd every call fails (101), but the probes
 * fire. The prototypes are hip_runtime_api.h's (HIP 5.2), declared here:
 * Debian ships no HIP headers with the library.
 *
 * Protocol: "STUB hip_kernel 0x<addr>", "BUF 0x<host> 0x<dev>", "READY
 * <pid>", then one line on stdin, then the calls, "RET <api> <code> 1" per
 * call and "DONE". With the argument "graphs", the calls are those of
 * graphs() instead.
 */
#include <string.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

typedef struct { uint32_t x, y, z; } dim3;
typedef void *hipStream_t, *hipEvent_t, *hipFunction_t, *hipModule_t, *hipGraph_t, *hipGraphExec_t, *hipGraphNode_t;
int hipLaunchKernel(const void *f, dim3 grid, dim3 block, void **args, size_t smem, hipStream_t s);
int hipExtLaunchKernel(const void *f, dim3 grid, dim3 block, void **args, size_t smem, hipStream_t s,
		       hipEvent_t start, hipEvent_t stop, int flags);
int hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			  unsigned bz, unsigned smem, hipStream_t s, void **params, void **extra);
int hipModuleGetFunction(hipFunction_t *f, hipModule_t m, const char *name);
int hipMemcpy(void *dst, const void *src, size_t n, int kind);
int hipMemcpyAsync(void *dst, const void *src, size_t n, int kind, hipStream_t s);
int hipMalloc(void **p, size_t n);
int hipFree(void *p);
int hipStreamSynchronize(hipStream_t s);
int hipDeviceSynchronize(void);
int hipSetDevice(int device);
int hipGraphLaunch(hipGraphExec_t g, hipStream_t s);
int hipEventRecord(hipEvent_t e, hipStream_t s);
int hipEventSynchronize(hipEvent_t e);
int hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned flags);
int hipStreamBeginCapture(hipStream_t s, int mode);
int hipStreamEndCapture(hipStream_t s, hipGraph_t *g);
int hipGraphInstantiate(hipGraphExec_t *e, hipGraph_t g, hipGraphNode_t *errNode, char *log, size_t logSize);
int hipGraphExecDestroy(hipGraphExec_t e);
int hipGraphDestroy(hipGraph_t g);
/* HIP's kernel node parameters order their fields otherwise than CUDA's. */
typedef struct {
	dim3 blockDim;
	void **extra;
	void *func;
	dim3 gridDim;
	void **kernelParams;
	unsigned int sharedMemBytes;
} hipKernelNodeParams;
int hipGraphCreate(hipGraph_t *g, unsigned flags);
int hipGraphClone(hipGraph_t *clone, hipGraph_t original);
int hipGraphAddKernelNode(hipGraphNode_t *node, hipGraph_t g, const hipGraphNode_t *deps, size_t ndeps,
			  const hipKernelNodeParams *p);
int hipGraphAddChildGraphNode(hipGraphNode_t *node, hipGraph_t g, const hipGraphNode_t *deps, size_t ndeps,
			      hipGraph_t child);
int hipGraphKernelNodeSetParams(hipGraphNode_t node, const hipKernelNodeParams *p);
int hipGraphExecKernelNodeSetParams(hipGraphExec_t e, hipGraphNode_t node, const hipKernelNodeParams *p);
int hipGraphExecUpdate(hipGraphExec_t e, hipGraph_t g, hipGraphNode_t *errNode, int *result);

void hip_kernel(void) {}

#define STREAM ((hipStream_t)0x1234)
#define EVENT ((hipEvent_t)0x888)
#define GRAPH ((hipGraph_t)0x999)
#define EXEC ((hipGraphExec_t)0x777)
#define RET(api, call) printf("RET %s %d 1\n", api, call)

/* A graph built node by node (the outputs pre-filled: the failing
 * runtime leaves them): GRAPH_B, with kernel nodes NODE_A and NODE_B,
 * NODE_B's parameters set; GRAPH_C embedding GRAPH_B as a child; GRAPH_D
 * a clone of GRAPH_C. EXEC_B (of GRAPH_B) replayed twice, its NODE_A
 * set, replayed once; EXEC_D (of GRAPH_D) replayed once; EXEC_B updated
 * from GRAPH_C (which fails) and replayed once. */
#define GRAPH_B ((hipGraph_t)0xb00)
#define GRAPH_C ((hipGraph_t)0xc00)
#define GRAPH_D ((hipGraph_t)0xd00)
#define NODE_A ((hipGraphNode_t)0xa10)
#define NODE_B ((hipGraphNode_t)0xa20)
#define EXEC_B ((hipGraphExec_t)0xe00)
#define EXEC_D ((hipGraphExec_t)0xe10)

static void graphs(void)
{
	hipGraph_t g = GRAPH_B, c = GRAPH_C, d = GRAPH_D;
	hipGraphNode_t n = NODE_A, child = NULL;
	hipGraphExec_t e = EXEC_B;
	hipKernelNodeParams p = {{64, 2, 1}, NULL, (void *)hip_kernel, {5, 1, 1}, NULL, 96};
	RET("hipGraphCreate", hipGraphCreate(&g, 0));
	RET("hipGraphAddKernelNode", hipGraphAddKernelNode(&n, GRAPH_B, NULL, 0, &p));
	n = NODE_B;
	p = (hipKernelNodeParams){{32, 1, 1}, NULL, (void *)hip_kernel, {9, 1, 1}, NULL, 0};
	RET("hipGraphAddKernelNode", hipGraphAddKernelNode(&n, GRAPH_B, NULL, 0, &p));
	p = (hipKernelNodeParams){{128, 1, 1}, NULL, (void *)hip_kernel, {17, 1, 1}, NULL, 64};
	RET("hipGraphKernelNodeSetParams", hipGraphKernelNodeSetParams(NODE_B, &p));
	RET("hipGraphCreate", hipGraphCreate(&c, 0));
	RET("hipGraphAddChildGraphNode", hipGraphAddChildGraphNode(&child, GRAPH_C, NULL, 0, GRAPH_B));
	RET("hipGraphClone", hipGraphClone(&d, GRAPH_C));
	RET("hipGraphInstantiate", hipGraphInstantiate(&e, GRAPH_B, NULL, NULL, 0));
	RET("hipGraphLaunch", hipGraphLaunch(EXEC_B, STREAM));
	RET("hipGraphLaunch", hipGraphLaunch(EXEC_B, STREAM));
	p = (hipKernelNodeParams){{256, 1, 1}, NULL, (void *)hip_kernel, {33, 1, 1}, NULL, 32};
	RET("hipGraphExecKernelNodeSetParams", hipGraphExecKernelNodeSetParams(EXEC_B, NODE_A, &p));
	RET("hipGraphLaunch", hipGraphLaunch(EXEC_B, STREAM));
	e = EXEC_D;
	RET("hipGraphInstantiate", hipGraphInstantiate(&e, GRAPH_D, NULL, NULL, 0));
	RET("hipGraphLaunch", hipGraphLaunch(EXEC_D, STREAM));
	hipGraphNode_t err = NULL;
	int result = 0;
	RET("hipGraphExecUpdate", hipGraphExecUpdate(EXEC_B, GRAPH_C, &err, &result));
	RET("hipGraphLaunch", hipGraphLaunch(EXEC_B, STREAM));
}

int main(int argc, char **argv)
{
	static char host[64], dev[64];
	dim3 grid = {7, 3, 2}, block = {64, 2, 1};
	void *p = 0;
	hipFunction_t fn = 0;
	char go[16];
	printf("STUB hip_kernel %p\nBUF %p %p\nREADY %d\n", (void *)hip_kernel, (void *)host, (void *)dev, getpid());
	fflush(stdout);
	if (!fgets(go, sizeof(go), stdin))
		return 1;
	if (argc > 1 && strcmp(argv[1], "graphs") == 0) {
		graphs();
		printf("DONE\n");
		fflush(stdout);
		return 0;
	}
	RET("hipSetDevice", hipSetDevice(1));
	RET("hipMalloc", hipMalloc(&p, 4096));
	RET("hipLaunchKernel", hipLaunchKernel((void *)hip_kernel, grid, block, 0, 128, STREAM));
	RET("hipExtLaunchKernel", hipExtLaunchKernel((void *)hip_kernel, grid, block, 0, 256, STREAM, 0, 0, 0));
	RET("hipModuleGetFunction", hipModuleGetFunction(&fn, (hipModule_t)0x99, "module_kernel"));
	RET("hipModuleLaunchKernel", hipModuleLaunchKernel((hipFunction_t)0x5678, 4, 5, 6, 32, 4, 2, 512, STREAM, 0, 0));
	RET("hipMemcpy", hipMemcpy(dev, host, 64, 1));
	RET("hipMemcpyAsync", hipMemcpyAsync(host, dev, 32, 2, STREAM));
	RET("hipFree", hipFree((void *)0xabc000));
	RET("hipStreamSynchronize", hipStreamSynchronize(STREAM));
	RET("hipDeviceSynchronize", hipDeviceSynchronize());
	RET("hipGraphLaunch", hipGraphLaunch(EXEC, STREAM)); /* not known yet */
	RET("hipEventRecord", hipEventRecord(EVENT, STREAM));
	RET("hipEventSynchronize", hipEventSynchronize(EVENT));
	RET("hipStreamWaitEvent", hipStreamWaitEvent(STREAM, EVENT, 0));
	/* A stream capture of one launch, replayed twice. The outputs are
	 * pre-filled: the failing runtime leaves them as they are. */
	hipGraph_t g = GRAPH;
	hipGraphExec_t e = EXEC;
	RET("hipStreamBeginCapture", hipStreamBeginCapture(STREAM, 0));
	RET("hipLaunchKernel", hipLaunchKernel((void *)hip_kernel, grid, block, 0, 64, STREAM));
	RET("hipStreamEndCapture", hipStreamEndCapture(STREAM, &g));
	RET("hipGraphInstantiate", hipGraphInstantiate(&e, g, NULL, NULL, 0));
	RET("hipGraphLaunch", hipGraphLaunch(e, STREAM));
	RET("hipGraphLaunch", hipGraphLaunch(e, STREAM));
	RET("hipGraphExecDestroy", hipGraphExecDestroy(e));
	RET("hipGraphDestroy", hipGraphDestroy(g));
	printf("DONE\n");
	fflush(stdout);
	return 0;
}
