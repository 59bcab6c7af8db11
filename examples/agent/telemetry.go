package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/cudatrace"
	"github.com/xpuscope/xpuscope/examples/agent/internal/config"
	"github.com/xpuscope/xpuscope/genai/serving"
	"github.com/xpuscope/xpuscope/hiptrace"
	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/semconv"
)

// scopeName is the instrumentation scope of the agent's own metrics.
const scopeName = "github.com/xpuscope/xpuscope/examples/agent"

// envNodeName is where the downward API puts the node's name.
const envNodeName = "K8S_NODE_NAME"

// telemetry is where everything the agent collects goes: a MeterProvider
// with the Prometheus exporter (always: -duration prints from it) and,
// when configured, an OTLP exporter; a TracerProvider exporting over OTLP
// when configured. The runtime tracers' histograms reach both readers
// through the tracers' Producers, which the readers take when they are
// made, before the tracers start.
type telemetry struct {
	meter    *sdkmetric.MeterProvider
	tracer   *sdktrace.TracerProvider
	registry *prometheus.Registry
	cuda     *cudatrace.Producer
	hip      *hiptrace.Producer
	serving  *serving.Producer
	// exitGrace is how long the tracers keep an exited process's series
	// for the OTLP reader, which collects less often than a scrape may.
	exitGrace time.Duration
	failures  [2]atomic.Int64 // by signal: metrics, traces
	reg       metric.Registration
}

func newTelemetry(ctx context.Context, cfg config.Config) (*telemetry, error) {
	t := &telemetry{registry: prometheus.NewRegistry(), cuda: cudatrace.NewProducer(), hip: hiptrace.NewProducer(),
		serving: serving.NewProducer()}
	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("resource: %w", err)
	}
	prom, err := otelprom.New(otelprom.WithRegisterer(t.registry), otelprom.WithProducer(t.cuda), otelprom.WithProducer(t.hip),
		otelprom.WithProducer(t.serving))
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	mopts := []sdkmetric.Option{sdkmetric.WithReader(prom), sdkmetric.WithResource(res)}
	if s := cfg.Export.OTLP.Metrics; s.Endpoint != "" {
		exp, err := metricExporter(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("OTLP metric exporter (%s %s): %w", s.Protocol, s.Endpoint, err)
		}
		mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(
			&countingMetricExporter{Exporter: exp, failures: &t.failures[0]},
			sdkmetric.WithInterval(cfg.Export.Interval), sdkmetric.WithProducer(t.cuda), sdkmetric.WithProducer(t.hip),
			sdkmetric.WithProducer(t.serving))))
		t.exitGrace = cfg.Export.Interval
	}
	topts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if s := cfg.Export.OTLP.Traces; s.Endpoint != "" {
		exp, err := traceExporter(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter (%s %s): %w", s.Protocol, s.Endpoint, err)
		}
		topts = append(topts, sdktrace.WithBatcher(&countingSpanExporter{SpanExporter: exp, failures: &t.failures[1]}))
	}
	t.meter = sdkmetric.NewMeterProvider(mopts...)
	t.tracer = sdktrace.NewTracerProvider(topts...)
	return t, nil
}

// newResource describes this agent: the service name and resource
// attributes of the configuration, the host, and the Kubernetes node
// when the downward API gives it.
func newResource(ctx context.Context, cfg config.Config) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{semconv.ServiceName.String(cfg.ServiceName)}
	for k, v := range cfg.Resource {
		attrs = append(attrs, attribute.String(k, v))
	}
	if node := os.Getenv(envNodeName); node != "" {
		attrs = append(attrs, semconv.K8sNodeName.String(node))
	}
	return resource.New(ctx, resource.WithAttributes(attrs...), resource.WithHost(), resource.WithHostID(),
		resource.WithTelemetrySDK())
}

// endpointURL reports whether an endpoint is a URL (else host:port).
func endpointURL(e string) bool {
	return strings.HasPrefix(e, "http://") || strings.HasPrefix(e, "https://")
}

func metricExporter(ctx context.Context, s config.OTLPSignal) (sdkmetric.Exporter, error) {
	if s.Protocol == config.ProtocolGRPC {
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithHeaders(s.Headers)}
		if endpointURL(s.Endpoint) {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(s.Endpoint))
		} else {
			opts = append(opts, otlpmetricgrpc.WithEndpoint(s.Endpoint))
		}
		if s.Insecure {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
	opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(s.Endpoint), otlpmetrichttp.WithHeaders(s.Headers)}
	if s.Insecure {
		opts = append(opts, otlpmetrichttp.WithInsecure())
	}
	return otlpmetrichttp.New(ctx, opts...)
}

func traceExporter(ctx context.Context, s config.OTLPSignal) (sdktrace.SpanExporter, error) {
	if s.Protocol == config.ProtocolGRPC {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithHeaders(s.Headers)}
		if endpointURL(s.Endpoint) {
			opts = append(opts, otlptracegrpc.WithEndpointURL(s.Endpoint))
		} else {
			opts = append(opts, otlptracegrpc.WithEndpoint(s.Endpoint))
		}
		if s.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(s.Endpoint), otlptracehttp.WithHeaders(s.Headers)}
	if s.Insecure {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	return otlptracehttp.New(ctx, opts...)
}

// countingMetricExporter counts failed exports.
type countingMetricExporter struct {
	sdkmetric.Exporter
	failures *atomic.Int64
}

func (e *countingMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := e.Exporter.Export(ctx, rm)
	if err != nil {
		e.failures.Add(1)
	}
	return err
}

// countingSpanExporter counts failed exports.
type countingSpanExporter struct {
	sdktrace.SpanExporter
	failures *atomic.Int64
}

func (e *countingSpanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		e.failures.Add(1)
	}
	return err
}

// featureReason is the reason an inactive feature's series carry: the
// first line of its error, cut to semconv.MaxFeatureReason bytes on a
// character's boundary.
func featureReason(detail string) string {
	line, _, _ := strings.Cut(detail, "\n")
	if len(line) <= semconv.MaxFeatureReason {
		return line
	}
	cut := semconv.MaxFeatureReason
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut]
}

// observeSelf registers the agent's own metrics: each feature's state,
// and the failed exports.
func (t *telemetry) observeSelf(results []result) error {
	b := meterx.Builder{Meter: t.meter.Meter(scopeName, metric.WithInstrumentationVersion(xpuscope.Version))}
	states := b.UpDownCounter(semconv.XpuscopeAgentFeatureState)
	failures := b.Counter(semconv.XpuscopeAgentExportFailures)
	if err := b.Err(); err != nil {
		return err
	}
	type point struct {
		attrs meterx.Attrs
		value int64
	}
	var points []point
	for _, r := range results {
		for _, s := range []state{active, unavailable, fault} {
			v := int64(0)
			if r.state == s {
				v = 1
			}
			attrs := []attribute.KeyValue{semconv.XpuscopeFeature.String(r.name), semconv.XpuscopeFeatureState.String(s.String())}
			if r.state != active {
				attrs = append(attrs, semconv.XpuscopeFeatureReason.String(featureReason(r.detail)))
			}
			points = append(points, point{meterx.NewAttrs(attrs...), v})
		}
	}
	signals := [2]meterx.Attrs{meterx.NewAttrs(semconv.XpuscopeSignal.String(semconv.SignalMetrics)),
		meterx.NewAttrs(semconv.XpuscopeSignal.String(semconv.SignalTraces))}
	var err error
	t.reg, err = b.Meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, p := range points {
			o.ObserveInt64(states, p.value, p.attrs.Observe...)
		}
		for i := range signals {
			o.ObserveInt64(failures, t.failures[i].Load(), signals[i].Observe...)
		}
		return nil
	}, states, failures)
	return err
}

// shutdown flushes and stops the exporters.
func (t *telemetry) shutdown(ctx context.Context) error {
	var errs []error
	if t.reg != nil {
		errs = append(errs, t.reg.Unregister())
	}
	return errors.Join(append(errs, t.tracer.Shutdown(ctx), t.meter.Shutdown(ctx))...)
}

// logOTelErrors sends the SDK's asynchronous errors (a failed export, say)
// to the log.
func logOTelErrors(log *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("opentelemetry", "err", err) }))
}
