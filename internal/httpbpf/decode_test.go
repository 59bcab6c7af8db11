package httpbpf

import (
	"encoding/binary"
	"errors"
	"testing"
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
	copy(b[HeaderSize:], r.Data)
	return b
}

func TestDecode(t *testing.T) {
	good := Record{TS: 42, Conn: 0x5555aaaa, PID: 7, TID: 8, Kind: KindData, Source: SourceTLS, Dir: Read,
		Total: 100, Offset: 90, Seq: 3, Data: []byte("0123456789")}
	var r Record
	if err := Decode(encode(good), &r); err != nil {
		t.Fatal(err)
	}
	if r.TS != 42 || r.Conn != 0x5555aaaa || r.PID != 7 || r.TID != 8 || r.Kind != KindData || r.Source != SourceTLS ||
		r.Dir != Read || r.Total != 100 || r.Offset != 90 || r.Seq != 3 || string(r.Data) != "0123456789" {
		t.Fatalf("decoded %+v", r)
	}
	closeRec := Record{Kind: KindClose, Source: SourceSocket, Conn: 3}
	if err := Decode(encode(closeRec), &r); err != nil || r.Kind != KindClose || len(r.Data) != 0 {
		t.Fatalf("close record: %+v, %v", r, err)
	}

	bad := map[string][]byte{
		"short header": encode(good)[:HeaderSize-1],
		"kind":         encode(Record{Kind: 9, Source: SourceTLS}),
		"source":       encode(Record{Kind: KindData, Source: 9}),
		"direction":    encode(Record{Kind: KindData, Source: SourceTLS, Dir: 2}),
		"past total":   encode(Record{Kind: KindData, Source: SourceTLS, Total: 95, Offset: 90, Data: []byte("0123456789")}),
		"cut data":     encode(good)[:HeaderSize+5],
	}
	for name, b := range bad {
		if err := Decode(b, &r); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
		}
	}
}

func TestDecodeAllocs(t *testing.T) {
	b := encode(Record{Kind: KindData, Source: SourceSocket, Total: 4, Data: []byte("GET ")})
	var r Record
	if n := testing.AllocsPerRun(100, func() { _ = Decode(b, &r) }); n != 0 {
		t.Fatalf("%v allocations per Decode", n)
	}
}

// FuzzDecode: any bytes decode or fail with ErrMalformed, never panic, and
// what decodes stays inside the record and its call.
func FuzzDecode(f *testing.F) {
	f.Add(encode(Record{Kind: KindData, Source: SourceTLS, Total: 3, Data: []byte("abc")}))
	f.Add(encode(Record{Kind: KindClose, Source: SourceSocket}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		if err := Decode(b, &r); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if len(r.Data) > Piece || len(r.Data) > len(b)-HeaderSize || uint64(r.Offset)+uint64(len(r.Data)) > uint64(r.Total) {
			t.Fatalf("decoded %d data bytes at %d of %d from %d bytes", len(r.Data), r.Offset, r.Total, len(b))
		}
	})
}
