// Package httpbpf holds the eBPF programs that capture the plaintext bytes
// of HTTP connections for the genai capture (capture.bpf.c, compiled by
// bpf2go into the committed capture_x86_bpfel.o): uprobes on OpenSSL's
// SSL_read and SSL_write (by call) or SSL_do_handshake (by connection),
// on Go's crypto/tls, and tracepoints on the socket syscalls.
// It also decodes the records they submit, without allocating.
package httpbpf

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"

	"github.com/xpuscope/xpuscope/internal/bpfsource"
)

// Source says where a record's bytes were seen.
type Source uint8

// Sources (enum source in capture.bpf.c).
const (
	SourceTLS    = Source(captureSourceSOURCE_TLS)    // OpenSSL; Conn is the SSL pointer
	SourceSocket = Source(captureSourceSOURCE_SOCKET) // socket syscalls; Conn is the fd
	SourceGoTLS  = Source(captureSourceSOURCE_GOTLS)  // Go's crypto/tls; Conn is the *tls.Conn
	// SourceTLSWire: a TLS connection (Go's crypto/tls, OpenSSL) as its
	// socket carries it, ciphertext from its ClientHello on, to decrypt
	// with the secrets of its KindKey records (Go) or found in a
	// KindState record (OpenSSL); Conn is the fd.
	SourceTLSWire = Source(captureSourceSOURCE_TLS_WIRE)
)

func (s Source) String() string {
	switch s {
	case SourceTLS:
		return "tls"
	case SourceSocket:
		return "socket"
	case SourceGoTLS:
		return "gotls"
	case SourceTLSWire:
		return "tls-wire"
	}
	return fmt.Sprintf("source(%d)", uint8(s))
}

// Dir is the direction of a record's bytes, from the traced process's view.
type Dir uint8

// Directions (enum direction).
const (
	Write = Dir(captureDirectionDIR_WRITE) // the process sent them
	Read  = Dir(captureDirectionDIR_READ)  // the process received them
)

// LastCalls returns, of a close or end record, the numbers of the last
// write and the last read captured on its connection.
func (r *Record) LastCalls() (writes, reads uint32) { return r.Seq, r.Total }

// Kind says what a record is.
type Kind uint8

// Record kinds (enum record_kind).
const (
	KindData  = Kind(captureRecordKindRECORD_DATA)
	KindClose = Kind(captureRecordKindRECORD_CLOSE)
	// KindEOF: a plaintext connection's read returned 0, its peer having
	// closed its end (not seen over TLS). It carries the last calls'
	// numbers, as a close does.
	KindEOF = Kind(captureRecordKindRECORD_EOF)
	// KindSocket: the socket a connection is over, told once, before
	// the connection's bytes that follow it (LoadOptions.Sockets). Its
	// Data is the socket's inode number (Inode).
	KindSocket = Kind(captureRecordKindRECORD_SOCKET)
	// KindKey: a traffic secret a Go program logged as its handshake
	// derived it (Key), of the connection its client random names; Conn
	// and Gen are 0.
	KindKey = Kind(captureRecordKindRECORD_KEY)
	// KindState: an OpenSSL connection's object (its SSL), StateBytes of
	// it (or half that, where no more was readable), copied as its
	// handshake ended, where OpenSSL is read by connection
	// (TLSConnProbes); Source is SourceTLS, Conn the SSL pointer, Gen 0.
	// It holds the connection's secrets, at offsets the libssl build
	// chose: see genai's capture.
	KindState = Kind(captureRecordKindRECORD_STATE)
	// KindSession: the session of an OpenSSL connection (SessionBytes
	// of it), which its object points to, sent after its KindState
	// record for each offset set by SetSessionOffsets; Seq is the offset
	// at which the object holds the pointer. It holds a TLS 1.2
	// connection's master secret.
	KindSession = Kind(captureRecordKindRECORD_SESSION)
)

// StateBytes is how much of an OpenSSL connection's object a KindState
// record copies; SessionBytes how much of its session a KindSession one.
const (
	StateBytes   = Piece
	SessionBytes = 256
)

// Key labels (enum key_label): what a key record's secret is, by the
// NSS key log's label Go logs it under.
const (
	KeyClientTraffic = uint8(captureKeyLabelKEY_CLIENT_TRAFFIC) // CLIENT_TRAFFIC_SECRET_0
	KeyServerTraffic = uint8(captureKeyLabelKEY_SERVER_TRAFFIC) // SERVER_TRAFFIC_SECRET_0
	KeyTLS12         = uint8(captureKeyLabelKEY_TLS12)          // CLIENT_RANDOM: TLS 1.2's master secret
)

// Key returns, of a key record, its secret's label (KeyClientTraffic,
// KeyServerTraffic or KeyTLS12), the connection's client random and the
// secret, which points into the record's data; ok is false for another
// record.
func (r *Record) Key() (label uint8, random, secret []byte, ok bool) {
	if r.Kind != KindKey || len(r.Data) != keyData {
		return 0, nil, nil, false
	}
	n := int(r.Data[1])
	return r.Data[0], r.Data[8:40], r.Data[40 : 40+n], true
}

// Inode returns, of a socket record, the inode number of the socket its
// connection is over (socket:[ino] in /proc/<pid>/fd); 0 of another.
func (r *Record) Inode() uint64 {
	if r.Kind != KindSocket || len(r.Data) != socketData {
		return 0
	}
	return binary.LittleEndian.Uint64(r.Data)
}

// socketData is the size of a socket record's data, the inode number;
// keyData a key record's (struct key_record past its header).
const (
	socketData = 8
	keyData    = 88
)

// Counters of the BPF side (enum counter).
const (
	CounterDrops     = int(captureCounterCOUNTER_DROPS)      // records the ring buffer had no room for
	CounterShort     = int(captureCounterCOUNTER_SHORT)      // calls whose bytes were not all captured
	CounterReadFault = int(captureCounterCOUNTER_READ_FAULT) // user memory that could not be read
	// CounterNotSocket: Go TLS handshakes, in a program probed by
	// connection (GoTLSConnProbes), over no *net.TCPConn of the
	// process's (a wrapper of one, QUIC): those connections are not read.
	CounterNotSocket = int(captureCounterCOUNTER_NOT_SOCKET)
	NumCounters      = int(captureCounterCOUNTER_MAX)
)

// Piece is the most data one record carries; MaxCapture the most of one
// call's bytes that are captured.
const (
	Piece      = 8192
	MaxCapture = 8 * Piece
	HeaderSize = 48
)

// Record is one decoded record.
type Record struct {
	TS     uint64 // CLOCK_MONOTONIC ns of the call's return
	Conn   uint64 // SSL pointer or fd
	PID    uint32
	TID    uint32
	Kind   Kind
	Source Source
	Dir    Dir
	// Total is how many bytes the call moved; Data holds those from
	// Offset on. Data points into the decoded buffer: copy it to keep it.
	// A close record's Total is the last read's Seq (LastCalls).
	Total  uint32
	Offset uint32
	// Seq numbers the calls captured on the connection in the record's
	// direction, from 1: a record that skips a number follows a call
	// that was lost. The directions are numbered apart because a
	// connection's reads and writes may be made on two threads at once,
	// whose records reach the ring in either order; one direction's
	// calls are made one at a time. A close record's Seq is the last
	// write's (LastCalls).
	Seq uint32
	// Gen numbers the connection on the host, from 1 (0 only in records
	// of objects older than the number): a record with the Conn of an
	// earlier connection but another Gen is of a new one, which took the
	// freed SSL object's memory or the closed fd's number.
	Gen  uint32
	Data []byte
}

// ErrMalformed is returned by Decode for a record it cannot read.
var ErrMalformed = errors.New("httpbpf: malformed record")

// Decode reads a record from b into r.
func Decode(b []byte, r *Record) error {
	if len(b) < HeaderSize {
		return fmt.Errorf("%w: %d bytes, want at least %d", ErrMalformed, len(b), HeaderSize)
	}
	le := binary.LittleEndian
	r.TS = le.Uint64(b[0:])
	r.Conn = le.Uint64(b[8:])
	r.PID = le.Uint32(b[16:])
	r.TID = le.Uint32(b[20:])
	r.Kind = Kind(b[24])
	r.Source = Source(b[25])
	r.Dir = Dir(b[26])
	n := le.Uint32(b[28:])
	r.Total = le.Uint32(b[32:])
	r.Offset = le.Uint32(b[36:])
	r.Seq = le.Uint32(b[40:])
	r.Gen = le.Uint32(b[44:])
	switch {
	case r.Kind < KindData || r.Kind > KindSession:
		return fmt.Errorf("%w: kind %d", ErrMalformed, r.Kind)
	case r.Source != SourceTLS && r.Source != SourceSocket && r.Source != SourceGoTLS && r.Source != SourceTLSWire:
		return fmt.Errorf("%w: source %d", ErrMalformed, r.Source)
	case r.Dir != Write && r.Dir != Read:
		return fmt.Errorf("%w: direction %d", ErrMalformed, r.Dir)
	case uint64(n) > uint64(len(b)-HeaderSize) || n > Piece:
		return fmt.Errorf("%w: %d data bytes in a record of %d", ErrMalformed, n, len(b))
	case uint64(r.Offset)+uint64(n) > uint64(r.Total):
		return fmt.Errorf("%w: bytes %d+%d of a call that moved %d", ErrMalformed, r.Offset, n, r.Total)
	case r.Kind == KindSocket && n != socketData:
		return fmt.Errorf("%w: a socket record with %d data bytes, want %d", ErrMalformed, n, socketData)
	case r.Kind == KindSession && n != SessionBytes:
		return fmt.Errorf("%w: a session record with %d data bytes, want %d", ErrMalformed, n, SessionBytes)
	case r.Kind == KindState && n != StateBytes && n != StateBytes/2:
		return fmt.Errorf("%w: a state record with %d data bytes, want %d or %d", ErrMalformed, n, StateBytes, StateBytes/2)
	case r.Kind == KindKey && n != keyData:
		return fmt.Errorf("%w: a key record with %d data bytes, want %d", ErrMalformed, n, keyData)
	case r.Kind == KindKey && (b[HeaderSize] < KeyClientTraffic || b[HeaderSize] > KeyTLS12 || b[HeaderSize+1] > 48):
		return fmt.Errorf("%w: a key record of label %d with a secret of %d bytes", ErrMalformed, b[HeaderSize], b[HeaderSize+1])
	}
	r.Data = b[HeaderSize : HeaderSize+int(n)]
	return nil
}

// TLSProbe is a uprobe on an OpenSSL function: the program named Entry is
// attached at the symbol, the one named Return (when not "") at its
// return, with Cookie. CalledFrom is uprobe.Probe's.
type TLSProbe struct {
	Symbol     string
	CalledFrom []string
	Cookie     uint64
	Entry      string
	Return     string
	// AtReturns: Entry goes on each of the function's RET instructions,
	// not on its start (a Go function's return, see GoTLSProbes); or,
	// where the function makes one call of AtCallOf (in code from
	// CallFile), on that call, with CallCookie (uprobe.Probe's fields of
	// those names).
	AtReturns  bool
	AtCallOf   string
	CallCookie uint64
	CallFile   string
	// OnlyForReturns: an entry probe whose program only keeps state for
	// the probe on the function's returns (uprobe.Probe's field).
	OnlyForReturns bool
}

// GoTLSAnchor is the symbol that makes an executable a Go program whose
// crypto/tls connections are probed.
const GoTLSAnchor = "crypto/tls.(*Conn).Read"

// GoTLSProbes are the crypto/tls methods probed in Go programs, found by
// their symbols or, in a stripped binary, in its pclntab. What Read
// returns is read at its one call of runtime.memmove, which copies it out
// (an emulated CALL: one trap), or, in a build without that one call, at
// its RET instructions (each single-stepped: two traps). At the call,
// the receiver is read from its spill slot and Read's entry probe is left
// off: one trap a Read. Never with a
// uretprobe: that rewrites the return address on the goroutine's stack,
// which Go copies when the stack grows and walks in tracebacks, and a
// moved or unknown return address crashes the program.
// One program takes them all, told apart by the cookie, so that with
// uprobe_multi a Go binary is one link: a link's attach and detach each
// wait for a kernel grace period (~80 ms here), and a node runs many Go
// programs.
var GoTLSProbes = []TLSProbe{
	{Symbol: "crypto/tls.(*Conn).Write", Entry: captureProgGoTls, Cookie: uint64(captureGoTlsApiGO_TLS_WRITE)},
	{Symbol: "crypto/tls.(*Conn).Read", Entry: captureProgGoTls, Cookie: uint64(captureGoTlsApiGO_TLS_READ), OnlyForReturns: true},
	{Symbol: "crypto/tls.(*Conn).Read", Entry: captureProgGoTls, Cookie: uint64(captureGoTlsApiGO_TLS_READ_RETURN), AtReturns: true,
		AtCallOf: "runtime.memmove", CallCookie: uint64(captureGoTlsApiGO_TLS_READ_COPY), CallFile: "bytes/reader.go"},
	{Symbol: "crypto/tls.(*Conn).Close", Entry: captureProgGoTls, Cookie: uint64(captureGoTlsApiGO_TLS_CLOSE)},
}

// GoTLSKeyLog is where Go's crypto/tls logs a connection's secrets as
// its handshake derives them: (*Config).writeKeyLog, which every
// handshake calls, whether or not a KeyLogWriter is set (it returns at
// once where none is).
const GoTLSKeyLog = "crypto/tls.(*Config).writeKeyLog"

// GoTLSConnProbes take a Go program's TLS connections once each, in
// place of GoTLSProbes' every call, where every process of the program is
// seen from its exec (uprobe.Target.FromExec) and it defines
// GoTLSKeyLog: at a handshake's start, the connection's socket is marked
// and its bytes captured from there by the system-call programs
// (SourceTLSWire), and the traffic secrets are read as they are logged
// (KindKey), for user space to decrypt the records with. A connection
// opened before the capture began is not seen this way: a program found
// running then keeps GoTLSProbes. A client-only program lacks
// serverHandshake (the linker drops it), a server-only one may lack
// clientHandshake: each is probed where it is.
var GoTLSConnProbes = []TLSProbe{
	{Symbol: "crypto/tls.(*Conn).clientHandshake", Entry: captureProgGoTls, Cookie: uint64(captureGoTlsApiGO_TLS_HANDSHAKE)},
	{Symbol: "crypto/tls.(*Conn).serverHandshake", Entry: captureProgGoTls, Cookie: uint64(captureGoTlsApiGO_TLS_HANDSHAKE)},
	{Symbol: GoTLSKeyLog, Entry: captureProgGoTls, Cookie: uint64(captureGoTlsApiGO_TLS_KEYLOG)},
}

// TLSHandshake is the OpenSSL function whose calls end a handshake
// (SSL_connect and SSL_accept call it too): a file that defines it can be
// read by connection (TLSConnProbes).
const TLSHandshake = "SSL_do_handshake"

// TLSConnProbes take an OpenSSL program's connections once each, in
// place of TLSProbes' every call, where every process of the file is
// seen from its exec or its load of the file (uprobe.Target.FromExec):
// SSL_do_handshake's entry has the system-call programs look at the
// process's new TCP sockets for a while, and capture the one whose first
// bytes are a TLS handshake record, as ciphertext (SourceTLSWire),
// whether OpenSSL or the program (over memory BIOs) moves them; its
// return, where the handshake is done, copies the connection's object
// (KindState), in which user space finds the traffic secrets. A
// handshake OpenSSL makes inside SSL_read or SSL_write, where the program
// never calls SSL_do_handshake (nor SSL_connect or SSL_accept), is not
// seen, and its connection not read.
var TLSConnProbes = []TLSProbe{
	{Symbol: TLSHandshake, Entry: captureProgTlsHandshake, Return: captureProgTlsHandshakeReturn},
}

// TLSAnchor is the symbol that makes a file an OpenSSL to probe.
const TLSAnchor = "SSL_write"

// TLSProbes are the OpenSSL functions probed. OpenSSL 1.1.1 and 3 route
// SSL_write and SSL_write_ex through ssl_write_internal(ssl, buf, num,
// *written), and the reads through ssl_read_internal, which take the _ex
// variants' arguments. The internal functions start with pushes, which the
// kernel emulates at a probe, where the exported ones start with a stack
// adjustment, which it single-steps: probing the internal ones, where they
// are found, costs a tenth as much on a VM (see internal/uprobe). The
// exported four are probed where they are not.
var TLSProbes = []TLSProbe{
	{Symbol: "ssl_write_internal", CalledFrom: []string{"SSL_write", "SSL_write_ex"},
		Cookie: uint64(captureTlsApiTLS_SSL_WRITE_EX), Entry: tlsEnter, Return: tlsReturn},
	{Symbol: "ssl_read_internal", CalledFrom: []string{"SSL_read", "SSL_read_ex"},
		Cookie: uint64(captureTlsApiTLS_SSL_READ_EX), Entry: tlsEnter, Return: tlsReturn},
	{Symbol: "SSL_write", Cookie: uint64(captureTlsApiTLS_SSL_WRITE), Entry: tlsEnter, Return: tlsReturn},
	{Symbol: "SSL_write_ex", Cookie: uint64(captureTlsApiTLS_SSL_WRITE_EX), Entry: tlsEnter, Return: tlsReturn},
	{Symbol: "SSL_read", Cookie: uint64(captureTlsApiTLS_SSL_READ), Entry: tlsEnter, Return: tlsReturn},
	{Symbol: "SSL_read_ex", Cookie: uint64(captureTlsApiTLS_SSL_READ_EX), Entry: tlsEnter, Return: tlsReturn},
	{Symbol: "SSL_free", Entry: captureProgTlsFree},
}

const (
	tlsEnter  = captureProgTlsEnter
	tlsReturn = captureProgTlsReturn
)

// The programs of the plaintext capture. SockState is attached to the
// BTF tracepoint inet_sock_set_state. The system-call programs come in
// two forms: SyscallEnter, SyscallClose and SyscallExit for the
// tracepoints of DataSyscalls and close, which run at those calls only,
// where tracefs names them; else SysEnter and SysExit, for the BTF raw
// tracepoints of their names, which run at every system call. With
// LoadOptions.Sockets, the enter programs also find OpenSSL connections'
// sockets, and ThreadExit, for the BTF tracepoint sched_process_exit,
// forgets a thread that exits inside an OpenSSL call still waiting for
// its socket.
const (
	SockState    = captureProgSockState    // inet_sock_set_state: opens the gate
	SyscallEnter = captureProgSyscallEnter // syscalls:sys_enter_<data syscall>: the buffers
	SyscallClose = captureProgSyscallClose // syscalls:sys_enter_close: a connection's end
	SyscallExit  = captureProgSyscallExit  // syscalls:sys_exit_<data syscall>: their bytes
	SysEnter     = captureProgSysEnter     // sys_enter: SyscallEnter's and SyscallClose's work
	SysExit      = captureProgSysExit      // sys_exit: SyscallExit's
	ThreadExit   = captureProgThreadExit   // sched_process_exit: a thread's wait for a socket ends
)

// DataSyscalls are the system calls whose bytes the plaintext capture
// reads, as tracefs names them.
var DataSyscalls = []string{"read", "write", "readv", "writev", "sendto", "recvfrom", "sendmsg", "recvmsg"}

// LoadOptions tune the BPF side.
type LoadOptions struct {
	// RingBytes is the ring buffer's size, a power of two multiple of the
	// page size; 0 keeps the object's (8 MiB).
	RingBytes uint32
	// WakeupBytes wakes the reader once this much is unread; 0 keeps the
	// object's (1 MiB).
	WakeupBytes uint64
	// UprobeMulti loads the uprobe programs for uprobe_multi links.
	UprobeMulti bool
	// SelfPID is the capturing process, whose traffic is not captured,
	// over Go's crypto/tls or plaintext (the agent's own exports and
	// endpoints); 0: none.
	SelfPID uint32
	// Plaintext loads the plaintext capture's programs too (SockState
	// and both forms of the system-call programs); the TLS probes'
	// (OpenSSL's and Go's) are always loaded.
	Plaintext bool
	// Sockets has the programs tell the socket of each connection that
	// speaks HTTP, once (a KindSocket record): a Go crypto/tls
	// connection's over a *net.TCPConn, read through the *tls.Conn at
	// its first such call; with Plaintext, a plaintext connection's at
	// its first call, and an OpenSSL connection's at a data syscall on a
	// TCP socket that its thread makes inside an SSL_read or SSL_write of
	// it, which only the system-call programs see (ThreadExit is then
	// loaded too).
	Sockets bool
}

// goTypeHashes are the hashes the Go compiler gives the type whose
// linker name is name, which its type descriptor keeps and an itab
// copies: the first four bytes, little-endian, of name's SHA-256 with
// the first byte's bits flipped (cmd/internal/hash.Sum32, the toolchains
// of today), and of its bitwise NOT (cmd/internal/notsha256, which
// earlier ones hashed with).
func goTypeHashes(name string) [2]uint32 {
	sum := sha256.Sum256([]byte(name))
	h := binary.LittleEndian.Uint32(sum[:4])
	return [2]uint32{h ^ 0xff, ^h}
}

// Objects are the loaded programs and maps.
type Objects struct {
	captureMaps
	captureVariables
	bpfsource.Programs // by name
}

// Load loads the maps and the programs o selects into the kernel. Errors
// are cilium/ebpf's: bpfsource.Classify sorts them.
func Load(o LoadOptions) (*Objects, error) {
	spec, err := loadCapture()
	if err != nil {
		return nil, fmt.Errorf("httpbpf: parse embedded object: %w", err)
	}
	tls := []string{tlsEnter, tlsReturn, captureProgTlsFree, captureProgGoTls, captureProgTlsHandshake, captureProgTlsHandshakeReturn}
	lo := bpfsource.LoadOptions{Ring: captureMapRecords, RingBytes: o.RingBytes, WakeupBytes: o.WakeupBytes, Programs: tls}
	if o.UprobeMulti {
		lo.UprobeMulti = tls
	}
	var find captureFindSocket
	if o.Plaintext {
		lo.Programs = append(slices.Clip(tls), SockState, SyscallEnter, SyscallClose, SyscallExit, SysEnter, SysExit)
	}
	if o.Sockets {
		find = captureFindSocketFIND_GO
		if o.Plaintext {
			find |= captureFindSocketFIND_OPENSSL | captureFindSocketFIND_PLAINTEXT
			lo.Programs = append(lo.Programs, ThreadExit)
		}
	}
	for name, v := range map[string]any{"self_pid": o.SelfPID, "find_sockets": uint32(find),
		"go_tcp_conn_hash": goTypeHashes("*net.TCPConn")} {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("httpbpf: set %s: %w", name, err)
		}
	}
	objs := &Objects{}
	objs.Programs, err = bpfsource.Load(spec, lo, &objs.captureMaps, &objs.captureVariables)
	if err != nil {
		return nil, err
	}
	return objs, nil
}

// Close frees the programs and maps.
func (o *Objects) Close() error {
	return errors.Join(o.Programs.Close(), o.captureMaps.Close())
}

// WatchPorts sets the TCP ports whose plaintext connections are captured
// (at either end), replacing none: ports are only added.
func (o *Objects) WatchPorts(ports []uint16) error {
	for _, p := range ports {
		if err := o.Ports.Put(p, uint8(1)); err != nil {
			return fmt.Errorf("httpbpf: watch port %d: %w", p, err)
		}
	}
	return nil
}

// Gate is the state of the plaintext gate: the syscall programs look at
// a data syscall only while a TCP socket with a watched port may exist.
type Gate struct {
	// Open counts the sockets with a watched port that the
	// inet_sock_set_state program saw leave TCP_CLOSE and not return.
	Open uint64
	// Preexisting is what SetPreexisting set.
	Preexisting bool
	// Overflow says the program ran out of room to track sockets: the
	// gate is open for good.
	Overflow bool
}

// IsOpen says whether the syscall programs capture.
func (g Gate) IsOpen() bool { return g.Open > 0 || g.Preexisting || g.Overflow }

// SetPreexisting tells the syscall programs whether sockets with a
// watched port that predate the load may be open. The
// inet_sock_set_state program only sees those created after it attached.
func (o *Objects) SetPreexisting(open bool) error {
	var v uint32
	if open {
		v = 1
	}
	if err := o.captureVariables.Preexisting.Set(v); err != nil {
		return fmt.Errorf("httpbpf: set preexisting: %w", err)
	}
	return nil
}

// Gate reads the plaintext gate.
func (o *Objects) Gate() (Gate, error) {
	var (
		g             Gate
		pre, overflow uint32
	)
	for _, v := range []struct {
		v   *ebpf.Variable
		out any
	}{{o.captureVariables.OpenWatched, &g.Open}, {o.captureVariables.Preexisting, &pre}, {o.captureVariables.GateOverflow, &overflow}} {
		if err := v.v.Get(v.out); err != nil {
			return g, fmt.Errorf("httpbpf: read %s: %w", v.v, err)
		}
	}
	g.Preexisting, g.Overflow = pre != 0, overflow != 0
	return g, nil
}

// Mute stops the capture of the connection numbered gen (Record.Gen),
// which user space has no use for, from its next call on; its end is
// still told (a KindClose record). A connection that has ended already,
// whose SSL pointer or fd another may have taken, is not touched.
func (o *Objects) Mute(gen uint32) error {
	return o.captureMaps.Mute.Put(gen, uint8(1))
}

// SetSessionOffsets sets where, in an OpenSSL connection's object, the
// programs find the pointer to its session, whose bytes they send with
// the object's (KindSession): up to two offsets, 8-aligned, within
// StateBytes (the libssl builds of a node may differ); 0 for none.
func (o *Objects) SetSessionOffsets(offsets [2]uint32) error {
	for _, off := range offsets {
		if off%8 != 0 || off+8 > StateBytes {
			return fmt.Errorf("httpbpf: session pointer offset %d: want a multiple of 8 below %d", off, StateBytes-8)
		}
	}
	if err := o.captureVariables.SessionOffsets.Set(offsets); err != nil {
		return fmt.Errorf("httpbpf: set session offsets: %w", err)
	}
	return nil
}

// Counters sums the BPF counters over CPUs.
func (o *Objects) Counters() ([NumCounters]uint64, error) {
	var out [NumCounters]uint64
	err := bpfsource.SumPerCPU(o.captureMaps.Counters, out[:])
	return out, err
}
