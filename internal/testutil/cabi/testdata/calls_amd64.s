	.file	"c.c"
	.text
	.p2align 4
	.globl	call_cudaLaunchKernel
	.type	call_cudaLaunchKernel, @function
call_cudaLaunchKernel:
.LFB0:
	.cfi_startproc
	subq	$40, %rsp
	.cfi_def_cfa_offset 48
	movl	$515, %edx
	movl	$257, %edi
	movl	$1025, %r9d
	pushq	$1537
	.cfi_def_cfa_offset 56
	movl	$771, %r8d
	movabsq	$3307124818689, %rcx
	movabsq	$2207613190657, %rsi
	pushq	$1281
	.cfi_def_cfa_offset 64
	call	cudaLaunchKernel@PLT
	addq	$56, %rsp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
.LFE0:
	.size	call_cudaLaunchKernel, .-call_cudaLaunchKernel
	.p2align 4
	.globl	call_cuLaunchKernel
	.type	call_cuLaunchKernel, @function
call_cuLaunchKernel:
.LFB1:
	.cfi_startproc
	subq	$16, %rsp
	.cfi_def_cfa_offset 24
	movl	$1537, %r9d
	movl	$1281, %r8d
	movl	$1025, %ecx
	pushq	$2817
	.cfi_def_cfa_offset 32
	movl	$769, %edx
	movl	$513, %esi
	movl	$257, %edi
	pushq	$2561
	.cfi_def_cfa_offset 40
	pushq	$2305
	.cfi_def_cfa_offset 48
	pushq	$2049
	.cfi_def_cfa_offset 56
	pushq	$1793
	.cfi_def_cfa_offset 64
	call	cuLaunchKernel@PLT
	addq	$56, %rsp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
.LFE1:
	.size	call_cuLaunchKernel, .-call_cuLaunchKernel
	.p2align 4
	.globl	call_ncclReduce
	.type	call_ncclReduce, @function
call_ncclReduce:
.LFB2:
	.cfi_startproc
	subq	$8, %rsp
	.cfi_def_cfa_offset 16
	movl	$1537, %r9d
	movl	$1281, %r8d
	movl	$1025, %ecx
	pushq	$2049
	.cfi_def_cfa_offset 24
	movl	$769, %edx
	movl	$513, %esi
	movl	$257, %edi
	pushq	$1793
	.cfi_def_cfa_offset 32
	call	ncclReduce@PLT
	addq	$24, %rsp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
.LFE2:
	.size	call_ncclReduce, .-call_ncclReduce
	.p2align 4
	.globl	call_ncclCommInitRank
	.type	call_ncclCommInitRank, @function
call_ncclCommInitRank:
.LFB3:
	.cfi_startproc
	subq	$264, %rsp
	.cfi_def_cfa_offset 272
	pxor	%xmm0, %xmm0
	movl	$1025, %edx
	movl	$513, %esi
	movl	$257, %edi
	movq	$1249809, (%rsp)
	movq	$0, 8(%rsp)
	movups	%xmm0, 16(%rsp)
	movups	%xmm0, 32(%rsp)
	movups	%xmm0, 48(%rsp)
	movups	%xmm0, 64(%rsp)
	movups	%xmm0, 80(%rsp)
	movups	%xmm0, 96(%rsp)
	movups	%xmm0, 112(%rsp)
	call	ncclCommInitRank@PLT
	addq	$264, %rsp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
.LFE3:
	.size	call_ncclCommInitRank, .-call_ncclCommInitRank
	.ident	"GCC: (Debian 12.2.0-14+deb12u1) 12.2.0"
	.section	.note.GNU-stack,"",@progbits
