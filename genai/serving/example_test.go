package serving_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/genai/serving"
)

// Find the model servers on the node and read them, their histograms
// through a Producer registered on the reader: create the Producer
// first, then the reader, the MeterProvider and the Source.
func Example() {
	producer := serving.NewProducer()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(producer))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	src, err := serving.New(
		serving.WithMeterProvider(mp),
		serving.WithProducer(producer),
	)
	if errors.Is(err, xpuscope.ErrUnavailable) {
		fmt.Println("unavailable:", err) // the procfs cannot be read
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()

	for _, s := range src.Status().Servers {
		fmt.Printf("%s (pid %d): %s %v\n", s.Kind, s.PID, s.Endpoint, s.Problems)
	}
	fmt.Println("histograms reported:", src.Status().Histograms)
}

// The kinds of model server the Source recognises, as gen_ai.provider.name
// names them on its series.
func ExampleKinds() {
	fmt.Println(serving.Kinds())
	// Output: [vllm tgi triton torchserve tensorflow_serving onnxruntime]
}
