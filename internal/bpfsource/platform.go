package bpfsource

import "runtime"

// Platform says, for one architecture, how the eBPF Sources read a
// probed function's arguments, where they place their probes, and what
// they cannot probe: what the agent's -check prints for the architecture
// it runs on. The BPF objects are built for each (bpf2go -target amd64
// and arm64), args.bpf.h says where each convention puts the arguments,
// and internal/uprobe places probes by the rules of each file's
// instruction set.
type Platform struct {
	// GOARCH is the architecture.
	GOARCH string
	// Conventions are the calling conventions the probes read.
	Conventions string
	// Placement is where probes go in a function.
	Placement string
	// Limits are the processes the probes do not serve.
	Limits string
}

// Platforms are the architectures the BPF objects are built for.
var Platforms = map[string]Platform{
	"amd64": {
		GOARCH:      "amd64",
		Conventions: "System V AMD64 (arguments 7 and 8 read off the stack); Go's register ABI (RAX, RBX, RCX; g in R14)",
		Placement:   "past endbr64; a Go function's on its stack check's JBE; its returns on its RETs (single-stepped) or its copy-out CALL",
		Limits:      "32-bit (i386, x32) processes are not supported: the probes and the plaintext capture read x86-64's registers and system call numbers",
	},
	"arm64": {
		GOARCH:      "arm64",
		Conventions: "AAPCS64 (arguments 1 to 8 in x0-x7; an aggregate over 16 bytes by reference); Go's register ABI (R0-R2; g in R28)",
		Placement:   "past a BTI landing pad, never past PACIASP; a Go function's on its stack check's B.LS; its returns on its RETs or its copy-out BL (both emulated)",
		Limits:      "AArch32 processes are not supported: the kernel refuses their uprobes, and the plaintext capture reads arm64's system call numbers",
	},
}

// ThisPlatform is the running architecture's Platform; false where no
// BPF object is built for it.
func ThisPlatform() (Platform, bool) {
	p, ok := Platforms[runtime.GOARCH]
	return p, ok
}
