package semconv

import "go.opentelemetry.io/otel/attribute"

// Kubernetes and container attributes (OpenTelemetry resource attributes),
// set by package podjoin on the series of a process or a device it can
// place in a pod.
const (
	K8sPodName       = attribute.Key("k8s.pod.name")
	K8sPodUID        = attribute.Key("k8s.pod.uid")
	K8sNamespaceName = attribute.Key("k8s.namespace.name")
	K8sContainerName = attribute.Key("k8s.container.name")
	ContainerID      = attribute.Key("container.id")
)

// podAttrs are the attributes of the pod holding a GPU device, on the
// device's series while exactly one pod holds it.
var podAttrs = []attribute.Key{K8sNamespaceName, K8sPodName, K8sPodUID, K8sContainerName}

// processAttrs place a process in its container and pod, and name its
// service, on the process's series and spans.
var processAttrs = with(podAttrs, ContainerID, ServiceName)

// Self-metric attributes of package podjoin.
const (
	XpuscopePodjoinResult      = attribute.Key("xpuscope.podjoin.result")
	XpuscopePodjoinKubeletCall = attribute.Key("xpuscope.podjoin.kubelet.call")
)

// Values of XpuscopePodjoinResult.
const (
	PodjoinResultHit      = "hit"       // served from the per-process cache
	PodjoinResultMiss     = "miss"      // read from procfs: a new process, an expired entry, or a reused pid
	PodjoinResultPartial  = "partial"   // read from procfs, but the environment was not readable: no trace context or service name
	PodjoinResultNotFound = "not_found" // no such process (exited), or its procfs entry was not readable
)

// Values of XpuscopePodjoinKubeletCall: the kubelet PodResources v1 calls.
const (
	PodjoinCallList        = "list"
	PodjoinCallAllocatable = "get_allocatable_resources"
)

var (
	XpuscopePodjoinResolves = Metric{
		Name: "xpuscope.podjoin.resolves", Kind: Counter, Unit: "{resolve}", Origin: Self,
		Description: "Process lookups of the pod resolver, by how they were answered.",
		Attributes:  []attribute.Key{XpuscopePodjoinResult},
	}
	XpuscopePodjoinKubeletUp = Metric{
		Name: "xpuscope.podjoin.kubelet.up", Kind: Gauge, Unit: "1", Origin: Self,
		Description: "1 while the last List call to the kubelet's PodResources API succeeded, else 0.",
		Note:        "Reported only while the kubelet client is on. While it is 0 the resolver serves the last device allocations it read, for at most its TTL after they were read, and retries with backoff.",
	}
	XpuscopePodjoinKubeletErrors = Metric{
		Name: "xpuscope.podjoin.kubelet.errors", Kind: Counter, Unit: "{error}", Origin: Self,
		Description: "Failed calls to the kubelet's PodResources API, by call.",
		Attributes:  []attribute.Key{XpuscopePodjoinKubeletCall},
		Note:        "A kubelet that does not serve GetAllocatableResources (Unimplemented) is not counted.",
	}
	XpuscopePodjoinDevicesShared = Metric{
		Name: "xpuscope.podjoin.devices.shared", Kind: UpDownCounter, Unit: "{device}", Origin: Self,
		Description: "GPU devices allocated to more than one pod (time-slicing, MPS, shared replicas): their device-level series carry no pod attributes.",
	}
)

var podjoinMetrics = []Metric{
	XpuscopePodjoinResolves, XpuscopePodjoinKubeletUp, XpuscopePodjoinKubeletErrors, XpuscopePodjoinDevicesShared,
}

var podjoinAttributes = []Attribute{
	{K8sPodName, "string", "Resource attribute: the Kubernetes pod a process or a device belongs to, on the process's series and spans, or the device's series. Processes: from the names of the log directories the kubelet writes (/var/log/pods, /var/log/containers); devices: from the kubelet PodResources API, only while exactly one pod holds the device.", OTel, nil},
	{K8sPodUID, "string", "Resource attribute: the UID of the Kubernetes pod, in its dashed form: a process's from its cgroup path, a device's from the kubelet's pod log directory.", OTel, nil},
	{K8sNamespaceName, "string", "Resource attribute: the namespace of the Kubernetes pod.", OTel, nil},
	{K8sContainerName, "string", "Resource attribute: the name of the container in its pod spec. On a device, set only when one container of the pod holds it.", OTel, nil},
	{ContainerID, "string", "Resource attribute: the container runtime's id of the process's container (64 hex digits), from its cgroup path.", OTel, nil},
	{XpuscopePodjoinResult, "string", "How the pod resolver answered a process lookup.", Self,
		[]string{PodjoinResultHit, PodjoinResultMiss, PodjoinResultPartial, PodjoinResultNotFound}},
	{XpuscopePodjoinKubeletCall, "string", "The kubelet PodResources v1 call that failed.", Self,
		[]string{PodjoinCallList, PodjoinCallAllocatable}},
}
