// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// Where a probed function's arguments are at its first instruction, per
// architecture: the one place the BPF objects learn a calling convention.
// Include it after <bpf/bpf_tracing.h>; bpf2go's -target amd64 defines
// __TARGET_ARCH_x86, -target arm64 __TARGET_ARCH_arm64.
//
// C functions (the System V AMD64 ABI on x86-64, AAPCS64 on arm64):
// integer and pointer arguments, and aggregates of up to 16 bytes (two
// words: CUDA's dim3), take the next argument words in order. An int
// fills the low half of its word; the upper half is not the callee's,
// so the programs mask it.
//
//   word        x86-64                    arm64
//   1 to 6      rdi rsi rdx rcx r8 r9      x0 to x5
//   7, 8        [rsp+8], [rsp+16]          x6, x7
//   9, 10, ...  [rsp+24], [rsp+32], ...    [sp], [sp+8], ...
//
// (At a function's first instruction x86-64's rsp points at the return
// address, arm64's sp at the first stack word: the return address is in
// x30.) An aggregate over 16 bytes (NCCL's 128-byte ncclUniqueId) goes to
// memory: x86-64 copies it onto the stack and it takes no word; arm64
// passes the address of a copy in the next word. The functions that take
// one say so where they are probed. internal/gputracebpf's
// calling-convention test compiles a caller of every probed function with
// each architecture's compiler and checks these words against the
// registers and stack slots the assembly uses.
//
// Go functions (Go's ABIInternal): integer arguments and results in RAX,
// RBX, RCX, RDI, RSI, R8, R9, R10, R11 on x86-64 and R0 to R15 on arm64;
// the goroutine's g in R14 and R28 (internal/httpbpf's test reads both
// from the Go compiler's output).
//
// A probe that internal/uprobe placed on a Go function's stack bound
// check (the branch to runtime.morestack) has GO_STACK_CHECK_COOKIE,
// uprobe.GoStackCheck, set in its cookie. Where GO_STACK_GROWS, the
// branch is taken: the function grows its stack and starts over, and the
// probe fires again, so that hit is not the call's.
#define GO_STACK_CHECK_COOKIE (1ULL << 63)
//
// A probe that internal/uprobe placed on a Go function's call of the
// function that copies out what it returns carries in its cookie, in the
// 16 bits from GO_RECEIVER_SHIFT (uprobe.GoReceiverShift), how far past
// the stack pointer the spill slot of the function's first argument is
// (0: not found).
#define GO_RECEIVER_SHIFT 32

#ifndef __XPUSCOPE_ARGS_BPF_H
#define __XPUSCOPE_ARGS_BPF_H

#if defined(__TARGET_ARCH_x86)

// The register argument words past libbpf's PT_REGS_PARM1-5.
#define ARG_REGS 6
#define ARG6(ctx) ((ctx)->r9)

// ARG_STACK is the address of the first argument word passed on the
// stack (the 7th).
#define ARG_STACK(ctx) (PT_REGS_SP(ctx) + 8)

// Go's ABIInternal: the first eight integer words, and g.
#define GO_ARG1(ctx) ((ctx)->rax)
#define GO_ARG2(ctx) ((ctx)->rbx)
#define GO_ARG3(ctx) ((ctx)->rcx)
#define GO_ARG4(ctx) ((ctx)->rdi)
#define GO_ARG5(ctx) ((ctx)->rsi)
#define GO_ARG6(ctx) ((ctx)->r8)
#define GO_ARG7(ctx) ((ctx)->r9)
#define GO_ARG8(ctx) ((ctx)->r10)
#define GO_G(ctx) ((ctx)->r14)

// The stack bound check's JBE is taken when CF or ZF is set.
#define GO_STACK_GROWS(ctx) (((ctx)->eflags & 0x41) != 0)

#elif defined(__TARGET_ARCH_arm64)

#define __ARM64_REG(ctx, n) (((const struct user_pt_regs *)(ctx))->regs[n])

#define ARG_REGS 8
#define ARG6(ctx) __ARM64_REG(ctx, 5)
#define ARG7(ctx) __ARM64_REG(ctx, 6)
#define ARG8(ctx) __ARM64_REG(ctx, 7)

// ARG_STACK is the address of the first argument word passed on the
// stack (the 9th).
#define ARG_STACK(ctx) (PT_REGS_SP(ctx))

#define GO_ARG1(ctx) __ARM64_REG(ctx, 0)
#define GO_ARG2(ctx) __ARM64_REG(ctx, 1)
#define GO_ARG3(ctx) __ARM64_REG(ctx, 2)
#define GO_ARG4(ctx) __ARM64_REG(ctx, 3)
#define GO_ARG5(ctx) __ARM64_REG(ctx, 4)
#define GO_ARG6(ctx) __ARM64_REG(ctx, 5)
#define GO_ARG7(ctx) __ARM64_REG(ctx, 6)
#define GO_ARG8(ctx) __ARM64_REG(ctx, 7)
#define GO_G(ctx) __ARM64_REG(ctx, 28)

// The stack bound check's B.LS is taken when C is clear or Z set.
#define __ARM64_PSTATE(ctx) (((const struct user_pt_regs *)(ctx))->pstate)
#define GO_STACK_GROWS(ctx) ((__ARM64_PSTATE(ctx) & (1ULL << 29)) == 0 || (__ARM64_PSTATE(ctx) & (1ULL << 30)) != 0)

#else
#error "args.bpf.h: build with -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64 (bpf2go -target amd64 or arm64)"
#endif

// args_7_8 reads the 7th and 8th argument words (a launch's shared memory
// and stream, an NCCL call's stream) into a[0] and a[1], zero if
// unreadable. On x86-64 they are on the stack: the one read goes to the
// BPF stack, then to a: with hardened usercopy
// (CONFIG_HARDENED_USERCOPY, on in distribution kernels) a user copy into
// a map value, as a lane's record is, takes the kernel's heap-object
// checks as well, which cost ~50 ns a launch (gputracebpf's
// BenchmarkLaunchOverhead's argread variant has the read alone). On arm64
// they are x6 and x7: no read.
static __always_inline void args_7_8(struct pt_regs *ctx, __u64 *a)
{
#if ARG_REGS >= 8
	a[0] = ARG7(ctx);
	a[1] = ARG8(ctx);
#else
	__u64 st[2];
	if (bpf_probe_read_user(st, sizeof(st), (void *)ARG_STACK(ctx)))
		st[0] = st[1] = 0;
	a[0] = st[0];
	a[1] = st[1];
#endif
}

// args_7_9 reads the 7th to 9th argument words into a[0] to a[2], an
// array on the BPF stack (the user copy goes straight there), zero where
// unreadable: on x86-64 in one read of the stack, on arm64 x6, x7 and one
// read of the stack's first word.
static __always_inline void args_7_9(struct pt_regs *ctx, __u64 *a)
{
#if ARG_REGS >= 8
	if (bpf_probe_read_user(&a[2], sizeof(a[2]), (void *)ARG_STACK(ctx)))
		a[2] = 0;
	a[0] = ARG7(ctx);
	a[1] = ARG8(ctx);
#else
	if (bpf_probe_read_user(a, 3 * sizeof(a[0]), (void *)ARG_STACK(ctx)))
		a[0] = a[1] = a[2] = 0;
#endif
}

#endif /* __XPUSCOPE_ARGS_BPF_H */
