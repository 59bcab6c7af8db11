package procfs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// MaxCmdline bounds what Cmdline reads of a command line: the kernel lets
// one be megabytes long, and what a caller looks for (a program's name,
// its module, its flags) comes first.
const MaxCmdline = 32 << 10

// maxCmdlineArgs bounds the arguments ParseCmdline returns.
const maxCmdlineArgs = 1024

// Cmdline returns the process's command line, its arguments as
// ParseCmdline splits its cmdline file, read up to MaxCmdline bytes. A
// kernel thread, and a zombie, have none.
func (p Proc) Cmdline() ([]string, error) {
	f, err := os.Open(p.path("cmdline"))
	if err != nil {
		return nil, fmt.Errorf("procfs: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxCmdline))
	if err != nil {
		return nil, fmt.Errorf("procfs: read %s: %w", f.Name(), err)
	}
	return ParseCmdline(b), nil
}

// ParseCmdline splits the contents of /proc/<pid>/cmdline into its
// arguments, each ended by a NUL. A process that rewrote its argument
// area to set its title (Python's setproctitle: "VLLM::EngineCore") may
// leave one argument padded with NULs, or with no NUL at all: the empty
// arguments at the end are dropped, and a last argument without its NUL
// kept. At most 1024 arguments are returned.
func ParseCmdline(b []byte) []string {
	var args []string
	for len(b) > 0 && len(args) < maxCmdlineArgs {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			args = append(args, string(b))
			break
		}
		args = append(args, string(b[:i]))
		b = b[i+1:]
	}
	for len(args) > 0 && args[len(args)-1] == "" {
		args = args[:len(args)-1]
	}
	return args
}

// PPID returns the process's parent, field 4 of its stat file.
func (p Proc) PPID() (int, error) {
	b, err := os.ReadFile(p.path("stat"))
	if err != nil {
		return 0, fmt.Errorf("procfs: %w", err)
	}
	ppid, ok := ParsePPID(b)
	if !ok {
		return 0, fmt.Errorf("procfs: %s: no parent in field 4", p.path("stat"))
	}
	return ppid, nil
}

// ParsePPID reads field 4, the parent's pid, of a /proc/<pid>/stat line.
// The command name (field 2) may hold spaces and parentheses, so the
// fields are counted from the last ')'.
func ParsePPID(b []byte) (int, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.ParseUint(string(f[1]), 10, 31)
	return int(ppid), err == nil
}

// SocketInodes returns the inodes of the sockets the process holds (the
// fd links that read "socket:[inode]"), in the order of its descriptors,
// looking at its first 65536 descriptors (FDs). It needs the privilege to
// read the process's fd directory (ptrace access: root, or the same
// user).
func (p Proc) SocketInodes() ([]uint64, error) {
	var inodes []uint64
	err := p.FDs(func(_ int, target string) bool {
		if ino, ok := socketInode(target); ok {
			inodes = append(inodes, ino)
		}
		return true
	})
	return inodes, err
}

// socketInode reads the inode of an fd link's target "socket:[12345]".
func socketInode(target string) (uint64, bool) {
	s, ok := strings.CutPrefix(target, "socket:[")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, "]")
	if !ok {
		return 0, false
	}
	ino, err := strconv.ParseUint(s, 10, 64)
	return ino, err == nil
}

// NetNS returns the identity of the process's network namespace, the
// target of its ns/net link ("net:[4026531840]"): two processes are in
// the same namespace when their NetNS are equal.
func (p Proc) NetNS() (string, error) {
	target, err := os.Readlink(p.path("ns", "net"))
	if err != nil {
		return "", fmt.Errorf("procfs: %w", err)
	}
	return target, nil
}

// OpenNetNS opens the process's network namespace, for setns(2).
func (p Proc) OpenNetNS() (*os.File, error) {
	f, err := os.Open(p.path("ns", "net"))
	if err != nil {
		return nil, fmt.Errorf("procfs: %w", err)
	}
	return f, nil
}
