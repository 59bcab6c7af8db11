	.arch armv8-a
	.file	"c.c"
	.text
	.align	2
	.p2align 4,,11
	.global	call_cudaLaunchKernel
	.type	call_cudaLaunchKernel, %function
call_cudaLaunchKernel:
.LFB0:
	.cfi_startproc
	stp	x29, x30, [sp, -48]!
	.cfi_def_cfa_offset 48
	.cfi_offset 29, -48
	.cfi_offset 30, -40
	mov	x3, 769
	mov	x1, 513
	mov	x29, sp
	movk	x3, 0x302, lsl 32
	movk	x1, 0x202, lsl 32
	mov	x7, 1537
	mov	x6, 1281
	mov	x5, 1025
	mov	x4, 771
	mov	x2, 515
	mov	x0, 257
	bl	cudaLaunchKernel
	ldp	x29, x30, [sp], 48
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
.LFE0:
	.size	call_cudaLaunchKernel, .-call_cudaLaunchKernel
	.align	2
	.p2align 4,,11
	.global	call_cuLaunchKernel
	.type	call_cuLaunchKernel, %function
call_cuLaunchKernel:
.LFB1:
	.cfi_startproc
	sub	sp, sp, #48
	.cfi_def_cfa_offset 48
	mov	x0, 2817
	mov	x1, 2561
	mov	x2, 2305
	mov	w7, 2049
	mov	w6, 1793
	stp	x29, x30, [sp, 32]
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	add	x29, sp, 32
	mov	w5, 1537
	mov	w4, 1281
	stp	x2, x1, [sp]
	mov	w3, 1025
	mov	w2, 769
	str	x0, [sp, 16]
	mov	w1, 513
	mov	x0, 257
	bl	cuLaunchKernel
	ldp	x29, x30, [sp, 32]
	add	sp, sp, 48
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
.LFE1:
	.size	call_cuLaunchKernel, .-call_cuLaunchKernel
	.align	2
	.p2align 4,,11
	.global	call_ncclReduce
	.type	call_ncclReduce, %function
call_ncclReduce:
.LFB2:
	.cfi_startproc
	stp	x29, x30, [sp, -16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	mov	x7, 2049
	mov	x6, 1793
	mov	x29, sp
	mov	w5, 1537
	mov	w4, 1281
	mov	w3, 1025
	mov	x2, 769
	mov	x1, 513
	mov	x0, 257
	bl	ncclReduce
	ldp	x29, x30, [sp], 16
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
.LFE2:
	.size	call_ncclReduce, .-call_ncclReduce
	.align	2
	.p2align 4,,11
	.global	call_ncclCommInitRank
	.type	call_ncclCommInitRank, %function
call_ncclCommInitRank:
.LFB3:
	.cfi_startproc
	adrp	x5, .LANCHOR0
	add	x5, x5, :lo12:.LANCHOR0
	stp	x29, x30, [sp, -272]!
	.cfi_def_cfa_offset 272
	.cfi_offset 29, -272
	.cfi_offset 30, -264
	mov	w3, 1025
	mov	w1, 513
	mov	x29, sp
	ldp	q6, q7, [x5]
	add	x4, sp, 144
	ldp	q4, q5, [x5, 32]
	add	x2, sp, 16
	ldp	q2, q3, [x5, 64]
	stp	q6, q7, [x4]
	mov	x0, 257
	stp	q6, q7, [x2]
	ldp	q0, q1, [x5, 96]
	stp	q4, q5, [x4, 32]
	stp	q4, q5, [x2, 32]
	stp	q2, q3, [x4, 64]
	stp	q2, q3, [x2, 64]
	stp	q0, q1, [x4, 96]
	stp	q0, q1, [x2, 96]
	bl	ncclCommInitRank
	ldp	x29, x30, [sp], 272
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
.LFE3:
	.size	call_ncclCommInitRank, .-call_ncclCommInitRank
	.section	.rodata
	.align	3
	.set	.LANCHOR0,. + 0
.LC2:
	.string	"\021\022\023"
	.zero	124
	.ident	"GCC: (Debian 12.2.0-14) 12.2.0"
	.section	.note.GNU-stack,"",@progbits
