/*
 * driver.c: calls the REAL CUDA driver API (Debian's libcuda.so.1 535,
 * linked by cudaprog.Build) with the known arguments of the "driver"
 * scenarios in scenario.go: launch, graphs, and loop <n>. Without a GPU cuInit
 * returns 100 and the other calls 3 or 400, after entering the exported
 * entry point. libcuda dereferences CUfunction, CUstream and CUgraphExec
 * handles even then, so all of them point into the zeroed handle region.
 */
#include "common.h"

typedef unsigned long long CUdeviceptr;
typedef void *CUfunction, *CUstream, *CUgraph, *CUgraphExec, *CUgraphNode;

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

/* Graphs, as cuda.h declares them (CUDA 12.6; the CUDA 11 forms are the
 * unsuffixed v1 symbols). CUDA_KERNEL_NODE_PARAMS v1 ends at extra, v2
 * adds kern and ctx. */
typedef struct {
	CUfunction func;
	unsigned gridDimX, gridDimY, gridDimZ;
	unsigned blockDimX, blockDimY, blockDimZ;
	unsigned sharedMemBytes;
	void **kernelParams, **extra;
	void *kern, *ctx;
} CUDA_KERNEL_NODE_PARAMS;
int cuStreamBeginCapture(CUstream s);
int cuStreamBeginCapture_v2(CUstream s, int mode);
int cuStreamEndCapture(CUstream s, CUgraph *g);
int cuGraphAddKernelNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
			 const CUDA_KERNEL_NODE_PARAMS *p);
int cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
			    const CUDA_KERNEL_NODE_PARAMS *p);
int cuGraphInstantiate(CUgraphExec *e, CUgraph g, CUgraphNode *errNode, char *log, size_t logSize);
int cuGraphInstantiate_v2(CUgraphExec *e, CUgraph g, CUgraphNode *errNode, char *log, size_t logSize);
int cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags);
int cuGraphExecDestroy(CUgraphExec e);
int cuGraphDestroy(CUgraph g);
int cuGraphCreate(CUgraph *g, unsigned flags);
int cuGraphKernelNodeSetParams(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p);
int cuGraphKernelNodeSetParams_v2(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p);
int cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p);
int cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS *p);
int cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphNode *errNode, int *result);
typedef struct {
	int result;
	CUgraphNode errorNode, errorFromNode;
} CUgraphExecUpdateResultInfo;
int cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info);

/* CUDA 12.2's generic node calls: CUgraphNodeParams, a type, then the
 * type's parameters (CUDA_KERNEL_NODE_PARAMS_v3, laid out as v2;
 * CUDA_CHILD_GRAPH_NODE_PARAMS, the graph) in a union of 232 bytes. */
typedef struct {
	int type;
	int reserved0[3];
	union {
		long long reserved1[29];
		CUDA_KERNEL_NODE_PARAMS kernel;
		struct {
			CUgraph graph;
		} graph;
	};
	long long reserved2;
} CUgraphNodeParams;
_Static_assert(sizeof(CUgraphNodeParams) == 256, "CUgraphNodeParams");
int cuGraphAddNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps, CUgraphNodeParams *p);
int cuGraphNodeSetParams(CUgraphNode node, CUgraphNodeParams *p);
int cuGraphExecNodeSetParams(CUgraphExec e, CUgraphNode node, CUgraphNodeParams *p);
int cuGraphClone(CUgraph *clone, CUgraph original);
int cuGraphAddChildGraphNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps, CUgraph child);

const char program_name[] = "driver";
const struct stub stubs[] = {{"", NULL, NULL}};
const int nstubs = 0;

static int n = 4;
static void *params[] = {&n};

#define DEV(v, slot) ((CUdeviceptr)(uintptr_t)host_buf((v), c->size, (slot)))

/* kernel_node is a call's kernel node parameters. */
static CUDA_KERNEL_NODE_PARAMS kernel_node(const struct call *c)
{
	CUDA_KERNEL_NODE_PARAMS p = {H(c->function), c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
				     c->block[2], c->smem, params, NULL, NULL, NULL};
	return p;
}

/* node_params is a call's generic node parameters. */
static CUgraphNodeParams node_params(const struct call *c)
{
	CUgraphNodeParams p;
	memset(&p, 0, sizeof p);
	p.type = c->node_type;
	if (c->node_type == 0)
		p.kernel = kernel_node(c);
	else if (c->node_type == 4)
		p.graph.graph = H(c->child);
	return p;
}

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
	case API_cuStreamBeginCapture:
		return cuStreamBeginCapture(H(c->stream));
	case API_cuStreamBeginCapture_v2:
		return cuStreamBeginCapture_v2(H(c->stream), c->value);
	case API_cuStreamEndCapture: {
		CUgraph g = H(c->out); /* the failing library leaves it */
		return cuStreamEndCapture(H(c->stream), &g);
	}
	case API_cuGraphAddKernelNode: {
		CUgraphNode node = H(c->out);
		CUDA_KERNEL_NODE_PARAMS p = kernel_node(c);
		return cuGraphAddKernelNode(&node, H(c->handle), NULL, 0, &p);
	}
	case API_cuGraphAddKernelNode_v2: {
		CUgraphNode node = H(c->out);
		CUDA_KERNEL_NODE_PARAMS p = kernel_node(c);
		return cuGraphAddKernelNode_v2(&node, H(c->handle), NULL, 0, &p);
	}
	case API_cuGraphInstantiate: {
		CUgraphExec e = H(c->out);
		return cuGraphInstantiate(&e, H(c->handle), NULL, NULL, 0);
	}
	case API_cuGraphInstantiate_v2: {
		CUgraphExec e = H(c->out);
		return cuGraphInstantiate_v2(&e, H(c->handle), NULL, NULL, 0);
	}
	case API_cuGraphInstantiateWithFlags: {
		CUgraphExec e = H(c->out);
		return cuGraphInstantiateWithFlags(&e, H(c->handle), 0);
	}
	case API_cuGraphAddNode: {
		CUgraphNode node = H(c->out);
		CUgraphNodeParams p = node_params(c);
		return cuGraphAddNode(&node, H(c->handle), NULL, 0, &p);
	}
	case API_cuGraphKernelNodeSetParams: {
		CUDA_KERNEL_NODE_PARAMS p = kernel_node(c);
		return cuGraphKernelNodeSetParams(H(c->node), &p);
	}
	case API_cuGraphKernelNodeSetParams_v2: {
		CUDA_KERNEL_NODE_PARAMS p = kernel_node(c);
		return cuGraphKernelNodeSetParams_v2(H(c->node), &p);
	}
	case API_cuGraphNodeSetParams: {
		CUgraphNodeParams p = node_params(c);
		return cuGraphNodeSetParams(H(c->node), &p);
	}
	case API_cuGraphExecKernelNodeSetParams: {
		CUDA_KERNEL_NODE_PARAMS p = kernel_node(c);
		return cuGraphExecKernelNodeSetParams(H(c->handle), H(c->node), &p);
	}
	case API_cuGraphExecKernelNodeSetParams_v2: {
		CUDA_KERNEL_NODE_PARAMS p = kernel_node(c);
		return cuGraphExecKernelNodeSetParams_v2(H(c->handle), H(c->node), &p);
	}
	case API_cuGraphExecNodeSetParams: {
		CUgraphNodeParams p = node_params(c);
		return cuGraphExecNodeSetParams(H(c->handle), H(c->node), &p);
	}
	case API_cuGraphExecUpdate: {
		CUgraphNode err = NULL;
		int result = 0;
		return cuGraphExecUpdate(H(c->handle), H(c->graph), &err, &result);
	}
	case API_cuGraphExecUpdate_v2: {
		CUgraphExecUpdateResultInfo info = {0, NULL, NULL};
		return cuGraphExecUpdate_v2(H(c->handle), H(c->graph), &info);
	}
	case API_cuGraphCreate: {
		CUgraph g = H(c->out);
		return cuGraphCreate(&g, c->value);
	}
	case API_cuGraphClone: {
		CUgraph g = H(c->out);
		return cuGraphClone(&g, H(c->handle));
	}
	case API_cuGraphAddChildGraphNode: {
		CUgraphNode node = H(c->out);
		return cuGraphAddChildGraphNode(&node, H(c->handle), NULL, 0, H(c->child));
	}
	case API_cuGraphExecDestroy:
		return cuGraphExecDestroy(H(c->handle));
	case API_cuGraphDestroy:
		return cuGraphDestroy(H(c->handle));
	default:
		fprintf(stderr, "driver: cannot call %s\n", api_name[c->api]);
		exit(2);
	}
}
