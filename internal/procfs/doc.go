// Package procfs reads the /proc facts xpuscope needs, under a root that
// tests and containerised agents change (/host/proc, a fixture tree).
//
// An FS is a procfs mounted at Root. FS.Proc names one process of it, and
// the methods of Proc read that process's files: Alive, Exe, OpenExe and
// ExecutableName, and Comm. FS itself lists the processes (PIDs) and their
// TCP sockets (TCPSockets).
//
// The parsers are plain functions over a file's bytes (ParseComm,
// ParseNetTCPLine), and bounded: a line or a file too long is a cut,
// never a large allocation.
//
// github.com/prometheus/procfs reads most of these files too. Each reader
// here says why it is kept instead, with the benchmark that measured it
// against prometheus/procfs (procfstest.Versus): it is cheaper on the path
// it serves, or prometheus/procfs reads the file differently.
package procfs
