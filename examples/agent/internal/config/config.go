package config

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/xpuscope/xpuscope/genai"
)

// Defaults and bounds.
const (
	DefaultServiceName      = "xpuscope-agent"
	DefaultListen           = ":9464"
	DefaultInterval         = 60 * time.Second // OTEL_METRIC_EXPORT_INTERVAL's default
	DefaultProtocol         = ProtocolHTTPProtobuf
	DefaultCaptureBodyLimit = 64 << 10
	DefaultContentMaxBytes  = 16 << 10

	MinInterval         = 100 * time.Millisecond
	MaxInterval         = 24 * time.Hour
	MaxCaptureBodyLimit = 16 << 20
	MaxContentMaxBytes  = 1 << 20
	// MaxFileSize bounds the configuration file; a larger one is refused
	// before it is parsed.
	MaxFileSize = 1 << 20
)

// OTLP protocols (OTEL_EXPORTER_OTLP_PROTOCOL values). http/json is not
// supported.
const (
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
)

// Config is the agent's configuration. Load fills every field; the zero
// Config is not valid. Comments name the YAML key (and the environment
// variable) each field comes from.
type Config struct {
	// LogLevel is log_level: debug, info (default), warn or error.
	LogLevel slog.Level
	// ServiceName is service_name, else $OTEL_SERVICE_NAME, else
	// service.name in $OTEL_RESOURCE_ATTRIBUTES, else
	// DefaultServiceName.
	ServiceName string
	// Resource holds the other resource attributes: the resource mapping
	// (attribute name: value) over those of $OTEL_RESOURCE_ATTRIBUTES.
	// It never holds service.name. Not nil.
	Resource map[string]string
	Export   Export
	AIML     AIML
}

// Export is the export section.
type Export struct {
	// Interval is export.interval (a duration such as "15s"), else
	// $OTEL_METRIC_EXPORT_INTERVAL (milliseconds), else DefaultInterval:
	// how often metrics are pushed over OTLP. MinInterval to MaxInterval.
	Interval   time.Duration
	Prometheus Prometheus
	OTLP       OTLP
}

// Prometheus is export.prometheus: the pull endpoint /metrics.
type Prometheus struct {
	// Enabled is export.prometheus.enabled; default true.
	Enabled bool
	// Listen is export.prometheus.listen, host:port; default
	// DefaultListen.
	Listen string
}

// OTLP is where metrics and spans are pushed: export.otlp. Its general
// keys (endpoint, protocol, headers, insecure) apply to both signals;
// its metrics and traces sections override them for one signal. Load
// resolves both signals in full, so only Metrics and Traces are kept.
type OTLP struct {
	Metrics, Traces OTLPSignal
}

// OTLPSignal is the resolved OTLP export of one signal.
type OTLPSignal struct {
	// Endpoint is empty when the signal is not exported over OTLP (no
	// endpoint was given). Otherwise, for http/protobuf, the full URL to
	// post to: a per-signal endpoint as given, or the general endpoint
	// with /v1/metrics or /v1/traces appended (as the OTLP exporter
	// specification says); for grpc, an http(s) URL or host:port.
	Endpoint string
	// Protocol is ProtocolGRPC or ProtocolHTTPProtobuf (the default).
	Protocol string
	// Headers are sent with every export: the general headers with the
	// per-signal ones over them. Not nil.
	Headers map[string]string
	// Insecure is true when the connection is plain text: an http://
	// endpoint, or a host:port endpoint with insecure: true. An https://
	// endpoint always uses TLS, whatever insecure says.
	Insecure bool
}

// AIML is the aiml section.
type AIML struct {
	LLM      LLM
	Serving  Serving
	Training Training
	Node     Node
}

// Node is aiml.node: the kernel's view of the node's AI workloads (TCP
// retransmits and resets of LLM calls and model servers, model files'
// reads, faults and page cache), from BTF tracepoints (package
// genai/node).
type Node struct {
	// Enabled is aiml.node.enabled; default true.
	Enabled bool
}

// Training is aiml.training: the training jobs on the node (PyTorch,
// TensorFlow, JAX), found from their processes and read from the files
// they already write (TensorBoard event files, MLflow file stores,
// Lightning's CSVLogger), which need no configuration (package
// genai/training).
type Training struct {
	// Enabled is aiml.training.enabled; default true.
	Enabled bool
}

// Serving is aiml.serving: the model servers on the node (vLLM, TGI,
// Triton, TorchServe, TF Serving, ONNX Runtime), found from their
// processes and read from their own metrics endpoints, which need no
// configuration (package genai/serving).
type Serving struct {
	// Enabled is aiml.serving.enabled; default true.
	Enabled bool
}

// LLM is aiml.llm: LLM API traffic.
type LLM struct {
	// CostRates is aiml.llm.cost_rates: prices in USD per million
	// tokens, keyed "provider/model" (provider a gen_ai.provider.name
	// value, "*" for any provider; the model may contain slashes).
	CostRates map[string]Rate
	// PriceFile is aiml.llm.price_file: a LiteLLM price file
	// (model_prices_and_context_window.json). A relative path is taken
	// from the configuration file's directory. CostRates win over it.
	PriceFile string
	// Providers is aiml.llm.providers: "host:port" or "host" to the
	// gen_ai.provider.name of an OpenAI-compatible server or gateway
	// there (see genai.HostMap).
	Providers map[string]string
	// CaptureBodyLimit is aiml.llm.capture_body_limit: how many bytes of
	// each request and response body are kept (genai.WithBodyLimit: a
	// streamed response is parsed whole as it arrives whatever the limit).
	// 1 to MaxCaptureBodyLimit; default DefaultCaptureBodyLimit.
	CaptureBodyLimit int
	// CaptureGoTLS is aiml.llm.capture_go_tls: whether Go programs'
	// crypto/tls is captured (genai.WithGoTLS); default true.
	CaptureGoTLS bool
	Content      Content
}

// Rate is one cost_rates entry, in USD per million tokens.
type Rate struct {
	Input  float64  // input_cost_per_1m (required)
	Output float64  // output_cost_per_1m (required)
	Cached *float64 // cached_input_cost_per_1m: prompt-cache reads; nil charges Input
	Write  *float64 // cache_write_cost_per_1m: prompt-cache writes; nil charges Input
}

// Content is aiml.llm.content: prompt and completion text on spans.
type Content struct {
	// Capture is aiml.llm.content.capture; default false. Content may
	// hold personal data: it is off unless turned on here.
	Capture bool
	// MaxBytes is aiml.llm.content.max_bytes: the cap of each content
	// attribute. 1 to MaxContentMaxBytes; default DefaultContentMaxBytes.
	MaxBytes int
}

// CaptureBytes is the cap to pass to genai.WithContentCapture: MaxBytes
// when Capture is on, else 0 (off).
func (c Content) CaptureBytes() int {
	if !c.Capture {
		return 0
	}
	return c.MaxBytes
}

// Rates returns the prices for genai.WithRates: those of PriceFile, when
// set, with CostRates over them. It reads PriceFile.
func (l LLM) Rates() (genai.Rates, error) {
	prices := make(map[genai.RateKey]genai.Price, len(l.CostRates))
	for k, r := range l.CostRates {
		key, err := rateKey(k)
		if err != nil {
			return genai.Rates{}, fmt.Errorf("cost rate %q: %w", k, err)
		}
		prices[key] = genai.Price{Input: r.Input, Output: r.Output, CachedInput: r.Cached, CacheWrite: r.Write}
	}
	own, err := genai.NewRates(prices)
	if err != nil {
		return genai.Rates{}, err
	}
	if l.PriceFile == "" {
		return own, nil
	}
	f, err := openRegular(l.PriceFile)
	if errors.Is(err, errNotRegular) {
		return genai.Rates{}, fmt.Errorf("aiml.llm.price_file %s: %w", l.PriceFile, err)
	}
	if err != nil {
		return genai.Rates{}, fmt.Errorf("aiml.llm.price_file: %w", err)
	}
	defer f.Close()
	file, err := genai.LoadLiteLLM(f)
	if err != nil {
		return genai.Rates{}, fmt.Errorf("aiml.llm.price_file %s: %w", l.PriceFile, err)
	}
	return file.Merge(own), nil
}

// HostMap returns Providers for genai's detection.
func (l LLM) HostMap() (genai.HostMap, error) {
	return genai.NewHostMap(l.Providers)
}

// Validate checks c as Load does, without positions: for a Config built
// or changed in code. Every problem is an *Error naming its key; they are
// joined.
func (c Config) Validate() error {
	var errs []error
	bad := func(key string, err error) {
		if err != nil {
			errs = append(errs, &Error{Key: key, Msg: err.Error()})
		}
	}
	bad("log_level", checkLevel(c.LogLevel))
	bad("service_name", checkAttr("service.name", c.ServiceName))
	for _, k := range slices.Sorted(maps.Keys(c.Resource)) {
		key := quoteKey("resource", k)
		if k == "service.name" {
			bad(key, errors.New("service.name belongs in ServiceName"))
		}
		bad(key, checkAttr(k, c.Resource[k]))
	}
	bad("export.interval", checkInterval(c.Export.Interval))
	if c.Export.Prometheus.Enabled {
		bad("export.prometheus.listen", checkListen(c.Export.Prometheus.Listen))
	}
	for _, s := range []struct {
		name string
		sig  OTLPSignal
	}{{"metrics", c.Export.OTLP.Metrics}, {"traces", c.Export.OTLP.Traces}} {
		key := "export.otlp." + s.name
		bad(key+".protocol", checkProtocol(s.sig.Protocol))
		if s.sig.Endpoint != "" {
			_, err := checkEndpointFor(s.sig.Endpoint, s.sig.Protocol)
			bad(key+".endpoint", err)
		}
		for _, h := range slices.Sorted(maps.Keys(s.sig.Headers)) {
			bad(quoteKey(key+".headers", h), checkHeader(h, s.sig.Headers[h]))
		}
	}
	l := c.AIML.LLM
	folded := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(l.CostRates)) {
		key := quoteKey("aiml.llm.cost_rates", k)
		if err := checkRate(k, l.CostRates[k]); err != nil {
			bad(key, err)
			continue
		}
		if prev, dup := folded[strings.ToLower(k)]; dup {
			bad(key, fmt.Errorf("same key as %q but for case", prev))
		}
		folded[strings.ToLower(k)] = k
	}
	seen := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(l.Providers)) {
		key := quoteKey("aiml.llm.providers", k)
		norm, err := hostEntry(k, l.Providers[k])
		if err != nil {
			bad(key, err)
			continue
		}
		if prev, dup := seen[norm]; dup {
			bad(key, fmt.Errorf("same host as %q (both are %s)", prev, norm))
		}
		seen[norm] = k
	}
	bad("aiml.llm.capture_body_limit", checkBodyLimit(l.CaptureBodyLimit))
	bad("aiml.llm.content.max_bytes", checkContentMax(l.Content.MaxBytes, l.Content.Capture))
	return errors.Join(errs...)
}

// Error is one problem with the configuration. Load and Validate return
// all the problems they find joined (errors.Join), each an *Error.
type Error struct {
	// File is the configuration file as given to Load; Line and Column
	// (1-based) the place in it, 0 where unknown. Empty for a problem in
	// the environment or found by Validate.
	File         string
	Line, Column int
	// Env is the environment variable at fault, if that is where the
	// problem is.
	Env string
	// Key is the key path ("aiml.llm.cost_rates.\"openai/gpt-4\".input_cost_per_1m");
	// empty at the top level and for Env problems.
	Key string
	Msg string
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0 && e.Column > 0:
		fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Column)
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	}
	if e.Env != "" {
		b.WriteString(e.Env + ": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// quoteKey appends a user-chosen map key to a key path, quoted (and cut
// to 64 bytes: a key path names the place, it need not repeat the input).
func quoteKey(path, k string) string {
	return fmt.Sprintf("%s.%.64q", path, k)
}
