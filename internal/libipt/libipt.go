// Package libipt binds the packet encoder and decoder of libipt, Intel's
// Intel PT library (Debian's libipt2), through purego: no cgo, no
// headers. It serves the decode step that reads an intelpt capture
// (internal/cmd/ptdecode) and the tests that make a synthetic trace; the
// agent never loads it.
//
// The layouts are libipt 2.0's intel-pt.h for x86-64: struct pt_config's
// first fields (size, begin, end, the unknown-packet callback and its
// context, struct pt_cpu), with size telling the library how much of the
// struct the caller knows (pt_config_from_user zeroes the rest), and
// struct pt_packet (enum pt_packet_type, uint8_t size, a 16-byte union at
// offset 8), 24 bytes.
package libipt

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/xpuscope/xpuscope/internal/dynlib"
)

// DefaultLibrary is the soname Debian's libipt2 installs.
const DefaultLibrary = "libipt.so.2"

// Type is a packet type, libipt's enum pt_packet_type.
type Type uint32

// The packet types, in enum pt_packet_type's order.
const (
	Invalid Type = iota
	Unknown
	Pad
	PSB
	PSBEnd
	FUP
	TIP
	TIPPGE
	TIPPGD
	TNT8
	TNT64
	Mode
	PIP
	VMCS
	CBR
	TSC
	TMA
	MTC
	CYC
	Stop
	OVF
	MNT
	ExStop
	MWait
	PwrE
	PwrX
	PTW
)

var typeNames = [...]string{"invalid", "unknown", "pad", "psb", "psbend", "fup", "tip", "tip.pge", "tip.pgd",
	"tnt.8", "tnt.64", "mode", "pip", "vmcs", "cbr", "tsc", "tma", "mtc", "cyc", "stop", "ovf", "mnt",
	"exstop", "mwait", "pwre", "pwrx", "ptw"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// IPC is an IP packet's compression, enum pt_ip_compression.
type IPC uint32

// IP compressions.
const (
	IPCSuppressed IPC = 0
	IPCUpdate16   IPC = 1
	IPCUpdate32   IPC = 2
	IPCSext48     IPC = 3
	IPCUpdate48   IPC = 4
	IPCFull       IPC = 6
)

// Packet is one Intel PT packet, struct pt_packet.
type Packet struct {
	Type    Type
	Size    uint8
	_       [3]byte
	payload [2]uint64 // the union, at offset 8: its fields read as x86-64 lays them out
}

// TSC returns a TSC packet's value.
func (p *Packet) TSC() uint64 { return p.payload[0] }

// IP returns an IP packet's (FUP, TIP, TIP.PGE, TIP.PGD) compression and
// payload.
func (p *Packet) IP() (IPC, uint64) {
	return IPC(uint32(p.payload[0])), p.payload[1]
}

// TNT returns a TNT packet's bit count and bits.
func (p *Packet) TNT() (uint8, uint64) {
	return uint8(p.payload[0]), p.payload[1]
}

// NewTSC, NewIP, NewTNT8 and NewPacket make packets to encode.
func NewTSC(tsc uint64) Packet {
	return Packet{Type: TSC, payload: [2]uint64{tsc}}
}

func NewIP(t Type, ipc IPC, ip uint64) Packet {
	return Packet{Type: t, payload: [2]uint64{uint64(ipc), ip}}
}

func NewTNT8(bits uint8, payload uint64) Packet {
	return Packet{Type: TNT8, payload: [2]uint64{uint64(bits), payload}}
}

func NewPacket(t Type) Packet { return Packet{Type: t} }

// ptConfig is the head of struct pt_config that this package fills.
type ptConfig struct {
	size     uintptr
	begin    unsafe.Pointer
	end      uintptr // one past the buffer: a uintptr, which a Go pointer may not be
	callback uintptr
	context  uintptr
	vendor   uint32 // struct pt_cpu
	family   uint16
	model    uint8
	stepping uint8
}

// CPU is the processor a trace was taken on, for libipt's errata.
type CPU struct {
	Family          uint16
	Model, Stepping uint8
}

// Lib is the loaded library.
type Lib struct {
	lib          *dynlib.Library
	allocDecoder func(cfg *ptConfig) uintptr
	freeDecoder  func(dec uintptr)
	syncForward  func(dec uintptr) int32
	pktNext      func(dec uintptr, pkt *Packet, size uintptr) int32
	getOffset    func(dec uintptr, off *uint64) int32
	allocEncoder func(cfg *ptConfig) uintptr
	freeEncoder  func(enc uintptr)
	encNext      func(enc uintptr, pkt *Packet) int32
	errstr       func(code int32) string
}

// Open loads libipt from path (DefaultLibrary: the loader finds it).
func Open(path string) (*Lib, error) {
	l := &Lib{}
	lib, err := dynlib.Open(path, "libipt", []dynlib.Binding{
		{Name: "pt_pkt_alloc_decoder", Fn: &l.allocDecoder, Required: true},
		{Name: "pt_pkt_free_decoder", Fn: &l.freeDecoder, Required: true},
		{Name: "pt_pkt_sync_forward", Fn: &l.syncForward, Required: true},
		{Name: "pt_pkt_next", Fn: &l.pktNext, Required: true},
		{Name: "pt_pkt_get_offset", Fn: &l.getOffset, Required: true},
		{Name: "pt_alloc_encoder", Fn: &l.allocEncoder, Required: true},
		{Name: "pt_free_encoder", Fn: &l.freeEncoder, Required: true},
		{Name: "pt_enc_next", Fn: &l.encNext, Required: true},
		{Name: "pt_errstr", Fn: &l.errstr, Required: true},
	})
	if err != nil {
		return nil, err
	}
	l.lib = lib
	return l, nil
}

// Errors of libipt that end a walk, enum pt_error_code.
const (
	pteEOS = 7
)

// ErrEOS is the end of the trace.
var ErrEOS = errors.New("end of the trace")

func (l *Lib) err(what string, code int32) error {
	if -code == pteEOS {
		return ErrEOS
	}
	return fmt.Errorf("libipt %s: %s (%d)", what, l.errstr(-code), code)
}

func config(buf []byte, cpu CPU) *ptConfig {
	c := &ptConfig{
		size:  unsafe.Sizeof(ptConfig{}),
		begin: unsafe.Pointer(unsafe.SliceData(buf)),
		end:   uintptr(unsafe.Pointer(unsafe.SliceData(buf))) + uintptr(len(buf)),
	}
	if cpu.Family != 0 {
		c.vendor, c.family, c.model, c.stepping = 1, cpu.Family, cpu.Model, cpu.Stepping
	}
	return c
}

// Decode walks trace's packets from its first PSB, calling fn for each,
// with its offset. It returns the offset of the first PSB.
func (l *Lib) Decode(trace []byte, cpu CPU, fn func(off int, p *Packet)) (int, error) {
	if len(trace) == 0 {
		return 0, ErrEOS
	}
	cfg := config(trace, cpu)
	dec := l.allocDecoder(cfg)
	if dec == 0 {
		return 0, errors.New("libipt: pt_pkt_alloc_decoder failed")
	}
	defer l.freeDecoder(dec)
	defer runtime.KeepAlive(trace)
	if rc := l.syncForward(dec); rc < 0 {
		return 0, l.err("sync", rc)
	}
	first := -1
	var p Packet
	for {
		var off uint64
		if rc := l.getOffset(dec, &off); rc < 0 {
			return first, l.err("offset", rc)
		}
		rc := l.pktNext(dec, &p, unsafe.Sizeof(p))
		if rc < 0 {
			err := l.err("next packet", rc)
			if errors.Is(err, ErrEOS) {
				return first, nil
			}
			return first, fmt.Errorf("%w at offset %d", err, off)
		}
		if first < 0 {
			first = int(off)
		}
		fn(int(off), &p)
	}
}

// Encode writes packets as a trace, into a buffer of at most max bytes.
func (l *Lib) Encode(packets []Packet, max int) ([]byte, error) {
	buf := make([]byte, max)
	cfg := config(buf, CPU{})
	enc := l.allocEncoder(cfg)
	if enc == 0 {
		return nil, errors.New("libipt: pt_alloc_encoder failed")
	}
	defer l.freeEncoder(enc)
	defer runtime.KeepAlive(buf)
	n := 0
	for i := range packets {
		rc := l.encNext(enc, &packets[i])
		if rc < 0 {
			return nil, l.err(fmt.Sprintf("encode packet %d (%v)", i, packets[i].Type), rc)
		}
		n += int(rc)
	}
	return buf[:n], nil
}

// Synthetic is a short, well-formed Intel PT stream, for tests: a PSB block with a
// TSC, then tracing enabled at an address, a conditional branch taken and
// one not, an indirect branch, and tracing disabled.
func Synthetic() []Packet {
	return []Packet{
		NewPacket(PSB), NewTSC(0x1234567890), NewPacket(PSBEnd),
		NewIP(TIPPGE, IPCSext48, 0x401000),
		NewTNT8(2, 0b10),
		NewIP(TIP, IPCUpdate16, 0x2040),
		NewPacket(Pad),
		NewIP(TIPPGD, IPCSuppressed, 0),
	}
}
