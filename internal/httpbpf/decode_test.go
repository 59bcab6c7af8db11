package httpbpf

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// encode lays a record out as capture.bpf.c writes it.
func encode(r Record) []byte {
	b := make([]byte, HeaderSize+len(r.Data))
	le := binary.LittleEndian
	le.PutUint64(b[0:], r.TS)
	le.PutUint64(b[8:], r.Conn)
	le.PutUint32(b[16:], r.PID)
	le.PutUint32(b[20:], r.TID)
	b[24], b[25], b[26] = byte(r.Kind), byte(r.Source), byte(r.Dir)
	le.PutUint32(b[28:], uint32(len(r.Data)))
	le.PutUint32(b[32:], r.Total)
	le.PutUint32(b[36:], r.Offset)
	le.PutUint32(b[40:], r.Seq)
	le.PutUint32(b[44:], r.Gen)
	copy(b[HeaderSize:], r.Data)
	return b
}

func TestDecode(t *testing.T) {
	good := Record{TS: 42, Conn: 0x5555aaaa, PID: 7, TID: 8, Kind: KindData, Source: SourceTLS, Dir: Read,
		Total: 100, Offset: 90, Seq: 3, Data: []byte("0123456789")}
	var r Record
	require.NoError(t, Decode(encode(good), &r))
	require.Equal(t, good, r, "decoded")
	closeRec := Record{Kind: KindClose, Source: SourceGoTLS, Conn: 3, Seq: 5, Total: 7}
	require.NoError(t, Decode(encode(closeRec), &r), "close record")
	require.Equal(t, KindClose, r.Kind, "close record: %+v", r)
	require.Empty(t, r.Data, "close record: %+v", r)
	w, rd := r.LastCalls()
	require.Equal(t, [2]uint32{5, 7}, [2]uint32{w, rd}, "the last write's and read's numbers")
	eof := Record{Kind: KindEOF, Source: SourceSocket, Conn: 3, Seq: 4, Gen: 9}
	require.NoError(t, Decode(encode(eof), &r), "end-of-stream record")
	require.Equal(t, KindEOF, r.Kind)
	require.Equal(t, uint32(9), r.Gen, "end-of-stream record: %+v", r)
	require.Zero(t, r.Inode(), "an end-of-stream record's socket")
	sock := Record{Kind: KindSocket, Source: SourceGoTLS, Conn: 0xc000123000, PID: 7, TID: 9, Gen: 4, Total: 8,
		Data: binary.LittleEndian.AppendUint64(nil, 0x1_0000_beef)}
	require.NoError(t, Decode(encode(sock), &r), "socket record")
	require.Equal(t, sock, r, "socket record")
	require.Equal(t, uint64(0x1_0000_beef), r.Inode(), "the socket's inode number")
	_, _, _, ok := r.Key()
	require.False(t, ok, "a socket record's secret")

	// struct key_record past its header: label, secret's length, 6 bytes
	// of padding, the client random, the secret (48 bytes).
	keyData := func(label, n byte) []byte {
		d := make([]byte, 88)
		d[0], d[1] = label, n
		for i := range 32 {
			d[8+i] = byte(i)
		}
		for i := range 48 {
			d[40+i] = 0xa0 + byte(i)
		}
		return d
	}
	key := Record{Kind: KindKey, Source: SourceTLSWire, PID: 7, Total: 88, Data: keyData(KeyServerTraffic, 32)}
	require.NoError(t, Decode(encode(key), &r), "key record")
	label, random, secret, ok := r.Key()
	require.True(t, ok)
	require.Equal(t, KeyServerTraffic, label)
	require.Equal(t, keyData(0, 0)[8:40], random, "the client random")
	require.Equal(t, keyData(0, 0)[40:72], secret, "the secret: its length's first bytes")
	require.Equal(t, "tls-wire", r.Source.String())

	for _, n := range []int{StateBytes, StateBytes / 2} {
		state := Record{Kind: KindState, Source: SourceTLS, PID: 7, Conn: 0x5000, Total: uint32(n), Data: make([]byte, n)}
		require.NoError(t, Decode(encode(state), &r), "state record of %d bytes", n)
		require.Equal(t, KindState, r.Kind)
		require.Len(t, r.Data, n)
	}
	session := Record{Kind: KindSession, Source: SourceTLS, PID: 7, Conn: 0x5000, Seq: 2328, Total: SessionBytes, Data: make([]byte, SessionBytes)}
	require.NoError(t, Decode(encode(session), &r), "session record")
	require.Equal(t, uint32(2328), r.Seq, "where the object holds the pointer")

	bad := map[string][]byte{
		"state record, short":   encode(Record{Kind: KindState, Source: SourceTLS, Total: 1000, Data: make([]byte, 1000)}),
		"session record, short": encode(Record{Kind: KindSession, Source: SourceTLS, Total: 255, Data: make([]byte, 255)}),
		"kind 0":                encode(Record{Kind: 0, Source: SourceTLS}),
		"short header":          encode(good)[:HeaderSize-1],
		"kind":                  encode(Record{Kind: 9, Source: SourceTLS}),
		"source":                encode(Record{Kind: KindData, Source: 9}),
		"direction":             encode(Record{Kind: KindData, Source: SourceTLS, Dir: 2}),
		"past total":            encode(Record{Kind: KindData, Source: SourceTLS, Total: 95, Offset: 90, Data: []byte("0123456789")}),
		"cut data":              encode(good)[:HeaderSize+5],
		"socket record, short":  encode(Record{Kind: KindSocket, Source: SourceTLS, Total: 8, Data: []byte{1, 2, 3, 4}}),
		"socket record, long":   encode(Record{Kind: KindSocket, Source: SourceTLS, Total: 9, Data: []byte("123456789")}),
		"socket record, cut":    encode(sock)[:HeaderSize+7],
		"key record, short":     encode(Record{Kind: KindKey, Source: SourceTLSWire, Total: 87, Data: keyData(KeyTLS12, 48)[:87]}),
		"key record, label":     encode(Record{Kind: KindKey, Source: SourceTLSWire, Total: 88, Data: keyData(4, 48)}),
		"key record, no label":  encode(Record{Kind: KindKey, Source: SourceTLSWire, Total: 88, Data: keyData(0, 48)}),
		"key record, secret":    encode(Record{Kind: KindKey, Source: SourceTLSWire, Total: 88, Data: keyData(KeyTLS12, 49)}),
	}
	for name, b := range bad {
		assert.ErrorIs(t, Decode(b, &r), ErrMalformed, name)
	}
}

func TestDecodeAllocs(t *testing.T) {
	b := encode(Record{Kind: KindData, Source: SourceSocket, Total: 4, Data: []byte("GET ")})
	var r Record
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = Decode(b, &r) }), "allocations per Decode")
}

// FuzzDecode: any bytes decode or fail with ErrMalformed, never panic, and
// what decodes stays inside the record and its call.
func FuzzDecode(f *testing.F) {
	f.Add(encode(Record{Kind: KindData, Source: SourceTLS, Total: 3, Data: []byte("abc")}))
	f.Add(encode(Record{Kind: KindClose, Source: SourceSocket}))
	f.Add(encode(Record{Kind: KindSocket, Source: SourceTLS, Total: 8, Data: make([]byte, 8)}))
	f.Add(encode(Record{Kind: KindKey, Source: SourceTLSWire, Total: 88, Data: append([]byte{KeyClientTraffic, 48}, make([]byte, 86)...)}))
	f.Add(encode(Record{Kind: KindSession, Source: SourceTLS, Total: SessionBytes, Data: make([]byte, SessionBytes)}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		if err := Decode(b, &r); err != nil {
			if !errors.Is(err, ErrMalformed) {
				require.ErrorIs(t, err, ErrMalformed)
			}
			return
		}
		if r.Kind == KindSocket && len(r.Data) != 8 {
			require.Len(t, r.Data, 8, "a socket record's data: its inode number")
		}
		if _, random, secret, ok := r.Key(); ok && (len(random) != 32 || len(secret) > 48) {
			require.Len(t, random, 32, "a key record's client random")
			require.LessOrEqual(t, len(secret), 48, "a key record's secret")
		}
		if len(r.Data) > Piece || len(r.Data) > len(b)-HeaderSize || uint64(r.Offset)+uint64(len(r.Data)) > uint64(r.Total) {
			msg := []any{"decoded %d data bytes at %d of %d from %d bytes", len(r.Data), r.Offset, r.Total, len(b)}
			require.LessOrEqual(t, len(r.Data), Piece, msg...)
			require.LessOrEqual(t, len(r.Data), len(b)-HeaderSize, msg...)
			require.LessOrEqual(t, uint64(r.Offset)+uint64(len(r.Data)), uint64(r.Total), msg...)
		}
	})
}
