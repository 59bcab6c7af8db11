package node

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpuscope/xpuscope/internal/nodebpf"
)

func TestModelFormat(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int64
		format string
		ok     bool
	}{
		{"model.safetensors", 1 << 20, "safetensors", true},
		{"model.safetensors", 1<<20 - 1, "", false}, // smaller than a model
		{"MODEL.SAFETENSORS", 2 << 20, "safetensors", true},
		{"x.gguf", 1 << 30, "gguf", true},
		{"x.pt", 1 << 20, "pytorch", true},
		{"x.pth", 1 << 20, "pytorch", true},
		{"pytorch_model.bin", 16 << 20, "bin", true},
		{"vocab.bin", 15 << 20, "", false},
		{"x.ckpt", 1 << 20, "checkpoint", true},
		{"x.onnx", 1 << 20, "onnx", true},
		{"x.engine", 1 << 20, "tensorrt", true},
		{"x.plan", 1 << 20, "tensorrt", true},
		{"x.trt", 1 << 20, "tensorrt", true},
		{"x.json", 1 << 30, "", false},
		{"safetensors", 1 << 30, "", false},
		{"", 1 << 30, "", false},
	} {
		format, ok := ModelFormat(tc.name, tc.size)
		assert.Equal(t, tc.ok, ok, "%s %d", tc.name, tc.size)
		assert.Equal(t, tc.format, format, "%s %d", tc.name, tc.size)
	}
	// The kernel side's smallest sizes are the rule's, and a file of no
	// format is never one.
	ms := minSizes()
	assert.Equal(t, ^uint64(0), ms[nodebpf.FormatNone])
	assert.Equal(t, uint64(16<<20), ms[nodebpf.FormatBin])
	assert.Equal(t, uint64(1<<20), ms[nodebpf.FormatGGUF])
}

func TestIsHFBlob(t *testing.T) {
	hash := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	assert.True(t, isHFBlob("/root/.cache/huggingface/hub/models--x--y/blobs/"+hash))
	assert.False(t, isHFBlob("/root/.cache/huggingface/hub/models--x--y/snapshots/"+hash))
	assert.False(t, isHFBlob("/blobs/"+hash[:63]))
	assert.False(t, isHFBlob("/blobs/"+hash[:63]+"G"))
	assert.False(t, isHFBlob(hash))
}

// safetensors is the head of a safetensors file whose header is h.
func safetensors(h string) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(b, h...)
}

func TestSniffFormat(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		want nodebpf.Format
	}{
		{"safetensors", append(safetensors(`{"w":{"dtype":"F16"}}`), make([]byte, 64)...), nodebpf.FormatSafetensors},
		{"empty safetensors header", safetensors(`{}`), nodebpf.FormatSafetensors},
		{"a header longer than the file", safetensors(`{"w":1}`)[:12], nodebpf.FormatNone},
		{"gguf", append([]byte("GGUF\x03\x00\x00\x00"), make([]byte, 8)...), nodebpf.FormatGGUF},
		{"pytorch zip", append([]byte("PK\x03\x04"), make([]byte, 26)...), nodebpf.FormatPyTorch},
		{"text", []byte("hello, world, this is text"), nodebpf.FormatNone},
		{"short", []byte("GGUF"), nodebpf.FormatNone},
	} {
		assert.Equal(t, tc.want, sniffFormat(bytes.NewReader(tc.b), int64(len(tc.b))), tc.name)
	}
}

// FuzzSniffFormat: a file's first bytes, which anyone may write, never
// make the sniffer panic, and say a format only of a known magic or a
// safetensors header that fits in the file.
func FuzzSniffFormat(f *testing.F) {
	f.Add(safetensors(`{"w":1}`))
	f.Add([]byte("GGUF\x03\x00\x00\x00\x00\x00"))
	f.Add([]byte("PK\x03\x04\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		switch got := sniffFormat(bytes.NewReader(b), int64(len(b))); got {
		case nodebpf.FormatNone:
		case nodebpf.FormatGGUF:
			assert.Equal(t, "GGUF", string(b[:4]))
		case nodebpf.FormatPyTorch:
			assert.Equal(t, "PK\x03\x04", string(b[:4]))
		case nodebpf.FormatSafetensors:
			n := binary.LittleEndian.Uint64(b)
			assert.LessOrEqual(t, n, uint64(len(b)-8))
			assert.Equal(t, byte('{'), b[8])
		default:
			t.Fatalf("format %d", got)
		}
	})
}
