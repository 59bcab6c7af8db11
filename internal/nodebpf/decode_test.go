package nodebpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// encode lays v out as the kernel side writes it: the structs bpf2go
// generated from the object's BTF, so that the decoders' offsets are held
// to node.bpf.c's layout, not to themselves.
func encode(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, binary.Write(&b, binary.LittleEndian, v))
	return b.Bytes()
}

func TestRecordSizes(t *testing.T) {
	assert.Equal(t, TCPRecordSize, int(unsafe.Sizeof(nodeTcpRecord{})))
	assert.Equal(t, OpenRecordSize, int(unsafe.Sizeof(nodeOpenRecord{})))
	assert.Equal(t, NameBytes, len(nodeOpenRecord{}.Name))
	assert.Equal(t, RetransmitTimes, len(nodeRetransmitTimes{}.Ts))
}

func TestDecodeTCP(t *testing.T) {
	v4 := nodeTcpRecord{Kind: uint8(KindTCP), Event: uint8(Retransmit), Role: uint8(RoleClient), State: 1, Pid: 4242,
		Ts: 123456789, Ino: 99887766, Cgroup: 555, Err: -105, Family: afInet, Sport: 40000, Dport: 11434}
	copy(v4.Saddr[:], []byte{10, 77, 1, 1})
	copy(v4.Daddr[:], []byte{10, 77, 1, 2})
	v6 := v4
	v6.Event, v6.Role, v6.Err, v6.Family = uint8(ResetReceived), uint8(RoleServer), 0, afInet6
	v6.Saddr = netip.MustParseAddr("fd00::1").As16()
	v6.Daddr = netip.MustParseAddr("::ffff:192.0.2.7").As16() // v4-mapped: read as IPv4
	noSock := nodeTcpRecord{Kind: uint8(KindTCP), Event: uint8(ResetSent), Ts: 7}
	for _, tc := range []struct {
		name string
		in   nodeTcpRecord
		want TCPRecord
	}{
		{"ipv4 retransmit", v4, TCPRecord{Event: Retransmit, Role: RoleClient, State: 1, PID: 4242, TS: 123456789, Ino: 99887766,
			Cgroup: 555, Err: -105, Local: netip.MustParseAddrPort("10.77.1.1:40000"), Remote: netip.MustParseAddrPort("10.77.1.2:11434")}},
		{"ipv6 reset received", v6, TCPRecord{Event: ResetReceived, Role: RoleServer, State: 1, PID: 4242, TS: 123456789, Ino: 99887766,
			Cgroup: 555, Local: netip.MustParseAddrPort("[fd00::1]:40000"), Remote: netip.MustParseAddrPort("192.0.2.7:11434")}},
		{"reset without a socket", noSock, TCPRecord{Event: ResetSent, TS: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := encode(t, tc.in)
			k, err := RecordKind(b)
			require.NoError(t, err)
			require.Equal(t, KindTCP, k)
			var got TCPRecord
			require.NoError(t, DecodeTCP(b, &got))
			assert.Equal(t, tc.want, got)
		})
	}
	for _, bad := range []func(*nodeTcpRecord){
		func(r *nodeTcpRecord) { r.Event = 0 },
		func(r *nodeTcpRecord) { r.Event = 4 },
		func(r *nodeTcpRecord) { r.Role = 3 },
		func(r *nodeTcpRecord) { r.Family = 1 },
		func(r *nodeTcpRecord) { r.Kind = uint8(KindOpen) },
	} {
		r := v4
		bad(&r)
		var got TCPRecord
		assert.ErrorIs(t, DecodeTCP(encode(t, r), &got), ErrMalformed, "%+v", r)
	}
	var got TCPRecord
	assert.ErrorIs(t, DecodeTCP(encode(t, v4)[:TCPRecordSize-1], &got), ErrMalformed, "short")
}

func TestDecodeOpen(t *testing.T) {
	r := nodeOpenRecord{Kind: uint8(KindOpen), Format: uint8(FormatGGUF), NameLen: 12, Pid: 77, Ts: 5, Dev: 8<<20 | 1, Ino: 1234, Size: 300 << 20}
	for i, c := range []byte("llama-7.gguf") {
		r.Name[i] = int8(c)
	}
	b := encode(t, r)
	k, err := RecordKind(b)
	require.NoError(t, err)
	require.Equal(t, KindOpen, k)
	var got OpenRecord
	require.NoError(t, DecodeOpen(b, &got))
	assert.Equal(t, OpenRecord{Format: FormatGGUF, PID: 77, TS: 5, File: FileKey{Dev: 8<<20 | 1, Ino: 1234}, Size: 300 << 20,
		Name: []byte("llama-7.gguf")}, got)
	for _, bad := range []func(*nodeOpenRecord){
		func(r *nodeOpenRecord) { r.Format = uint8(FormatNone) },
		func(r *nodeOpenRecord) { r.Format = uint8(NumFormats) },
		func(r *nodeOpenRecord) { r.NameLen = 0 },
		func(r *nodeOpenRecord) { r.NameLen = NameBytes + 1 },
	} {
		c := r
		bad(&c)
		assert.ErrorIs(t, DecodeOpen(encode(t, c), &got), ErrMalformed, "%+v", c)
	}
	_, err = RecordKind(nil)
	assert.ErrorIs(t, err, ErrMalformed)
	_, err = RecordKind([]byte{9})
	assert.ErrorIs(t, err, ErrMalformed)
	_, err = RecordKind(b[:OpenRecordSize-1])
	assert.ErrorIs(t, err, ErrMalformed)
}

// The kernel's dev_t (major << 20 | minor) and stat(2)'s (glibc's
// encoding, which splits both numbers) convert both ways: a disk (8:1), a
// device-mapper volume (253:3), and numbers past glibc's 8 and 12 low
// bits (259:300, 4095:1048575).
func TestDevConversion(t *testing.T) {
	for _, d := range []struct{ major, minor uint64 }{{8, 1}, {253, 3}, {259, 300}, {4095, 1<<20 - 1}, {0, 0}} {
		user := unix.Mkdev(uint32(d.major), uint32(d.minor))
		kernel := d.major<<20 | d.minor
		assert.Equal(t, kernel, KernelDev(user), "%d:%d", d.major, d.minor)
		assert.Equal(t, user, UserDev(kernel), "%d:%d", d.major, d.minor)
	}
}

// FuzzDecode: any bytes decode or fail with ErrMalformed, never panic,
// and a decoded name stays within the record and NameBytes.
func FuzzDecode(f *testing.F) {
	f.Add(encode(f, nodeTcpRecord{Kind: uint8(KindTCP), Event: uint8(Retransmit), Family: afInet}))
	f.Add(encode(f, nodeTcpRecord{Kind: uint8(KindTCP), Event: uint8(ResetSent), Family: afInet6}))
	f.Add(encode(f, nodeOpenRecord{Kind: uint8(KindOpen), Format: uint8(FormatONNX), NameLen: 3}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := RecordKind(b)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformed)
			return
		}
		switch k {
		case KindTCP:
			var r TCPRecord
			if err := DecodeTCP(b, &r); err != nil {
				require.True(t, errors.Is(err, ErrMalformed), "%v", err)
				return
			}
			require.True(t, r.Event >= Retransmit && r.Event <= ResetReceived)
			require.Equal(t, r.Local.IsValid(), r.Remote.IsValid())
		case KindOpen:
			var r OpenRecord
			if err := DecodeOpen(b, &r); err != nil {
				require.True(t, errors.Is(err, ErrMalformed), "%v", err)
				return
			}
			require.NotEmpty(t, r.Name)
			require.LessOrEqual(t, len(r.Name), NameBytes)
			require.NotEqual(t, FormatNone, r.Format)
		}
	})
}
