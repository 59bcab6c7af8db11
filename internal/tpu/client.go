package tpu

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/local"
	"google.golang.org/grpc/status"

	"github.com/xpuscope/xpuscope/internal/tpu/runtimepb"
)

// Endpoint is one TPU runtime's metrics service: a gRPC connection with
// local credentials (the service takes nothing else), made lazily and
// kept; the metrics it serves, once it said.
type Endpoint struct {
	Addr      string
	conn      *grpc.ClientConn
	client    runtimepb.RuntimeMetricServiceClient
	supported map[string]bool // nil until ListSupportedMetrics answered
}

// retryAfter is the longest the connection waits before trying a
// service that was not there again: a workload that starts is read at
// the next poll or the one after.
const retryAfter = time.Second

// NewEndpoint makes the endpoint of host:port. It does not connect.
func NewEndpoint(host string, port int) (*Endpoint, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(local.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, MaxDelay: retryAfter},
			MinConnectTimeout: time.Second,
		}))
	if err != nil {
		return nil, fmt.Errorf("tpu: %s: %w", addr, err)
	}
	return &Endpoint{Addr: addr, conn: conn, client: runtimepb.NewRuntimeMetricServiceClient(conn)}, nil
}

// Close closes the connection.
func (e *Endpoint) Close() error { return e.conn.Close() }

// Scrape asks the service for each of names it serves (it lists them
// first, once), within ctx: got receives each response, failed each
// metric whose call failed. The error is the listing's: the service is
// not there, or does not answer.
func (e *Endpoint) Scrape(ctx context.Context, names []string, got func(name string, r *runtimepb.MetricResponse), failed func(name string, err error)) error {
	if e.supported == nil {
		resp, err := e.client.ListSupportedMetrics(ctx, &runtimepb.ListSupportedMetricsRequest{})
		if err != nil {
			return err
		}
		e.supported = map[string]bool{}
		for _, m := range resp.GetSupportedMetric() {
			e.supported[m.GetMetricName()] = true
		}
	}
	for _, n := range names {
		if !e.supported[n] {
			continue
		}
		resp, err := e.client.GetRuntimeMetric(ctx, &runtimepb.MetricRequest{MetricName: n})
		if err != nil {
			if status.Code(err) == codes.Unavailable || status.Code(err) == codes.DeadlineExceeded {
				e.supported = nil // the service went: list again when it is back
				return err
			}
			failed(n, err)
			continue
		}
		got(n, resp)
	}
	return nil
}

// Supported reports whether the service listed name; false before it
// answered.
func (e *Endpoint) Supported(name string) bool { return e.supported[name] }

// Reason names an error of the service for a self-metric: no_listener
// when nothing listens at its port (no workload runs), timeout, or the
// gRPC code.
func Reason(err error) string {
	st, _ := status.FromError(err)
	switch {
	case IsNoListener(err):
		return "no_listener"
	case st.Code() == codes.DeadlineExceeded || st.Code() == codes.Canceled && strings.Contains(err.Error(), "deadline"):
		return "timeout"
	}
	return st.Code().String()
}
