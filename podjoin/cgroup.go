package podjoin

import (
	"bytes"
	"strings"
)

// Cgroup is what a process's cgroup membership says about its container
// and pod.
type Cgroup struct {
	// Runtime is the container runtime the path names: RuntimeContainerd,
	// RuntimeCRIO, RuntimeDocker or RuntimePodman. It is "" where the
	// path does not say, as for a bare id under the cgroupfs layout, which
	// containerd and Docker both write.
	Runtime string
	// ContainerID is the runtime's container id, 64 lower-case hex
	// digits; "" outside a container.
	ContainerID string
	// PodUID is the Kubernetes pod UID in its dashed form (the systemd
	// layout writes it with underscores); "" outside a pod. Static pods
	// have 32-digit UIDs without dashes.
	PodUID string
	// QoSClass is the pod's QoS class (QoSGuaranteed, QoSBurstable,
	// QoSBestEffort); "" outside a pod.
	QoSClass string
}

// Container runtimes.
const (
	RuntimeContainerd = "containerd"
	RuntimeCRIO       = "cri-o"
	RuntimeDocker     = "docker"
	RuntimePodman     = "podman"
)

// Pod QoS classes, spelt as Kubernetes spells them.
const (
	QoSGuaranteed = "Guaranteed"
	QoSBurstable  = "Burstable"
	QoSBestEffort = "BestEffort"
)

// maxCgroupLines bounds the lines ParseCgroup reads: a cgroup v1 host has
// about 13 hierarchies, a v2 host one line.
const maxCgroupLines = 64

// scopePrefixes name a container's cgroup under the systemd layout
// (<prefix><id>.scope) and CRI-O's under cgroupfs (crio-<id>). A
// conmon-<id> scope is the monitor, not the container: its rest is not an
// id, so it does not match.
var scopePrefixes = []struct{ prefix, runtime string }{
	{"cri-containerd-", RuntimeContainerd},
	{"crio-", RuntimeCRIO},
	{"docker-", RuntimeDocker},
	{"libpod-", RuntimePodman},
}

// ParseCgroup reads the contents of /proc/<pid>/cgroup: lines of
// hierarchy-id:controllers:path, one (cgroup v2, "0::/path") or one per
// hierarchy (v1, or both in hybrid mode). It understands the systemd layout
// (kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/
// cri-containerd-<id>.scope, crio-<id>.scope, docker-<id>.scope) and the
// cgroupfs one (/kubepods/besteffort/pod<uid>/<id>, crio-<id>, /docker/<id>),
// also under a kubelet cgroup root or seen from another cgroup namespace
// (/../../kubepods-…). Of the lines, it returns what the most informative
// one says (container and pod, then container, then pod), the first of
// equals. Malformed lines are skipped; a process in no container gives the
// zero Cgroup.
//
// Below a pod, the container is the first container cgroup under the pod
// (a container nesting its own, as Docker in a pod does, is not what the
// kubelet knows). Outside a pod it is the innermost one.
func ParseCgroup(b []byte) Cgroup {
	var best Cgroup
	for n := 0; len(b) > 0 && n < maxCgroupLines; n++ {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		id, rest, ok := bytes.Cut(line, []byte{':'})
		if !ok || !allDigits(id) {
			continue
		}
		_, path, ok := bytes.Cut(rest, []byte{':'})
		if !ok || len(path) == 0 || path[0] != '/' {
			continue
		}
		if c := parseCgroupPath(path); rank(c) > rank(best) {
			best = c
		}
	}
	return best
}

func rank(c Cgroup) int {
	r := 0
	if c.ContainerID != "" {
		r += 2
	}
	if c.PodUID != "" {
		r++
	}
	return r
}

func parseCgroupPath(path []byte) Cgroup {
	var c Cgroup
	var outerRuntime string
	var outerID []byte // innermost container outside any pod
	inPod, podContainer := false, false
	var prev []byte
	for len(path) > 0 {
		var seg []byte
		seg, path, _ = bytes.Cut(path, []byte{'/'})
		if len(seg) == 0 {
			continue
		}
		if !inPod {
			if uid, qos, ok := podSegment(seg); ok {
				c.PodUID, inPod = uid, true
				if qos != "" {
					c.QoSClass = qos
				}
				prev = seg
				continue
			}
			if qos := qosSegment(seg); qos != "" {
				c.QoSClass = qos
			}
		}
		if rt, id, ok := containerSegment(seg, prev); ok {
			switch {
			case inPod && !podContainer:
				c.Runtime, c.ContainerID, podContainer = rt, string(id), true
			case !inPod:
				outerRuntime, outerID = rt, id
			}
		}
		prev = seg
	}
	if !inPod {
		// QoS segments mean nothing outside a pod.
		c.QoSClass = ""
		if outerID != nil {
			c.Runtime, c.ContainerID = outerRuntime, string(outerID)
		}
		return c
	}
	if c.QoSClass == "" {
		c.QoSClass = QoSGuaranteed // the kubelet gives Guaranteed pods no QoS level of their own
	}
	return c
}

// podSegment recognises a pod's cgroup: pod<uid> (cgroupfs) or
// <prefix>-pod<uid_with_underscores>.slice (systemd), the prefix carrying
// the QoS class (kubepods-besteffort-pod…, kubelet-kubepods-burstable-pod…).
func podSegment(seg []byte) (uid, qos string, ok bool) {
	seg = bytes.TrimSuffix(seg, []byte(".slice"))
	i := bytes.LastIndex(seg, []byte("pod"))
	if i < 0 || (i > 0 && seg[i-1] != '-') {
		return "", "", false
	}
	uid, ok = normalizeUID(seg[i+3:])
	if !ok {
		return "", "", false
	}
	return uid, qosOf(seg[:i]), true
}

// qosSegment recognises the QoS level of the kubelet's hierarchy:
// besteffort or burstable (cgroupfs), kubepods-besteffort.slice (systemd).
func qosSegment(seg []byte) string {
	seg = bytes.TrimSuffix(seg, []byte(".slice"))
	for _, q := range []struct{ name, class string }{{"besteffort", QoSBestEffort}, {"burstable", QoSBurstable}} {
		if string(seg) == q.name || bytes.HasSuffix(seg, []byte("-"+q.name)) {
			return q.class
		}
	}
	return ""
}

// qosOf reads the QoS class from the prefix of a systemd pod slice name.
func qosOf(prefix []byte) string {
	switch {
	case bytes.Contains(prefix, []byte("-besteffort-")):
		return QoSBestEffort
	case bytes.Contains(prefix, []byte("-burstable-")):
		return QoSBurstable
	}
	return ""
}

// containerSegment recognises a container's cgroup: <prefix><id>.scope,
// crio-<id>, or a bare id (runtime docker when its parent is /docker).
func containerSegment(seg, parent []byte) (runtime string, id []byte, ok bool) {
	name := bytes.TrimSuffix(seg, []byte(".scope"))
	for _, p := range scopePrefixes {
		if rest, found := bytes.CutPrefix(name, []byte(p.prefix)); found && isContainerID(rest) {
			return p.runtime, rest, true
		}
	}
	if len(name) == len(seg) && isContainerID(name) {
		if string(parent) == "docker" {
			return RuntimeDocker, name, true
		}
		return "", name, true
	}
	return "", nil, false
}

// isContainerID reports whether b is 64 lower-case hex digits.
func isContainerID(b []byte) bool {
	if len(b) != 64 {
		return false
	}
	for _, c := range b {
		if !isLowerHex(c) {
			return false
		}
	}
	return true
}

func isLowerHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

func allDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// normalizeUID returns a pod UID in its dashed form: underscores (the
// systemd layout's) become dashes. It accepts the 8-4-4-4-12 form of an
// API-server pod and the 32 hex digits of a static pod, in lower case.
func normalizeUID(b []byte) (string, bool) {
	switch len(b) {
	case 32:
		for _, c := range b {
			if !isLowerHex(c) {
				return "", false
			}
		}
		return string(b), true
	case 36:
		for i, c := range b {
			switch i {
			case 8, 13, 18, 23:
				if c != '-' && c != '_' {
					return "", false
				}
			default:
				if !isLowerHex(c) {
					return "", false
				}
			}
		}
		return strings.ReplaceAll(string(b), "_", "-"), true
	}
	return "", false
}
