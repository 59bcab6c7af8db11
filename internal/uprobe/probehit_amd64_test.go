package uprobe

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// probeHitSrc calls one of three functions argv[2] times, once a line on
// its standard input has said the probes are on, and prints the
// nanoseconds a call took. Each function starts with the instruction a
// probe is put on: a PUSH, which the kernel emulates in the probe's trap;
// a MOV, which it executes out of line with the trap flag set, a second
// trap; the third has no probe, the loop's own cost.
const probeHitSrc = `
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
long emulated(long), stepped(long), bare(long);
__asm__(".text\n"
	".globl emulated\n.type emulated,@function\nemulated:\n\tpush %rbp\n\tpop %rbp\n\tmov %rdi, %rax\n\tret\n.size emulated, .-emulated\n"
	".globl stepped\n.type stepped,@function\nstepped:\n\tmov %rdi, %rax\n\tpush %rbp\n\tpop %rbp\n\tret\n.size stepped, .-stepped\n"
	".globl bare\n.type bare,@function\nbare:\n\tpush %rbp\n\tpop %rbp\n\tmov %rdi, %rax\n\tret\n.size bare, .-bare\n");
int main(int argc, char **argv) {
	long (*f)(long) = !strcmp(argv[1], "emulated") ? emulated : !strcmp(argv[1], "stepped") ? stepped : bare;
	long n = atol(argv[2]), s = 0;
	char line[8];
	if (!fgets(line, sizeof line, stdin))
		return 1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		s += f(i);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.1f %ld\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n, s);
	return 0;
}
`

// BenchmarkProbeHit: what one probe hit costs the probed thread on this
// machine, by where the probe sits, with a BPF program that counts the
// hit (an array map's add, as cheap as a program gets): on an instruction
// the kernel emulates (entry-emulated), on one it single-steps
// (entry-stepped), and a return probe on top of an emulated entry
// (return: the entry's trap, the return address taken over, the
// trampoline's way back). Each is the probed loop's time a call less the
// unprobed loop's, in one run. The capture's TLS probes are of these
// kinds, so a capture's floor on a machine is its probe hits a call times
// these (docs/performance.md): the figures differ by an order of
// magnitude between bare metal and virtual machines whose hypervisor
// takes the traps.
func BenchmarkProbeHit(b *testing.B) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(b, "attaching uprobes needs root")
	}
	exe := buildELF(b, probeHitSrc, "-O2")
	ex, err := link.OpenExecutable(exe)
	require.NoError(b, err)
	hits, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	require.NoError(b, err)
	defer hits.Close()
	prog := hitCounter(b, hits, 0, ebpf.AttachNone)
	const calls = 20000
	run := func(fn string, attach func(pid int) (link.Link, error)) float64 {
		cmd := exec.Command(exe, fn, strconv.Itoa(calls))
		in, err := cmd.StdinPipe()
		require.NoError(b, err)
		out, err := cmd.StdoutPipe()
		require.NoError(b, err)
		require.NoError(b, cmd.Start())
		defer func() { _ = cmd.Wait() }()
		if attach != nil {
			l, err := attach(cmd.Process.Pid)
			require.NoError(b, err)
			defer l.Close()
		}
		_, err = in.Write([]byte("go\n"))
		require.NoError(b, err)
		line, err := bufio.NewReader(out).ReadString('\n')
		require.NoError(b, err)
		ns, err := strconv.ParseFloat(strings.Fields(line)[0], 64)
		require.NoError(b, err)
		return ns
	}
	entry := func(fn string) func(int) (link.Link, error) {
		return func(pid int) (link.Link, error) {
			return ex.Uprobe(fn, prog, &link.UprobeOptions{PID: pid})
		}
	}
	ret := func(pid int) (link.Link, error) {
		return ex.Uretprobe("emulated", prog, &link.UprobeOptions{PID: pid})
	}
	var bare, emulated, stepped, returned float64
	for range b.N {
		bare += run("bare", nil)
		emulated += run("emulated", entry("emulated"))
		stepped += run("stepped", entry("stepped"))
		returned += run("emulated", ret)
	}
	var n uint64
	require.NoError(b, hits.Lookup(uint32(0), &n))
	require.Equal(b, uint64(3*calls*b.N), n, "every call hit its probe")
	per := func(ns float64) float64 { return (ns - bare) / float64(b.N) }
	b.ReportMetric(per(emulated), "ns/hit-entry-emulated")
	b.ReportMetric(per(stepped), "ns/hit-entry-stepped")
	b.ReportMetric(per(returned), "ns/hit-return")
	b.ReportMetric(per(stepped)/per(emulated), "stepped/emulated")
	b.ReportMetric(0, "ns/op")
}
