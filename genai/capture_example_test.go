package genai_test

import (
	"errors"
	"log"

	"go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/genai"
)

// A capture of every process's LLM calls, with a gateway named and the
// raw exchanges handed over as well. It needs root (or CAP_BPF,
// CAP_PERFMON, CAP_SYS_ADMIN and CAP_SYS_PTRACE); without them NewCapture
// is unavailable and says why.
func ExampleNewCapture() {
	hosts, err := genai.NewHostMap(map[string]string{"litellm.internal:4000": "openai"})
	if err != nil {
		log.Fatal(err)
	}
	c, err := genai.NewCapture(
		genai.WithMeterProvider(noop.NewMeterProvider()),
		genai.WithTracerProvider(tracenoop.NewTracerProvider()),
		genai.WithHostMap(hosts),
		genai.WithPlaintextPorts(8000, 4000, 11434),
		genai.WithExchangeHandler(func(x *genai.Exchange, c *genai.Call, ep genai.Endpoint) {
			log.Printf("%s %s: %d tokens in, %d out", c.Provider, c.RequestModel, c.Usage.InputTokens, c.Usage.OutputTokens)
		}),
	)
	if errors.Is(err, xpuscope.ErrUnavailable) {
		log.Printf("LLM capture off: %v", err)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, a := range c.Status().Attachments {
		log.Printf("OpenSSL probed: %s (pid %d)", a.Path, a.PID)
	}
}
