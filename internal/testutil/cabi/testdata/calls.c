#include <stddef.h>
typedef struct { unsigned x, y, z; } dim3;
typedef struct { char internal[128]; } ncclUniqueId;
typedef void *cudaStream_t, *ncclComm_t;
typedef enum { ncclInt8 = 0 } ncclDataType_t;
typedef enum { ncclSum = 0 } ncclRedOp_t;
int cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t s);
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem, void *stream, void **params, void **extra);
int ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
void call_cudaLaunchKernel(void) { cudaLaunchKernel((const void *)0x101, (dim3){0x201, 0x202, 0x203}, (dim3){0x301, 0x302, 0x303}, (void **)0x401, 0x501, (cudaStream_t)0x601); }
void call_cuLaunchKernel(void) { cuLaunchKernel((void *)0x101, 0x201, 0x301, 0x401, 0x501, 0x601, 0x701, 0x801, (void *)0x901, (void **)0xa01, (void **)0xb01); }
void call_ncclReduce(void) { ncclReduce((void *)0x101, (void *)0x201, 0x301, (ncclDataType_t)0x401, (ncclRedOp_t)0x501, 0x601, (ncclComm_t)0x701, (cudaStream_t)0x801); }
void call_ncclCommInitRank(void) { ncclUniqueId id = {{0x11, 0x12, 0x13}}; ncclCommInitRank((ncclComm_t *)0x101, 0x201, id, 0x401); }
