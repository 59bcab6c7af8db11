package node_test

import (
	"errors"
	"fmt"
	"log"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/genai/node"
)

// The TCP part alone: retransmits and resets of the connections to a
// model server on port 8000.
func Example() {
	mp := sdkmetric.NewMeterProvider()
	src, err := node.New(node.WithMeterProvider(mp), node.WithServerPorts(8000),
		node.WithPageCache(false), node.WithFileSyscalls(false))
	if errors.Is(err, xpuscope.ErrUnavailable) {
		log.Printf("genai/node: %v", err) // no root, or no BTF tracepoints
		return
	} else if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	log.Print(src.Status().Describe())
}

// The model-file rule: by extension, in any case, and size.
func ExampleModelFormat() {
	for _, f := range []struct {
		name string
		size int64
	}{
		{"model-00001-of-00004.safetensors", 5 << 30},
		{"Llama-3-8B.Q4_K_M.GGUF", 4 << 30},
		{"pytorch_model.bin", 500 << 20},
		{"vocab.bin", 2 << 20}, // too small for a .bin
		{"config.json", 1 << 20},
	} {
		format, ok := node.ModelFormat(f.name, f.size)
		fmt.Println(f.name, format, ok)
	}
	// Output:
	// model-00001-of-00004.safetensors safetensors true
	// Llama-3-8B.Q4_K_M.GGUF gguf true
	// pytorch_model.bin bin true
	// vocab.bin  false
	// config.json  false
}
