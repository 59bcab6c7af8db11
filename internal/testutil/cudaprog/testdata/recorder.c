/*
 * recorder.c: an LD_PRELOAD library for cudaprog's own tests. It defines
 * every CUDA runtime and driver entry point the scenario programs call,
 * prints what each received as one line
 *     GOT <api> tid=<tid> key=value ...
 * (keys: func name handle grid block smem stream kind size dst src ptr
 * value out child function; pointers as 0x%llx, dims as x,y,z) and returns 0. It checks that
 * the programs pass the arguments scenario.go says they pass, without a
 * tracer. __cudaPopCallConfiguration returns what was pushed, as cudart
 * does on a GPU machine.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct { unsigned x, y, z; } dim3;
typedef unsigned long long u64;

#define P(v) ((u64)(uintptr_t)(v))
#define EXPORT __attribute__((visibility("default")))

static void got(const char *api, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void got(const char *api, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	printf("GOT %s tid=%ld %s\n", api, (long)syscall(SYS_gettid), buf);
	fflush(stdout);
}

/* Runtime API. */
EXPORT int cudaSetDevice(int d) { got(__func__, "value=%d", d); return 0; }
EXPORT int cudaMalloc(void **p, size_t n) { (void)p; got(__func__, "size=%zu", n); return 0; }
EXPORT int cudaMallocAsync(void **p, size_t n, void *s) { (void)p; got(__func__, "size=%zu stream=0x%llx", n, P(s)); return 0; }
EXPORT int cudaFree(void *p) { got(__func__, "ptr=0x%llx", P(p)); return 0; }
EXPORT int cudaFreeAsync(void *p, void *s) { got(__func__, "ptr=0x%llx stream=0x%llx", P(p), P(s)); return 0; }

#define LAUNCH(name)                                                                                         \
	EXPORT int name(const void *f, dim3 g, dim3 b, void **args, size_t smem, void *s)                   \
	{                                                                                                    \
		(void)args;                                                                                  \
		got(__func__, "func=0x%llx grid=%u,%u,%u block=%u,%u,%u smem=%zu stream=0x%llx", P(f), g.x, \
		    g.y, g.z, b.x, b.y, b.z, smem, P(s));                                                    \
		return 0;                                                                                    \
	}
LAUNCH(cudaLaunchKernel)
LAUNCH(cudaLaunchKernel_ptsz)

#define MEMCPY(name)                                                                                       \
	EXPORT int name(void *d, const void *s, size_t n, int kind)                                         \
	{                                                                                                  \
		got(__func__, "dst=0x%llx src=0x%llx size=%zu kind=%d", P(d), P(s), n, kind);              \
		return 0;                                                                                  \
	}
MEMCPY(cudaMemcpy)
MEMCPY(cudaMemcpy_ptds)

#define MEMCPY_ASYNC(name)                                                                                  \
	EXPORT int name(void *d, const void *s, size_t n, int kind, void *st)                                 \
	{                                                                                                    \
		got(__func__, "dst=0x%llx src=0x%llx size=%zu kind=%d stream=0x%llx", P(d), P(s), n, kind,   \
		    P(st));                                                                                  \
		return 0;                                                                                    \
	}
MEMCPY_ASYNC(cudaMemcpyAsync)
MEMCPY_ASYNC(cudaMemcpyAsync_ptsz)

EXPORT int cudaMemset(void *p, int v, size_t n) { got(__func__, "ptr=0x%llx value=%d size=%zu", P(p), v, n); return 0; }
EXPORT int cudaEventRecord(void *e, void *s) { got(__func__, "handle=0x%llx stream=0x%llx", P(e), P(s)); return 0; }
EXPORT int cudaEventSynchronize(void *e) { got(__func__, "handle=0x%llx", P(e)); return 0; }
EXPORT int cudaEventQuery(void *e) { got(__func__, "handle=0x%llx", P(e)); return 0; }
EXPORT int cudaStreamWaitEvent(void *s, void *e, unsigned f) { got(__func__, "stream=0x%llx handle=0x%llx value=%u", P(s), P(e), f); return 0; }
EXPORT int cudaStreamSynchronize(void *s) { got(__func__, "stream=0x%llx", P(s)); return 0; }
EXPORT int cudaDeviceSynchronize(void) { got(__func__, "%s", ""); return 0; }
EXPORT int cudaGraphLaunch(void *g, void *s) { got(__func__, "handle=0x%llx stream=0x%llx", P(g), P(s)); return 0; }
EXPORT int cudaStreamBeginCapture(void *s, int mode) { got(__func__, "stream=0x%llx value=%d", P(s), mode); return 0; }
/* The outputs: what the program put there, as a failing library leaves it. */
EXPORT int cudaStreamEndCapture(void *s, void **g) { got(__func__, "stream=0x%llx out=0x%llx", P(s), P(*g)); return 0; }
EXPORT int cudaGraphInstantiate(void **e, void *g, void *errNode, char *log, size_t n)
{
	(void)errNode, (void)log, (void)n;
	got(__func__, "out=0x%llx handle=0x%llx", P(*e), P(g));
	return 0;
}
EXPORT int cudaGraphExecDestroy(void *e) { got(__func__, "handle=0x%llx", P(e)); return 0; }
EXPORT int cudaGraphCreate(void **g, unsigned flags) { got(__func__, "out=0x%llx value=%u", P(*g), flags); return 0; }
EXPORT int cudaGraphClone(void **g, void *orig) { got(__func__, "out=0x%llx handle=0x%llx", P(*g), P(orig)); return 0; }
struct kernel_node_params { void *func; dim3 grid, block; unsigned smem; void **args, **extra; };
EXPORT int cudaGraphAddKernelNode(void **node, void *g, void *deps, size_t n, const struct kernel_node_params *p)
{
	(void)deps, (void)n;
	got(__func__, "out=0x%llx handle=0x%llx func=0x%llx grid=%u,%u,%u block=%u,%u,%u smem=%u", P(*node), P(g),
	    P(p->func), p->grid.x, p->grid.y, p->grid.z, p->block.x, p->block.y, p->block.z, p->smem);
	return 0;
}
EXPORT int cudaGraphKernelNodeSetParams(void *node, const struct kernel_node_params *p)
{
	got(__func__, "node=0x%llx func=0x%llx grid=%u,%u,%u block=%u,%u,%u smem=%u", P(node), P(p->func), p->grid.x,
	    p->grid.y, p->grid.z, p->block.x, p->block.y, p->block.z, p->smem);
	return 0;
}
EXPORT int cudaGraphExecKernelNodeSetParams(void *e, void *node, const struct kernel_node_params *p)
{
	got(__func__, "handle=0x%llx node=0x%llx func=0x%llx grid=%u,%u,%u block=%u,%u,%u smem=%u", P(e), P(node),
	    P(p->func), p->grid.x, p->grid.y, p->grid.z, p->block.x, p->block.y, p->block.z, p->smem);
	return 0;
}
EXPORT int cudaGraphExecUpdate(void *e, void *g, void **errNode, int *result)
{
	(void)errNode, (void)result;
	got(__func__, "handle=0x%llx graph=0x%llx", P(e), P(g));
	return 0;
}
EXPORT int cudaGraphAddChildGraphNode(void **node, void *g, void *deps, size_t n, void *child)
{
	(void)node, (void)deps, (void)n;
	got(__func__, "handle=0x%llx child=0x%llx", P(g), P(child));
	return 0;
}
EXPORT int cudaGraphDestroy(void *g) { got(__func__, "handle=0x%llx", P(g)); return 0; }

static char fake_handle[64];
EXPORT void **__cudaRegisterFatBinary(void *w)
{
	got(__func__, "magic=0x%x", *(int *)w);
	return (void **)fake_handle;
}
EXPORT void __cudaRegisterFatBinaryEnd(void **h) { got(__func__, "handle=0x%llx", P(h)); }
EXPORT void __cudaUnregisterFatBinary(void **h) { got(__func__, "handle=0x%llx", P(h)); }
EXPORT void __cudaRegisterFunction(void **h, const char *host, char *dev, const char *name, int limit, void *tid,
				   void *bid, void *bdim, void *gdim, int *wsize)
{
	(void)limit, (void)tid, (void)bid, (void)bdim, (void)gdim, (void)wsize;
	got(__func__, "handle=0x%llx func=0x%llx name=%s devname=%s", P(h), P(host), dev, name);
}

static __thread struct { dim3 g, b; size_t smem; void *s; } cfg;
EXPORT unsigned __cudaPushCallConfiguration(dim3 g, dim3 b, size_t smem, void *s)
{
	got(__func__, "grid=%u,%u,%u block=%u,%u,%u smem=%zu stream=0x%llx", g.x, g.y, g.z, b.x, b.y, b.z, smem, P(s));
	cfg.g = g, cfg.b = b, cfg.smem = smem, cfg.s = s;
	return 0;
}
EXPORT int __cudaPopCallConfiguration(dim3 *g, dim3 *b, size_t *smem, void **s)
{
	got(__func__, "%s", "");
	*g = cfg.g, *b = cfg.b, *smem = cfg.smem, *s = cfg.s;
	return 0;
}

/* Driver API. */
typedef struct {
	unsigned gx, gy, gz, bx, by, bz, smem;
	void *s, *attrs;
	unsigned nattrs;
} launch_config;

EXPORT int cuInit(unsigned f) { got(__func__, "value=%u", f); return 0; }

#define CULAUNCH(name)                                                                                     \
	EXPORT int name(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, \
			unsigned smem, void *s, void **params, void **extra)                                \
	{                                                                                                  \
		(void)params, (void)extra;                                                                 \
		got(__func__, "handle=0x%llx grid=%u,%u,%u block=%u,%u,%u smem=%u stream=0x%llx", P(f), gx, \
		    gy, gz, bx, by, bz, smem, P(s));                                                       \
		return 0;                                                                                  \
	}
CULAUNCH(cuLaunchKernel)
CULAUNCH(cuLaunchKernel_ptsz)

EXPORT int cuLaunchKernelEx(const launch_config *c, void *f, void **params, void **extra)
{
	(void)params, (void)extra;
	got(__func__, "handle=0x%llx grid=%u,%u,%u block=%u,%u,%u smem=%u stream=0x%llx", P(f), c->gx, c->gy, c->gz,
	    c->bx, c->by, c->bz, c->smem, P(c->s));
	return 0;
}
EXPORT int cuMemAlloc_v2(u64 *p, size_t n) { (void)p; got(__func__, "size=%zu", n); return 0; }
EXPORT int cuMemAllocAsync(u64 *p, size_t n, void *s) { (void)p; got(__func__, "size=%zu stream=0x%llx", n, P(s)); return 0; }
EXPORT int cuMemFree_v2(u64 p) { got(__func__, "ptr=0x%llx", p); return 0; }
EXPORT int cuMemFreeAsync(u64 p, void *s) { got(__func__, "ptr=0x%llx stream=0x%llx", p, P(s)); return 0; }
EXPORT int cuMemcpyHtoD_v2(u64 d, const void *s, size_t n) { got(__func__, "dst=0x%llx src=0x%llx size=%zu", d, P(s), n); return 0; }
EXPORT int cuMemcpyDtoH_v2(void *d, u64 s, size_t n) { got(__func__, "dst=0x%llx src=0x%llx size=%zu", P(d), s, n); return 0; }
EXPORT int cuMemcpyDtoD_v2(u64 d, u64 s, size_t n) { got(__func__, "dst=0x%llx src=0x%llx size=%zu", d, s, n); return 0; }
EXPORT int cuMemcpy(u64 d, u64 s, size_t n) { got(__func__, "dst=0x%llx src=0x%llx size=%zu", d, s, n); return 0; }
EXPORT int cuMemcpyAsync(u64 d, u64 s, size_t n, void *st) { got(__func__, "dst=0x%llx src=0x%llx size=%zu stream=0x%llx", d, s, n, P(st)); return 0; }
EXPORT int cuMemsetD8_v2(u64 p, unsigned char v, size_t n) { got(__func__, "ptr=0x%llx value=%u size=%zu", p, v, n); return 0; }
EXPORT int cuStreamSynchronize(void *s) { got(__func__, "stream=0x%llx", P(s)); return 0; }
EXPORT int cuCtxSynchronize(void) { got(__func__, "%s", ""); return 0; }
EXPORT int cuGraphLaunch(void *g, void *s) { got(__func__, "handle=0x%llx stream=0x%llx", P(g), P(s)); return 0; }

/* Driver graphs: the outputs as the program pre-filled them. */
typedef struct {
	void *func;
	unsigned gx, gy, gz, bx, by, bz, smem;
	void **params, **extra;
	void *kern, *ctx; /* v2 only */
} cu_kernel_node_params;

EXPORT int cuStreamBeginCapture(void *s) { got(__func__, "stream=0x%llx", P(s)); return 0; }
EXPORT int cuStreamBeginCapture_v2(void *s, int mode) { got(__func__, "stream=0x%llx value=%d", P(s), mode); return 0; }
EXPORT int cuStreamEndCapture(void *s, void **g) { got(__func__, "stream=0x%llx out=0x%llx", P(s), P(*g)); return 0; }

#define CU_KERNEL_NODE(name)                                                                                     \
	EXPORT int name(void **node, void *g, void *deps, size_t n, const cu_kernel_node_params *p)           \
	{                                                                                                      \
		(void)deps, (void)n;                                                                           \
		got(__func__, "out=0x%llx handle=0x%llx function=0x%llx grid=%u,%u,%u block=%u,%u,%u smem=%u", \
		    P(*node), P(g), P(p->func), p->gx, p->gy, p->gz, p->bx, p->by, p->bz, p->smem);             \
		return 0;                                                                                      \
	}
CU_KERNEL_NODE(cuGraphAddKernelNode)
CU_KERNEL_NODE(cuGraphAddKernelNode_v2)

#define CU_INSTANTIATE(name)                                                                \
	EXPORT int name(void **e, void *g, void *errNode, char *log, size_t n)             \
	{                                                                                   \
		(void)errNode, (void)log, (void)n;                                          \
		got(__func__, "out=0x%llx handle=0x%llx", P(*e), P(g));                     \
		return 0;                                                                   \
	}
CU_INSTANTIATE(cuGraphInstantiate)
CU_INSTANTIATE(cuGraphInstantiate_v2)
EXPORT int cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long flags)
{
	got(__func__, "out=0x%llx handle=0x%llx value=%llu", P(*e), P(g), flags);
	return 0;
}
EXPORT int cuGraphExecDestroy(void *e) { got(__func__, "handle=0x%llx", P(e)); return 0; }
EXPORT int cuGraphDestroy(void *g) { got(__func__, "handle=0x%llx", P(g)); return 0; }
EXPORT int cuGraphCreate(void **g, unsigned flags) { got(__func__, "out=0x%llx value=%u", P(*g), flags); return 0; }
EXPORT int cuGraphClone(void **g, void *orig) { got(__func__, "out=0x%llx handle=0x%llx", P(*g), P(orig)); return 0; }
EXPORT int cuGraphAddChildGraphNode(void **node, void *g, void *deps, size_t n, void *child)
{
	(void)deps, (void)n;
	got(__func__, "out=0x%llx handle=0x%llx child=0x%llx", P(*node), P(g), P(child));
	return 0;
}

#define CU_SET(name)                                                                                   \
	EXPORT int name(void *node, const cu_kernel_node_params *p)                                   \
	{                                                                                              \
		got(__func__, "node=0x%llx function=0x%llx grid=%u,%u,%u block=%u,%u,%u smem=%u", P(node), \
		    P(p->func), p->gx, p->gy, p->gz, p->bx, p->by, p->bz, p->smem);                    \
		return 0;                                                                              \
	}
CU_SET(cuGraphKernelNodeSetParams)
CU_SET(cuGraphKernelNodeSetParams_v2)

#define CU_EXEC_SET(name)                                                                                        \
	EXPORT int name(void *e, void *node, const cu_kernel_node_params *p)                                    \
	{                                                                                                        \
		got(__func__, "handle=0x%llx node=0x%llx function=0x%llx grid=%u,%u,%u block=%u,%u,%u smem=%u", \
		    P(e), P(node), P(p->func), p->gx, p->gy, p->gz, p->bx, p->by, p->bz, p->smem);             \
		return 0;                                                                                        \
	}
CU_EXEC_SET(cuGraphExecKernelNodeSetParams)
CU_EXEC_SET(cuGraphExecKernelNodeSetParams_v2)

EXPORT int cuGraphExecUpdate(void *e, void *g, void **errNode, int *result)
{
	(void)errNode, (void)result;
	got(__func__, "handle=0x%llx graph=0x%llx", P(e), P(g));
	return 0;
}
EXPORT int cuGraphExecUpdate_v2(void *e, void *g, void *info)
{
	(void)info;
	got(__func__, "handle=0x%llx graph=0x%llx", P(e), P(g));
	return 0;
}

/* The generic node calls: CUgraphNodeParams, its type at 0, the kernel's
 * parameters or the child graph at 16. */
typedef struct {
	int type;
	int reserved0[3];
	union {
		long long reserved1[29];
		cu_kernel_node_params kernel;
		void *graph;
	};
	long long reserved2;
} cu_node_params;

static void got_node(const char *api, const char *head, const cu_node_params *p)
{
	if (p->type == 0)
		got(api, "%s type=0 function=0x%llx grid=%u,%u,%u block=%u,%u,%u smem=%u", head, P(p->kernel.func),
		    p->kernel.gx, p->kernel.gy, p->kernel.gz, p->kernel.bx, p->kernel.by, p->kernel.bz, p->kernel.smem);
	else if (p->type == 4)
		got(api, "%s type=4 child=0x%llx", head, P(p->graph));
	else
		got(api, "%s type=%d", head, p->type);
}

EXPORT int cuGraphAddNode(void **node, void *g, void *deps, size_t n, cu_node_params *p)
{
	(void)deps, (void)n;
	char head[64];
	snprintf(head, sizeof head, "out=0x%llx handle=0x%llx", P(*node), P(g));
	got_node(__func__, head, p);
	return 0;
}
EXPORT int cuGraphNodeSetParams(void *node, cu_node_params *p)
{
	char head[64];
	snprintf(head, sizeof head, "node=0x%llx", P(node));
	got_node(__func__, head, p);
	return 0;
}
EXPORT int cuGraphExecNodeSetParams(void *e, void *node, cu_node_params *p)
{
	char head[64];
	snprintf(head, sizeof head, "handle=0x%llx node=0x%llx", P(e), P(node));
	got_node(__func__, head, p);
	return 0;
}
