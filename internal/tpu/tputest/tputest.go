// Package tputest serves the TPU runtime's metrics service on loopback,
// for the tests of package tpu and of the gpu Source: a real gRPC server,
// with local credentials as libtpu's, implementing the service from its
// generated code, that answers what the test gives it; and sysfs trees of
// TPU VMs.
package tputest

import (
	"context"
	"io/fs"
	"net"
	"strconv"
	"sync"
	"testing"
	"testing/fstest"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/local"
	"google.golang.org/grpc/status"

	"github.com/xpuscope/xpuscope/internal/tpu/runtimepb"
)

// Server is a metrics service on 127.0.0.1.
type Server struct {
	runtimepb.UnimplementedRuntimeMetricServiceServer

	Port int

	mu      sync.Mutex
	metrics map[string]*runtimepb.TPUMetric
	hang    chan struct{} // while not nil, calls wait on it
	calls   map[string]int
	lis     net.Listener
	srv     *grpc.Server
}

// Start serves metrics on a free port of 127.0.0.1 until the test ends.
func Start(t testing.TB, metrics ...*runtimepb.TPUMetric) *Server {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Port: lis.Addr().(*net.TCPAddr).Port, calls: map[string]int{}}
	s.Set(metrics...)
	s.serve(lis)
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) serve(lis net.Listener) {
	srv := grpc.NewServer(grpc.Creds(local.NewCredentials()))
	runtimepb.RegisterRuntimeMetricServiceServer(srv, s)
	s.mu.Lock()
	s.lis, s.srv = lis, srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(lis) }()
}

// Set replaces the metrics served.
func (s *Server) Set(metrics ...*runtimepb.TPUMetric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.metrics = map[string]*runtimepb.TPUMetric{}
	for _, m := range metrics {
		s.metrics[m.GetName()] = m
	}
}

// Stop stops serving: nothing listens at the port any more. Calls after
// the first do nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	srv, h := s.srv, s.hang
	s.srv, s.hang = nil, nil
	s.mu.Unlock()
	if h != nil {
		close(h)
	}
	if srv != nil {
		srv.Stop()
	}
}

// Restart serves again on the same port, as a workload that starts anew.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	lis, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)))
	if err != nil {
		t.Fatal(err)
	}
	s.serve(lis)
}

// Hang makes calls wait until Stop or Unhang, as a service that stopped
// answering.
func (s *Server) Hang() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hang == nil {
		s.hang = make(chan struct{})
	}
}

// Unhang lets the waiting calls and the next ones go on.
func (s *Server) Unhang() {
	s.mu.Lock()
	h := s.hang
	s.hang = nil
	s.mu.Unlock()
	if h != nil {
		close(h)
	}
}

// Calls is how many times method was called (ListSupportedMetrics,
// GetRuntimeMetric).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

func (s *Server) wait(ctx context.Context, method string) error {
	s.mu.Lock()
	s.calls[method]++
	h := s.hang
	s.mu.Unlock()
	if h == nil {
		return nil
	}
	select {
	case <-h:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ListSupportedMetrics lists the metrics Set gave.
func (s *Server) ListSupportedMetrics(ctx context.Context, _ *runtimepb.ListSupportedMetricsRequest) (*runtimepb.ListSupportedMetricsResponse, error) {
	if err := s.wait(ctx, "ListSupportedMetrics"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := &runtimepb.ListSupportedMetricsResponse{}
	for name := range s.metrics {
		resp.SupportedMetric = append(resp.SupportedMetric, &runtimepb.SupportedMetric{MetricName: name})
	}
	return resp, nil
}

// GetRuntimeMetric answers the metric Set gave, NotFound otherwise.
func (s *Server) GetRuntimeMetric(ctx context.Context, req *runtimepb.MetricRequest) (*runtimepb.MetricResponse, error) {
	if err := s.wait(ctx, "GetRuntimeMetric"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.metrics[req.GetMetricName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "metric %q is not supported", req.GetMetricName())
	}
	return &runtimepb.MetricResponse{Metric: m}, nil
}

// The shapes in which libtpu names a point's device.

// IntDevice is an older libtpu's point attribute: the device as an
// int_attr (the memory and duty-cycle metrics of a v4 VM).
func IntDevice(ordinal int) *runtimepb.Attribute {
	return &runtimepb.Attribute{Key: "device-id", Value: &runtimepb.AttrValue{Attr: &runtimepb.AttrValue_IntAttr{IntAttr: int64(ordinal)}}}
}

// ListDevice is a newer libtpu's: a key-value list with the device
// ordinal as a string of digits, beside the core type (a v5e VM).
func ListDevice(ordinal int) *runtimepb.Attribute {
	return &runtimepb.Attribute{Value: &runtimepb.AttrValue{Attr: &runtimepb.AttrValue_KvlistAttr{KvlistAttr: &runtimepb.KeyValueList{
		Attributes: []*runtimepb.Attribute{
			{Key: "core_type", Value: &runtimepb.AttrValue{Attr: &runtimepb.AttrValue_StringAttr{StringAttr: "tensor_core"}}},
			{Key: "device_ordinal", Value: &runtimepb.AttrValue{Attr: &runtimepb.AttrValue_StringAttr{StringAttr: strconv.Itoa(ordinal)}}},
		},
	}}}}
}

// IntGauge is an integer gauge point of a device.
func IntGauge(a *runtimepb.Attribute, v int64) *runtimepb.Metric {
	return &runtimepb.Metric{Attribute: a, Measure: &runtimepb.Metric_Gauge{Gauge: &runtimepb.Gauge{Value: &runtimepb.Gauge_AsInt{AsInt: v}}}}
}

// DoubleGauge is a double gauge point of a device.
func DoubleGauge(a *runtimepb.Attribute, v float64) *runtimepb.Metric {
	return &runtimepb.Metric{Attribute: a, Measure: &runtimepb.Metric_Gauge{Gauge: &runtimepb.Gauge{Value: &runtimepb.Gauge_AsDouble{AsDouble: v}}}}
}

// Exponential is a distribution point of a device, over exponential
// buckets: counts[0] the underflow bucket, counts[len-1] the overflow.
func Exponential(a *runtimepb.Attribute, mean, scale, growth float64, counts ...int64) *runtimepb.Metric {
	var n int64
	for _, c := range counts {
		n += c
	}
	return &runtimepb.Metric{Attribute: a, Measure: &runtimepb.Metric_Distribution{Distribution: &runtimepb.Distribution{
		Count: n, Mean: mean,
		BucketOptions: &runtimepb.Distribution_BucketOptions{Options: &runtimepb.Distribution_BucketOptions_ExponentialBuckets{
			ExponentialBuckets: &runtimepb.Distribution_BucketOptions_Exponential{NumFiniteBuckets: int32(len(counts) - 2), GrowthFactor: growth, Scale: scale},
		}},
		BucketCounts: counts,
	}}}
}

// Metric is a metric of points.
func Metric(name string, points ...*runtimepb.Metric) *runtimepb.TPUMetric {
	return &runtimepb.TPUMetric{Name: name, Metrics: points}
}

// PCI is one PCI function of a sysfs fixture.
type PCI struct {
	Address, Vendor, Device, Subsystem string
	// Accel is N of the function's accel/accelN (the accel driver);
	// IOMMUGroup the group its iommu_group links to (VFIO). -1: none.
	Accel, IOMMUGroup int
}

// Sysfs is a sysfs tree holding fns under bus/pci/devices, as a TPU VM's.
func Sysfs(fns ...PCI) fstest.MapFS {
	fsys := fstest.MapFS{"bus/pci/devices": &fstest.MapFile{Mode: fs.ModeDir | 0o755}}
	for _, f := range fns {
		dir := "bus/pci/devices/" + f.Address
		fsys[dir+"/vendor"] = &fstest.MapFile{Data: []byte(f.Vendor + "\n")}
		fsys[dir+"/device"] = &fstest.MapFile{Data: []byte(f.Device + "\n")}
		fsys[dir+"/subsystem_device"] = &fstest.MapFile{Data: []byte(f.Subsystem + "\n")}
		if f.Accel >= 0 {
			fsys[dir+"/accel/accel"+strconv.Itoa(f.Accel)+"/dev"] = &fstest.MapFile{Data: []byte("261:" + strconv.Itoa(f.Accel) + "\n")}
		}
		if f.IOMMUGroup >= 0 {
			fsys[dir+"/iommu_group"] = &fstest.MapFile{Mode: fs.ModeSymlink, Data: []byte("../../../../kernel/iommu_groups/" + strconv.Itoa(f.IOMMUGroup))}
		}
	}
	return fsys
}

// V4 is a TPU v4 VM of n chips on the accel driver (device 0x005e), their
// PCI addresses in the reverse of their accel numbers' order, beside a
// NIC of another vendor.
func V4(n int) fstest.MapFS {
	fns := []PCI{{Address: "0000:00:03.0", Vendor: "0x1af4", Device: "0x1000", Accel: -1, IOMMUGroup: -1}}
	for i := range n {
		fns = append(fns, PCI{Address: "0000:00:" + hex2(4+n-1-i) + ".0", Vendor: "0x1ae0", Device: "0x005e", Subsystem: "0x0000", Accel: i, IOMMUGroup: -1})
	}
	return Sysfs(fns...)
}

// V5e is a TPU v5e VM of n chips bound to VFIO (device 0x0063), in IOMMU
// groups numbered 10, 9, 8, … in PCI address order: the runtime numbers
// them by group.
func V5e(n int) fstest.MapFS {
	var fns []PCI
	for i := range n {
		fns = append(fns, PCI{Address: "0000:00:" + hex2(5+i) + ".0", Vendor: "0x1ae0", Device: "0x0063", Subsystem: "0x0000", Accel: -1, IOMMUGroup: 10 - i})
	}
	return Sysfs(fns...)
}

// V7x is a TPU7x VM of n chips (device 0x0076), each of two TensorCores,
// functions 0 and 1 of one PCI device, bound to VFIO.
func V7x(n int) fstest.MapFS {
	var fns []PCI
	for i := range n {
		for core := range 2 {
			fns = append(fns, PCI{Address: "0000:01:" + hex2(i) + "." + strconv.Itoa(core), Vendor: "0x1ae0", Device: "0x0076", Subsystem: "0x0000", Accel: -1, IOMMUGroup: 20 + 2*i + core})
		}
	}
	return Sysfs(fns...)
}

func hex2(n int) string {
	s := strconv.FormatInt(int64(n), 16)
	if len(s) < 2 {
		s = "0" + s
	}
	return s
}
