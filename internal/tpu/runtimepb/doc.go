// Package runtimepb is the generated Go code of the TPU runtime's metrics
// service (tpu.monitoring.runtime.RuntimeMetricService), which libtpu
// serves over gRPC while a workload runs: messages and client, and the
// server interface the tests implement on loopback.
// tpu_metric_service.proto says where its definition comes from.
package runtimepb

//go:generate go run ../../cmd/protogen -proto tpu_metric_service.proto
