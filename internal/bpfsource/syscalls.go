package bpfsource

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Syscalls is a tracepoint program and the system calls whose
// tracepoints it goes on: at their entry (syscalls:sys_enter_<call>), or
// with Exit at their return. Unlike the raw sys_enter and sys_exit, which
// run a program at every system call of every process, these run it at
// the calls named only; but the kernel names them in tracefs alone, which
// may not be mounted.
type Syscalls struct {
	Program *ebpf.Program
	Exit    bool
	Calls   []string
}

// AttachSyscalls attaches each of ss in turn. On error none is left
// attached, and the error names the call.
func AttachSyscalls(ss ...Syscalls) ([]link.Link, error) {
	var links []link.Link
	for _, s := range ss {
		at := "enter"
		if s.Exit {
			at = "exit"
		}
		for _, call := range s.Calls {
			l, err := link.Tracepoint("syscalls", "sys_"+at+"_"+call, s.Program, nil)
			if err != nil {
				for _, l := range links {
					l.Close()
				}
				return nil, fmt.Errorf("attach tracepoint syscalls:sys_%s_%s: %w", at, call, err)
			}
			links = append(links, l)
		}
	}
	return links, nil
}
