// Package procfs reads the /proc facts xpuscope needs, under a root that
// tests and containerised agents change (/host/proc, a fixture tree). It
// is the one package that knows the layout of procfs: every other package
// asks an FS or a Proc, and none joins "<root>/<pid>/<file>" itself.
//
// An FS is a procfs mounted at Root. FS.Proc names one process of it, and
// the methods of Proc read that process's files: Alive, Exe, OpenExe and
// ExecutableName, Comm, Cmdline, PPID, Cwd, Maps and OpenMapped (which
// opens a mapped file from outside the process's mount namespace), its
// files as it names them (Open and OpenFile, resolved in its root or
// working directory with openat2 and never out of them; OpenIn, an entry
// of a directory so opened, no link followed), its descriptors (FDs, and
// OpenFD, which reads a file it holds through its fd link, removed or
// not), Cgroup and Environ, and its sockets: SocketInodes, NetTCP (the
// TCP sockets of its network namespace), NetNS and OpenNetNS. FS itself
// lists the processes (PIDs) and their TCP sockets (TCPSockets), and
// says when the host booted (BootTime; StartedAt turns a start time into
// the wall clock).
// FS.Open holds the root open for the read a cache makes on every lookup,
// a process's start time (Handle.StartTime), which allocates nothing.
//
// The parsers are plain functions over a file's bytes (ParseMaps,
// ParseComm, ParseCmdline, ParsePPID, ParseNetTCPLine), and bounded: a line or a file too long, or
// too many entries, is an error or a cut, never a large allocation.
// Maps.Find turns an address into its Mapping, and Mapping.FileOffset
// turns the address into an offset in the mapped file, which is what a
// symbol table (package elfsym) is searched with.
//
// github.com/prometheus/procfs reads most of these files too. Each reader
// here says why it is kept instead, with the benchmark that measured it
// against prometheus/procfs (procfstest.Versus): it is cheaper on the path
// it serves, or prometheus/procfs reads the file differently.
package procfs
