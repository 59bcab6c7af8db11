// Command ptdecode reads an Intel PT capture that package intelpt wrote
// (trace.pt, sideband.pevent, capture.json) and decodes its packets with
// libipt (Debian's libipt2, loaded at run time): a summary of the packets
// by type and of the sideband records by type, or with -dump every
// packet. It is the optional decode step, apart from the agent, which
// never loads libipt. libipt's own ptdump and ptxed read the same files
// (docs/intelpt.md).
//
//	ptdecode [-dump] [-lib libipt.so.2] <capture directory>...
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/xpuscope/xpuscope/intelpt"
	"github.com/xpuscope/xpuscope/internal/libipt"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ptdecode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dump := fs.Bool("dump", false, "print every packet, with its offset")
	lib := fs.String("lib", libipt.DefaultLibrary, "libipt to load")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: ptdecode [-dump] [-lib libipt.so.2] <capture directory>...")
		return 2
	}
	l, err := libipt.Open(*lib)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	code := 0
	for _, dir := range fs.Args() {
		if err := decode(l, dir, *dump, stdout); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", dir, err)
			code = 1
		}
	}
	return code
}

func decode(l *libipt.Lib, dir string, dump bool, w io.Writer) error {
	m, err := intelpt.ReadManifest(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %s, config %s (%s), %s family %d model %d stepping %d, stop %s, complete %v, %d trace bytes, %d truncated, %d lost\n",
		dir, target(m), m.Config, m.Terms, m.Vendor, m.Family, m.Model, m.Stepping, m.Stop, m.Complete, m.TraceBytes, m.Truncated, m.Lost)
	trace, err := os.ReadFile(filepath.Join(dir, intelpt.TraceFile))
	if err != nil {
		return err
	}
	counts := map[libipt.Type]int{}
	cpu := libipt.CPU{Family: uint16(m.Family), Model: uint8(m.Model), Stepping: uint8(m.Stepping)}
	if m.Vendor != "GenuineIntel" {
		cpu = libipt.CPU{}
	}
	first, derr := l.Decode(trace, cpu, func(off int, p *libipt.Packet) {
		counts[p.Type]++
		if dump {
			fmt.Fprintf(w, "%08x  %s\n", off, describe(p))
		}
	})
	fmt.Fprintf(w, "packets from offset %d: %s\n", max(first, 0), summary(counts))
	if derr != nil && !errors.Is(derr, libipt.ErrEOS) {
		// A capture cut at its byte cap ends inside a packet.
		fmt.Fprintf(w, "decode stopped: %v\n", derr)
	}
	side, err := os.ReadFile(filepath.Join(dir, intelpt.SidebandFile))
	if err != nil {
		return err
	}
	recs, err := sideband(side)
	fmt.Fprintf(w, "sideband: %s\n", recs)
	return err
}

func target(m intelpt.Manifest) string {
	if m.PID > 0 {
		return fmt.Sprintf("pid %d", m.PID)
	}
	return fmt.Sprintf("CPU %d", m.CPU)
}

func describe(p *libipt.Packet) string {
	switch p.Type {
	case libipt.TSC:
		return fmt.Sprintf("tsc %#x", p.TSC())
	case libipt.FUP, libipt.TIP, libipt.TIPPGE, libipt.TIPPGD:
		ipc, ip := p.IP()
		return fmt.Sprintf("%s ipc %d %#x", p.Type, ipc, ip)
	case libipt.TNT8, libipt.TNT64:
		n, bits := p.TNT()
		return fmt.Sprintf("%s %d bits %0*b", p.Type, n, int(n), bits)
	}
	return p.Type.String()
}

func summary(counts map[libipt.Type]int) string {
	types := make([]libipt.Type, 0, len(counts))
	for t := range counts {
		types = append(types, t)
	}
	slices.Sort(types)
	parts := make([]string, 0, len(types))
	for _, t := range types {
		parts = append(parts, fmt.Sprintf("%s %d", t, counts[t]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// recordNames are the perf_event record types a capture's sideband
// holds.
var recordNames = map[uint32]string{1: "mmap", 2: "lost", 3: "comm", 4: "exit", 7: "fork", 10: "mmap2", 11: "aux", 12: "itrace_start", 14: "switch", 15: "switch_cpu_wide"}

// sideband counts the records of a sideband file by type.
func sideband(b []byte) (string, error) {
	counts := map[string]int{}
	for len(b) > 0 {
		if len(b) < 8 {
			return summaryNames(counts), fmt.Errorf("a record header cut short")
		}
		typ := binary.NativeEndian.Uint32(b)
		n := int(binary.NativeEndian.Uint16(b[6:]))
		if n < 8 || n > len(b) {
			return summaryNames(counts), fmt.Errorf("a record of %d bytes with %d left", n, len(b))
		}
		name, ok := recordNames[typ]
		if !ok {
			name = fmt.Sprintf("type%d", typ)
		}
		counts[name]++
		b = b[n:]
	}
	return summaryNames(counts), nil
}

func summaryNames(counts map[string]int) string {
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, counts[n]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
