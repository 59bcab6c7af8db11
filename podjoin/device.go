package podjoin

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/xpuscope/xpuscope/semconv"
)

// NormalizeDeviceID returns the physical device that a device plugin's
// device ID names, without the replica suffix a sharing mode adds: "::N"
// (NVIDIA time-slicing and MPS: GPU-<uuid>::3, MIG-<uuid>::3), "-slice-N"
// (AMD time-slicing: 0000:03:00.0-slice-2) and Intel's shared-dev-num "-N"
// (card0-1 is card0). Any other ID (an NVIDIA GPU or MIG UUID, an AMD PCI
// address) comes back as given, without surrounding space.
func NormalizeDeviceID(id string) string {
	id = strings.TrimSpace(id)
	if i := strings.LastIndex(id, "::"); i > 0 && allDigitsString(id[i+2:]) {
		return id[:i]
	}
	if i := strings.LastIndex(id, "-slice-"); i > 0 && allDigitsString(id[i+len("-slice-"):]) {
		return id[:i]
	}
	if card, n, ok := strings.Cut(id, "-"); ok && len(card) > 4 && strings.HasPrefix(card, "card") &&
		allDigitsString(card[4:]) && allDigitsString(n) {
		return card
	}
	return id
}

func allDigitsString(s string) bool { return allDigits([]byte(s)) }

// gpuResource reports whether a device-plugin resource is a GPU one
// (nvidia.com/gpu, nvidia.com/mig-1g.10gb, nvidia.com/gpu.shared,
// amd.com/gpu, gpu.intel.com/i915, gpu.intel.com/xe). Intel's monitoring
// resources (gpu.intel.com/i915_monitoring, device "all") give a pod read
// access to every GPU, not a GPU of its own.
func gpuResource(name string) bool {
	for _, vendor := range []string{"nvidia.com/", "amd.com/", "gpu.intel.com/"} {
		if strings.HasPrefix(name, vendor) {
			return !strings.HasSuffix(name, "_monitoring")
		}
	}
	return false
}

// Owner is the pod a GPU device is allocated to.
type Owner struct {
	Namespace string
	Pod       string
	// PodUID is the pod's UID where the pod log directory names it (the
	// PodResources API does not carry it); "" otherwise.
	PodUID string
	// Container is the container holding the device; "" when several
	// containers of the pod list it (an init container's device reused by
	// an app container, say).
	Container string
}

// Attributes returns the owner's k8s.* attributes, leaving out those not
// known.
func (o Owner) Attributes() []attribute.KeyValue {
	kvs := make([]attribute.KeyValue, 0, 4)
	kvs = appendNonEmpty(kvs, semconv.K8sNamespaceName, o.Namespace)
	kvs = appendNonEmpty(kvs, semconv.K8sPodName, o.Pod)
	kvs = appendNonEmpty(kvs, semconv.K8sPodUID, o.PodUID)
	kvs = appendNonEmpty(kvs, semconv.K8sContainerName, o.Container)
	return kvs
}

func appendNonEmpty(kvs []attribute.KeyValue, k attribute.Key, v string) []attribute.KeyValue {
	if v == "" {
		return kvs
	}
	return append(kvs, k.String(v))
}

// devices is what one PodResources List says about GPU devices.
type devices struct {
	// owners maps a normalised device ID to its only pod. A device of
	// several pods is absent: its value must not be copied onto each.
	owners    map[string]Owner
	allocated int // distinct physical devices allocated
	shared    int // of which allocated to more than one pod
	pods      int // pods listed (up to the cap)
	truncated bool
}

// Caps on what one List is allowed to make the resolver keep.
const (
	maxPods    = 4096
	maxDevices = 16384
)

type holder struct {
	owner   Owner
	several bool // held by more than one pod
}

// indexDevices builds the device map of a List response: every GPU device
// ID, normalised, with the one pod (and container) holding it. A device
// listed by two pods (replicas of one GPU under time-slicing, or the same
// ID twice) gets no owner.
func indexDevices(pods []*podresourcesv1.PodResources) devices {
	var d devices
	held := map[string]*holder{}
	for _, p := range pods {
		if d.pods == maxPods {
			d.truncated = true
			break
		}
		d.pods++
		for _, c := range p.GetContainers() {
			for _, dev := range c.GetDevices() {
				if !gpuResource(dev.GetResourceName()) {
					continue
				}
				for _, id := range dev.GetDeviceIds() {
					key := NormalizeDeviceID(id)
					if key == "" {
						continue
					}
					h := held[key]
					switch {
					case h == nil && len(held) == maxDevices:
						d.truncated = true
					case h == nil:
						held[key] = &holder{owner: Owner{Namespace: p.GetNamespace(), Pod: p.GetName(), Container: c.GetName()}}
					case h.owner.Namespace != p.GetNamespace() || h.owner.Pod != p.GetName():
						h.several = true
					case h.owner.Container != c.GetName():
						h.owner.Container = ""
					}
				}
			}
		}
	}
	d.owners = make(map[string]Owner, len(held))
	d.allocated = len(held)
	for k, h := range held {
		if h.several {
			d.shared++
			continue
		}
		d.owners[k] = h.owner
	}
	return d
}
