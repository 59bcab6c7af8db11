package config_test

import (
	"fmt"

	"github.com/xpuscope/xpuscope/examples/agent/internal/config"
)

func Example() {
	// The agent passes os.LookupEnv; nil keeps this example's output
	// the same whatever the environment.
	c, err := config.Load("testdata/full.yaml", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	rates, err := c.AIML.LLM.Rates()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("service:", c.ServiceName)
	fmt.Println("metrics:", c.Export.OTLP.Metrics.Protocol, c.Export.OTLP.Metrics.Endpoint, "every", c.Export.Interval)
	fmt.Println("traces:", c.Export.OTLP.Traces.Protocol, c.Export.OTLP.Traces.Endpoint, "plain text:", c.Export.OTLP.Traces.Insecure)
	fmt.Println("rates:", rates.Len())
	fmt.Println("content cap:", c.AIML.LLM.Content.CaptureBytes())

	_, err = config.Load("testdata/bad.yaml", nil)
	fmt.Println(err)
	// Output:
	// service: gpu-node-agent
	// metrics: http/protobuf https://collector.observability:4318/v1/metrics every 15s
	// traces: grpc collector.observability:4317 plain text: true
	// rates: 4
	// content cap: 8192
	// testdata/bad.yaml:4:1: unknown key "gpu" (GPU detection is automatic; there are no per-feature GPU keys)
	// testdata/bad.yaml:9:43: aiml.llm.cost_rates."openai/gpt-4".input_cost_per_1m: want a number, got "cheap"
	// testdata/bad.yaml:11:7: aiml.llm.providers."vllm:99999": host map key "vllm:99999" is not host or host:port
}
