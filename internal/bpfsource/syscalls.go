package bpfsource

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// AttachSyscalls attaches prog, a tracepoint program, to the tracepoint
// of each system call in calls: at its entry (syscalls:sys_enter_<call>),
// or with exit at its return. Unlike the raw sys_enter and sys_exit,
// which run a program at every system call of every process, these run it
// at the calls named only; but the kernel names them in tracefs alone,
// which may not be mounted. On error none is left attached, and the error
// names the call.
func AttachSyscalls(prog *ebpf.Program, exit bool, calls ...string) ([]link.Link, error) {
	at := "enter"
	if exit {
		at = "exit"
	}
	links := make([]link.Link, 0, len(calls))
	for _, call := range calls {
		l, err := link.Tracepoint("syscalls", "sys_"+at+"_"+call, prog, nil)
		if err != nil {
			for _, l := range links {
				l.Close()
			}
			return nil, fmt.Errorf("attach tracepoint syscalls:sys_%s_%s: %w", at, call, err)
		}
		links = append(links, l)
	}
	return links, nil
}
