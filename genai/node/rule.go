package node

import (
	"encoding/binary"
	"io"
	"strings"

	"github.com/xpuscope/xpuscope/internal/nodebpf"
	"github.com/xpuscope/xpuscope/semconv"
)

// The model-file rule: a regular file is a model file when its name ends
// in one of a format's extensions (in any case) and it is at least that
// format's size. Nothing configures it. The formats:
//
//	format       extensions              smallest
//	safetensors  .safetensors            1 MiB
//	gguf         .gguf                   1 MiB
//	pytorch      .pt .pth                1 MiB
//	bin          .bin                    16 MiB (the extension is not only a model's)
//	checkpoint   .ckpt                   1 MiB
//	onnx         .onnx                   1 MiB
//	tensorrt     .engine .plan .trt      1 MiB
//
// The name is the one the process opened: a Hugging Face cache's
// snapshots/<revision>/model.safetensors, not the blob the link leads to,
// which is named by its hash. A file found by its mapping, where only
// that resolved name is known, is taken for a model file when it is such
// a blob (a name of 64 hexadecimal digits in a directory named blobs)
// whose first bytes are a safetensors header, GGUF's magic or a PyTorch
// zip archive's.
var modelFormats = []struct {
	format     nodebpf.Format
	name       string
	extensions []string
	minSize    int64
}{
	{nodebpf.FormatSafetensors, semconv.ModelFormatSafetensors, []string{".safetensors"}, 1 << 20},
	{nodebpf.FormatGGUF, semconv.ModelFormatGGUF, []string{".gguf"}, 1 << 20},
	{nodebpf.FormatPyTorch, semconv.ModelFormatPyTorch, []string{".pt", ".pth"}, 1 << 20},
	{nodebpf.FormatBin, semconv.ModelFormatBin, []string{".bin"}, 16 << 20},
	{nodebpf.FormatCheckpoint, semconv.ModelFormatCheckpoint, []string{".ckpt"}, 1 << 20},
	{nodebpf.FormatONNX, semconv.ModelFormatONNX, []string{".onnx"}, 1 << 20},
	{nodebpf.FormatTensorRT, semconv.ModelFormatTensorRT, []string{".engine", ".plan", ".trt"}, 1 << 20},
}

// ModelFormat returns the format of a file named name (a path's last
// component) of size bytes, by the model-file rule (see the package
// documentation), and false when it is no model file.
func ModelFormat(name string, size int64) (string, bool) {
	f, ok := formatOf(name, size)
	if !ok {
		return "", false
	}
	return formatName(f), true
}

func formatOf(name string, size int64) (nodebpf.Format, bool) {
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 || strings.IndexByte(name[dot:], '/') >= 0 {
		return nodebpf.FormatNone, false
	}
	ext := name[dot:]
	for _, f := range modelFormats {
		for _, e := range f.extensions {
			if strings.EqualFold(ext, e) {
				return f.format, size >= f.minSize
			}
		}
	}
	return nodebpf.FormatNone, false
}

// formatName is the semconv value of f.
func formatName(f nodebpf.Format) string {
	for _, m := range modelFormats {
		if m.format == f {
			return m.name
		}
	}
	return semconv.Unknown
}

// minSizes are the smallest model files by format, for the kernel side.
func minSizes() [nodebpf.NumFormats]uint64 {
	var out [nodebpf.NumFormats]uint64
	for i := range out {
		out[i] = ^uint64(0) // FormatNone: never
	}
	for _, f := range modelFormats {
		out[f.format] = uint64(f.minSize)
	}
	return out
}

// isHFBlob says whether path is a blob of a Hugging Face cache:
// .../blobs/<64 hexadecimal digits>.
func isHFBlob(path string) bool {
	i := strings.LastIndexByte(path, '/')
	name, dir := path[i+1:], path[:max(i, 0)]
	if len(name) != 64 || !strings.HasSuffix(dir, "/blobs") {
		return false
	}
	for _, c := range []byte(name) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// sniffFormat reads what a file's first bytes say it is: a safetensors
// file (an 8-byte little-endian header length, then the header's JSON
// object), GGUF (its magic), or a PyTorch archive (a zip's local file
// header). It returns FormatNone for anything else, or a file it cannot
// read.
func sniffFormat(r io.ReaderAt, size int64) nodebpf.Format {
	var b [10]byte
	if n, _ := r.ReadAt(b[:], 0); n < len(b) {
		return nodebpf.FormatNone
	}
	switch {
	case string(b[:4]) == "GGUF":
		return nodebpf.FormatGGUF
	case string(b[:4]) == "PK\x03\x04":
		return nodebpf.FormatPyTorch
	}
	if n := binary.LittleEndian.Uint64(b[:8]); n >= 2 && n <= 100<<20 && int64(n) <= size-8 && b[8] == '{' && (b[9] == '"' || b[9] == '}') {
		return nodebpf.FormatSafetensors
	}
	return nodebpf.FormatNone
}
