package podjoin

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Kubelet client limits.
const (
	// callTimeout bounds one PodResources call.
	callTimeout = 5 * time.Second
	// maxResponse bounds a PodResources answer (gRPC's default is 4 MiB;
	// a node with hundreds of pods, each listing CPUs and memory, can
	// come near it).
	maxResponse = 16 << 20
)

// kubeletClient calls the kubelet's PodResources v1 API over its unix
// socket: no credentials, no API server. A connection that failed is
// dropped, so that the next attempt dials afresh rather than waiting out
// gRPC's own reconnect backoff.
type kubeletClient struct {
	path string
	conn *grpc.ClientConn
	// noAllocatable: the kubelet on this connection answered
	// GetAllocatableResources with Unimplemented (before Kubernetes 1.23,
	// or the feature gate off).
	noAllocatable bool
}

// kubeletCall names a PodResources call, indexing the error counts.
type kubeletCall int

const (
	callList kubeletCall = iota
	callAllocatable
	numCalls
)

// fetch lists the pods' resources and, where the kubelet serves it,
// counts the allocatable GPU devices (-1 where it does not). A failed
// GetAllocatableResources leaves the List good.
func (k *kubeletClient) fetch(ctx context.Context) (pods []*podresourcesv1.PodResources, allocatable int, listErr, allocErr error) {
	allocatable = -1
	if k.conn == nil {
		conn, err := grpc.NewClient("unix://"+k.path,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxResponse)))
		if err != nil {
			return nil, allocatable, fmt.Errorf("podjoin: kubelet PodResources at %s: %w", k.path, err), nil
		}
		k.conn, k.noAllocatable = conn, false
	}
	client := podresourcesv1.NewPodResourcesListerClient(k.conn)
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := client.List(cctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		k.close()
		return nil, allocatable, fmt.Errorf("podjoin: kubelet PodResources at %s: List: %w", k.path, err), nil
	}
	if !k.noAllocatable {
		a, err := client.GetAllocatableResources(cctx, &podresourcesv1.AllocatableResourcesRequest{})
		switch {
		case status.Code(err) == codes.Unimplemented:
			k.noAllocatable = true
		case err != nil:
			allocErr = fmt.Errorf("podjoin: kubelet PodResources at %s: GetAllocatableResources: %w", k.path, err)
		default:
			allocatable = countGPUs(a.GetDevices())
		}
	}
	return resp.GetPodResources(), allocatable, nil, allocErr
}

// countGPUs counts the distinct physical GPU devices of a list, at most
// maxDevices.
func countGPUs(devs []*podresourcesv1.ContainerDevices) int {
	seen := map[string]bool{}
	for _, d := range devs {
		if !gpuResource(d.GetResourceName()) {
			continue
		}
		for _, id := range d.GetDeviceIds() {
			if len(seen) == maxDevices {
				return len(seen)
			}
			seen[NormalizeDeviceID(id)] = true
		}
	}
	return len(seen)
}

func (k *kubeletClient) close() {
	if k.conn != nil {
		k.conn.Close()
		k.conn = nil
	}
}

// backoff is the wait before the next attempt after failures consecutive
// failed ones: a quarter of the refresh interval first (a restarting
// kubelet is often back within seconds), doubling to four intervals.
func backoff(interval time.Duration, failures int) time.Duration {
	d := interval / 4
	for i := 1; i < failures && d < 4*interval; i++ {
		d *= 2
	}
	return max(min(d, 4*interval), time.Millisecond)
}
