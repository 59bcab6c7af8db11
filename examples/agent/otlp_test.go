package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/llmserver"
	"github.com/xpuscope/xpuscope/semconv"
)

// receiver is an in-test OTLP receiver: it keeps the names of the metrics
// and spans it is sent, and the resource attributes.
type receiver struct {
	metricspb.UnimplementedMetricsServiceServer
	tracepb.UnimplementedTraceServiceServer

	mu       sync.Mutex
	metrics  map[string]bool
	spans    []string
	resource map[string]string
}

func newReceiver() *receiver {
	return &receiver{metrics: map[string]bool{}, resource: map[string]string{}}
}

func (r *receiver) Export(_ context.Context, req *metricspb.ExportMetricsServiceRequest) (*metricspb.ExportMetricsServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		for _, kv := range rm.GetResource().GetAttributes() {
			r.resource[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				r.metrics[m.GetName()] = true
			}
		}
	}
	return &metricspb.ExportMetricsServiceResponse{}, nil
}

// traceService adapts the receiver to the trace service (both services
// name their method Export).
type traceService struct{ *receiver }

func (t traceService) Export(_ context.Context, req *tracepb.ExportTraceServiceRequest) (*tracepb.ExportTraceServiceResponse, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				t.spans = append(t.spans, s.GetName())
			}
		}
	}
	return &tracepb.ExportTraceServiceResponse{}, nil
}

func (r *receiver) has(metric string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.metrics[metric]
}

func (r *receiver) spanNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// serveGRPC serves r over gRPC on loopback and returns host:port.
func serveGRPC(t *testing.T, r *receiver) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	metricspb.RegisterMetricsServiceServer(s, r)
	tracepb.RegisterTraceServiceServer(s, traceService{r})
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	return ln.Addr().String()
}

// serveHTTP serves r over OTLP/HTTP (protobuf) on loopback and returns the
// base URL.
func serveHTTP(t *testing.T, r *receiver) string {
	mux := http.NewServeMux()
	handle := func(path string, req proto.Message, export func() (proto.Message, error)) {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, hr *http.Request) {
			b, err := io.ReadAll(hr.Body)
			if err == nil {
				err = proto.Unmarshal(b, req)
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			resp, _ := export()
			out, _ := proto.Marshal(resp)
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write(out)
		})
	}
	var mreq metricspb.ExportMetricsServiceRequest
	var treq tracepb.ExportTraceServiceRequest
	var mu sync.Mutex // one request at a time per path: the messages are reused
	handle("/v1/metrics", &mreq, func() (proto.Message, error) {
		mu.Lock()
		defer mu.Unlock()
		return r.Export(context.Background(), &mreq)
	})
	handle("/v1/traces", &treq, func() (proto.Message, error) {
		mu.Lock()
		defer mu.Unlock()
		return traceService{r}.Export(context.Background(), &treq)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestOTLPExport: the agent exports its metrics, and the span of an LLM
// call it captured, to an OTLP receiver over gRPC and over HTTP, configured
// by the standard environment variables alone; the resource names the
// node from the downward API.
func TestOTLPExport(t *testing.T) {
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(strings.ReplaceAll(protocol, "/", "_"), func(t *testing.T) {
			r := newReceiver()
			endpoint := "http://" + serveGRPC(t, r)
			if protocol != "grpc" {
				endpoint = serveHTTP(t, r)
			}
			// No -duration: on a loaded machine the agent's start can
			// take seconds; it runs until the test is done with it.
			cmd := agent(t, "-listen", "")
			cmd.Env = append(cmd.Env,
				"OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint,
				"OTEL_EXPORTER_OTLP_PROTOCOL="+protocol,
				"OTEL_METRIC_EXPORT_INTERVAL=300",
				"OTEL_BSP_SCHEDULE_DELAY=100",
				"K8S_NODE_NAME=gpu-node-7")
			cmd.Stdout = io.Discard
			var stderr testutil.SyncBuffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()

			stop := func() error {
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					return err
				}
				return <-done
			}
			ok := poll(30*time.Second, func() bool { return r.has(semconv.XpuscopeAgentFeatureState.Name) })
			require.True(t, ok, "no %s received over %s; agent: %s", semconv.XpuscopeAgentFeatureState.Name, protocol, stderr.String())
			r.mu.Lock()
			require.Equal(t, "gpu-node-7", r.resource[string(semconv.K8sNodeName)])
			require.Equal(t, "xpuscope-agent", r.resource[string(semconv.ServiceName)])
			require.NotEmpty(t, r.resource["host.name"])
			r.mu.Unlock()

			if os.Geteuid() != 0 {
				require.NoError(t, stop(), "agent: %s", stderr.String())
				testutil.SkipOrFail(t, "capturing an LLM call needs root")
			}
			// An LLM call the agent captures: its span is exported. The
			// first curl may run before the agent has probed libssl.
			s := llmserver.Start(t, llmserver.Options{TLS: true})
			ok = poll(30*time.Second, func() bool {
				out, err := exec.Command("curl", "-sS", "--http1.1", "--cacert", s.CAFile, "-H", "Content-Type: application/json",
					"-d", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
					s.URL+"/v1/chat/completions").CombinedOutput()
				require.NoError(t, err, "%s", out)
				time.Sleep(300 * time.Millisecond)
				return slices.Contains(r.spanNames(), "chat gpt-4o-mini")
			})
			require.True(t, ok, "no span received: %v; agent: %s", r.spanNames(), stderr.String())
			require.NoError(t, stop(), "agent: %s", stderr.String())
		})
	}
}

func poll(d time.Duration, f func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		if f() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
