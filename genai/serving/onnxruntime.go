package serving

import (
	"path/filepath"
	"strings"
)

// ONNX Runtime is a library, found in the files a process maps
// (libonnxruntime.so.1.20.1, libonnxruntime_providers_cuda.so): reported
// present, with its processes, and no endpoint.
var onnxSpec = spec{
	kind:     ONNXRuntime,
	role:     func(*proc) string { return "" },
	endpoint: func([][]string) ([]uint16, string) { return nil, "a library, not a server: it serves no metrics" },
}

// isONNXRuntime reports whether a mapped file's path is ONNX Runtime's.
func isONNXRuntime(path string) bool {
	return strings.HasPrefix(filepath.Base(path), "libonnxruntime")
}
