// Package podjoin places processes and GPU devices in their containers and
// Kubernetes pods, and reads the trace context a workload was started
// with, so that the other Sources can label their series with
// k8s.pod.name, k8s.pod.uid, k8s.namespace.name, k8s.container.name,
// container.id and service.name, and parent their spans.
//
// # Processes
//
// Resolver.Process reads /proc/<pid>/cgroup (ParseCgroup: cgroup v1 and
// v2; containerd, CRI-O, Docker and Podman; the systemd and cgroupfs
// layouts, with the kubepods, kubepods-burstable and kubepods-besteffort
// levels) for the container id and pod UID, and five variables of
// /proc/<pid>/environ (ParseEnviron): TRACEPARENT and TRACESTATE
// (ParseTraceparent, W3C Trace Context), OTEL_RESOURCE_ATTRIBUTES
// (ParseResourceAttributes) and OTEL_SERVICE_NAME. The allowlist has two
// names more, which the Resolver does not use: MLFLOW_TRACKING_URI, which
// genai/training reads (where a job's MLflow file store is), and
// TPU_RUNTIME_METRICS_PORTS, which the gpu Source's TPU backend reads
// through ReadEnviron. No other variable is kept, logged or exported: the
// environment is scanned in a reused buffer, at most 1 MiB of it, which
// is zeroed after each read.
//
// The kubelet's PodResources API knows no pod UIDs and no container ids,
// so the pod name, namespace and container name of a process come from
// the names of the kubelet's log directories, <log root>/pods/<namespace>_
// <pod>_<uid> and <log root>/containers/<pod>_<namespace>_<container>-<id>.log
// (WithLogRoot; only names are read, never a log). Without them a process
// still gets its pod UID and container id.
//
// Entries are cached per pid and process start time (field 22 of
// /proc/<pid>/stat, read on every lookup), so a reused pid never gets the
// old process's pod. The cache is bounded (WithCacheSize, least recently
// used first out), its entries are read again after the TTL (WithTTL), and
// those of exited processes are dropped at each refresh, or at once with
// Forget.
//
// # Devices
//
// A goroutine asks the kubelet's PodResources v1 API (List, and
// GetAllocatableResources where the kubelet serves it) over its unix socket
// (WithKubeletSocket; no API server, no credentials) every refresh
// interval (WithRefresh) which pod holds which GPU: NVIDIA GPU and MIG
// UUIDs (with the ::N suffix of time-slicing replicas), AMD
// (amd.com/gpu, PCI addresses, -slice-N replicas) and Intel
// (gpu.intel.com/i915 and xe, cardN-M replicas) resources.
// Resolver.Device gives a device's pod only when exactly one pod holds it:
// a GPU shared by several pods (time-slicing, MPS) has no owner, so that
// its device-level values are never copied onto each pod. The container
// is named only when one container of the pod holds the device.
//
// A kubelet that is missing or restarting does not stop the Resolver: New
// succeeds, processes are still resolved, Status reports the kubelet down
// and why, xpuscope.podjoin.kubelet.up is 0, and the client retries after
// a quarter of the refresh interval, backing off to four intervals. The
// last allocations read are served for at most the TTL after they were
// read: allocations change only through the kubelet, so they cannot go
// wrong while it is down, except for pods that end meanwhile. When the
// kubelet answers again, its allocations replace them.
//
// # Sources
//
// Packages gpu, cudatrace and genai take a Resolver as an option
// (WithResolver), each through a small interface of its own, which
// ProcessAttributes, DeviceAttributes and Forget satisfy:
// ProcessAttributes gives a process's k8s.* attributes, container.id,
// service.name and the rest of its OTEL_RESOURCE_ATTRIBUTES (bounded in
// number and length; ours win where the workload claims the same key) and
// its remote parent span; DeviceAttributes gives the attributes of the one pod
// holding a device. The Sources ask once per process, when they first see
// it, and once per device and poll; never per event, since even a cached
// lookup reads /proc/<pid>/stat.
//
// # Errors
//
// New wraps xpuscope.ErrUnavailable when the procfs root cannot be opened.
// A bad option is a fault. Nothing that fails later stops the Resolver:
// lookups are counted in xpuscope.podjoin.resolves by result, kubelet
// failures in xpuscope.podjoin.kubelet.errors.
package podjoin
